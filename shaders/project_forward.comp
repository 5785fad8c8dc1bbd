#version 450
// clip[b, n] = M_b · (p, 1), p = points[n] (shared) or points[b, n] (per view). One invocation per output point.
#extension GL_GOOGLE_include_directive : require
#include "shared/project_io.h"
layout(local_size_x = PROJECT_GROUP) in;
layout(std430, binding = PROJECT_BINDING_IN0) readonly buffer Points { float points[]; };
layout(std430, binding = PROJECT_BINDING_IN1) readonly buffer Matrices { mat4 matrices[]; };  // column-major, as glm's and CUDA's
layout(std430, binding = PROJECT_BINDING_OUT) writeonly buffer Clip { vec4 clip[]; };
layout(push_constant) uniform Push { ProjectPush p; };

void main() {
  uint total = p.views * p.points, stride = gl_NumWorkGroups.x * PROJECT_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint view = i / p.points, src = p.pointsPerView != 0u ? i : i - view * p.points;
    clip[i] = matrices[view] * vec4(points[src * 3], points[src * 3 + 1], points[src * 3 + 2], 1.0);
  }
}
