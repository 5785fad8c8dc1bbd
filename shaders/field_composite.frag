#version 450
// The marched field over the frame: each pixel the box covers once (by the face its ray enters by, or any face
// when the eye is inside the box), the half-resolution colours bilinear, premultiplied, blended over.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"
#include "field_box.glsl"

layout(push_constant) uniform Push { FieldCompositePush p; };
layout(std430, binding = FIELD_MARCH_BINDING_COLOURS) readonly buffer Colours { uvec2 colours[]; };
layout(location = 0) in vec3 world;
layout(location = 0) out vec4 colour;

vec4 texel(ivec2 i) {
  const uvec2 c = colours[uint(i.y) * p.width + uint(i.x)];
  return vec4(unpackHalf2x16(c.x), unpackHalf2x16(c.y));
}

void main() {
  const vec3 toFragment = world - p.camera.xyz;
  const float along = length(toFragment);
  float tEnter, tLeave;
  fieldBoxSlab(p.camera.xyz, toFragment / along, p.lo, p.hi, tEnter, tLeave);
  const bool entryFace = abs(along - tEnter) < abs(along - tLeave);
  if (entryFace == (tEnter <= 0.0)) discard;
  const vec2 g = gl_FragCoord.xy * 0.5 - 0.5;  // half-resolution pixel centres at integers
  const ivec2 i0 = clamp(ivec2(floor(g)), ivec2(0), max(ivec2(p.width, p.height) - 2, ivec2(0)));
  const vec2 t = clamp(g - vec2(i0), 0.0, 1.0);
  colour = mix(mix(texel(i0), texel(i0 + ivec2(1, 0)), t.x), mix(texel(i0 + ivec2(0, 1)), texel(i0 + 1), t.x), t.y);
}
