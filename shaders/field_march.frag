#version 450
// Emission–absorption along the eye's ray through the field's box: at each step (one per cell crossed) the value f
// (trilinear between cell centres) absorbs density·f per metre and emits a heat colour of f. The result is
// premultiplied (colour, 1 − transmittance), blended over the frame.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"

layout(push_constant) uniform Push { FieldMarchPush p; };
layout(std430, binding = FIELD_MARCH_BINDING_VALUES) readonly buffer Values { float values[]; };
layout(location = 0) in vec3 world;
layout(location = 0) out vec4 colour;

float value(ivec3 i) { return values[(uint(i.z) * p.size + uint(i.y)) * p.size + uint(i.x)]; }

float sampleField(vec3 x) {
  const vec3 cell = (p.hi.xyz - p.lo.xyz) / float(p.size);
  const vec3 g = (x - p.lo.xyz) / cell - 0.5;
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
  const vec3 eye = p.camera.xyz;
  const vec3 toFragment = world - eye;
  const float along = length(toFragment);
  const vec3 d = toFragment / along;
  const vec3 inv = 1.0 / d;  // ±inf on an axis the ray runs along: the slab test still holds
  const vec3 a = (p.lo.xyz - eye) * inv, b = (p.hi.xyz - eye) * inv;
  const float tEnter = max(max(min(a.x, b.x), min(a.y, b.y)), min(a.z, b.z));
  const float tLeave = min(min(max(a.x, b.x), max(a.y, b.y)), max(a.z, b.z));
  // Each pixel is marched once: from the face it enters by, or from the eye when the eye is in the box.
  const bool entryFace = abs(along - tEnter) < abs(along - tLeave);
  if (entryFace == (tEnter <= 0.0)) discard;
  const float t0 = max(tEnter, 0.0);
  const vec3 cell = (p.hi.xyz - p.lo.xyz) / float(p.size);
  const int steps = clamp(int(ceil(length((tLeave - t0) * d / cell))), 1, 4 * int(p.size));
  const float dt = (tLeave - t0) / float(steps);
  vec3 sum = vec3(0.0);
  float transmittance = 1.0;
  for (int s = 0; s < steps && transmittance > 0.01; ++s) {
    const float f = sampleField(eye + (t0 + (float(s) + 0.5) * dt) * d);
    if (f <= 0.0) continue;
    const float alpha = 1.0 - exp(-p.lo.w * f * dt);
    sum += transmittance * alpha * heat(f);
    transmittance *= 1.0 - alpha;
  }
  colour = vec4(sum, 1.0 - transmittance);
}
