#version 450
// gradPoints[n] = Σ_b (M_bᵀ · gradClip[b, n]).xyz for shared points (each invocation sums its point's views in view
// order: one writer per value, no atomics, deterministic); gradPoints[b, n] = (M_bᵀ · gradClip[b, n]).xyz per view.
#extension GL_GOOGLE_include_directive : require
#include "shared/project_io.h"
layout(local_size_x = PROJECT_GROUP) in;
layout(std430, binding = PROJECT_BINDING_IN0) readonly buffer GradClip { vec4 gradClip[]; };
layout(std430, binding = PROJECT_BINDING_IN1) readonly buffer Matrices { mat4 matrices[]; };
layout(std430, binding = PROJECT_BINDING_OUT) writeonly buffer GradPoints { float gradPoints[]; };
layout(push_constant) uniform Push { ProjectPush p; };

void main() {
  uint outputs = p.pointsPerView != 0u ? p.views * p.points : p.points, stride = gl_NumWorkGroups.x * PROJECT_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < outputs; i += stride) {
    vec3 g = vec3(0.0);
    if (p.pointsPerView != 0u) {
      g = (transpose(matrices[i / p.points]) * gradClip[i]).xyz;
    } else {
      for (uint view = 0u; view < p.views; ++view) g += (transpose(matrices[view]) * gradClip[view * p.points + i]).xyz;
    }
    gradPoints[i * 3] = g.x, gradPoints[i * 3 + 1] = g.y, gradPoints[i * 3 + 2] = g.z;
  }
}
