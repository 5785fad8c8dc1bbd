#version 450
// The field's ray march (shared/render_io.h): per half-resolution pixel, emission–absorption along the eye's ray
// through the box. At each step (one per cell crossed) the value f, trilinear between cell centres, absorbs
// density·f per metre and emits a heat colour of f; the result is premultiplied (colour, 1 − transmittance).
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"
#include "field_box.glsl"

layout(local_size_x = FIELD_MARCH_GROUP, local_size_y = FIELD_MARCH_GROUP) in;
layout(push_constant) uniform Push { FieldMarchPush p; };
layout(std430, binding = FIELD_MARCH_BINDING_VALUES) readonly buffer Values { float values[]; };
layout(std430, binding = FIELD_MARCH_BINDING_COLOURS) writeonly buffer Colours { uvec2 colours[]; };

float value(ivec3 i) { return values[(uint(i.z) * p.size + uint(i.y)) * p.size + uint(i.x)]; }

float sampleField(vec3 x, vec3 cell) {
  const vec3 g = (x - p.lo) / cell - 0.5;
  const ivec3 i0 = clamp(ivec3(floor(g)), ivec3(0), ivec3(int(p.size) - 2));
  const vec3 t = clamp(g - vec3(i0), 0.0, 1.0);
  float v = 0.0;
  for (int c = 0; c < 8; ++c) {
    const ivec3 o = ivec3(c & 1, (c >> 1) & 1, (c >> 2) & 1);
    const vec3 w = mix(1.0 - t, t, vec3(o));
    v += w.x * w.y * w.z * value(i0 + o);
  }
  return v;
}

vec3 heat(float f) { return clamp(vec3(1.6 * f, 1.6 * f - 0.45, 3.0 * f - 2.2), 0.0, 1.0) + vec3(0.08, 0.02, 0.0); }

void main() {
  const uvec2 pixel = p.rect.xy + gl_GlobalInvocationID.xy;
  if (pixel.x >= p.rect.z || pixel.y >= p.rect.w) return;
  // The half-resolution pixel's centre in the frame's clip space, unprojected at the near and far planes.
  const uvec2 frame = uvec2(p.frame & 0xFFFFu, p.frame >> 16);
  const vec2 ndc = (2.0 * vec2(pixel) + 1.0) / vec2(frame) * 2.0 - 1.0;
  const vec4 near = p.inverseViewProj * vec4(ndc, 0.0, 1.0), far = p.inverseViewProj * vec4(ndc, 1.0, 1.0);
  const vec3 eye = p.camera.xyz;
  const vec3 d = normalize(far.xyz / far.w - near.xyz / near.w);
  float tEnter, tLeave;
  fieldBoxSlab(eye, d, p.lo, p.hi, tEnter, tLeave);
  vec3 sum = vec3(0.0);
  float transmittance = 1.0;
  const float t0 = max(tEnter, 0.0);
  if (tLeave > t0) {
    const vec3 cell = (p.hi - p.lo) / float(p.size);
    const int steps = clamp(int(ceil(length((tLeave - t0) * d / cell))), 1, 4 * int(p.size));
    const float dt = (tLeave - t0) / float(steps);
    for (int s = 0; s < steps && transmittance > 0.01; ++s) {
      const float f = sampleField(eye + (t0 + (float(s) + 0.5) * dt) * d, cell);
      if (f <= 0.0) continue;
      const float alpha = 1.0 - exp(-p.camera.w * f * dt);
      sum += transmittance * alpha * heat(f);
      transmittance *= 1.0 - alpha;
    }
  }
  colours[pixel.y * ((frame.x + 1u) / 2u) + pixel.x] = uvec2(packHalf2x16(sum.rg), packHalf2x16(vec2(sum.b, 1.0 - transmittance)));
}
