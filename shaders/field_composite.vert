#version 450
// The field's box as 12 triangles (both sides drawn): the fragment shader keeps the face the ray enters by.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"

layout(push_constant) uniform Push { FieldCompositePush p; };
layout(location = 0) out vec3 world;

// Corners (bit 0: x, bit 1: y, bit 2: z at the box's high side) of each face's two triangles.
const uint kCorners[36] = uint[](0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3,   // x low, x high
                                 0, 4, 5, 0, 5, 1, 2, 3, 7, 2, 7, 6,   // y low, y high
                                 0, 1, 3, 0, 3, 2, 4, 6, 7, 4, 7, 5);  // z low, z high

void main() {
  const uint c = kCorners[gl_VertexIndex];
  world = mix(p.lo, p.hi, vec3(uvec3(c, c >> 1, c >> 2) & 1u));
  gl_Position = p.viewProj * vec4(world, 1.0);
}
