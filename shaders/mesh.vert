#version 450
// Avatars read their skinned positions straight from the skinning output (B × V × 3 floats), one instance per
// avatar; no vertex attributes, so the same buffer serves Vulkan compute, CUDA interop and CPU uploads.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"

layout(std430, binding = 0) readonly buffer Positions { float positions[]; };
layout(location = 0) out vec3 worldPos;

const vec2 kGround[6] = vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1), vec2(-1, -1), vec2(1, 1), vec2(-1, 1));

void main() {
  if (pc.mode == RENDER_MODE_GROUND) {
    vec2 q = kGround[gl_VertexIndex] * 400.0;  // past the far fade: no visible edge
    worldPos = vec3(q.x, pc.floorY, q.y);
  } else {
    uint base = (uint(gl_InstanceIndex) * pc.vertexCount + uint(gl_VertexIndex)) * 3u;
    worldPos = vec3(positions[base], positions[base + 1], positions[base + 2]);
  }
  gl_Position = pc.viewProj * vec4(worldPos, 1.0);
  gl_PointSize = 6.0;  // joint markers; ignored for triangles and lines
}
