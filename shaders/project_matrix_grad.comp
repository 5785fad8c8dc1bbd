#version 450
// gradMatrices[b] (column-major 4×4) = Σ_n gradClip[b, n] ⊗ (p, 1): one workgroup per view; each invocation sums
// its points n ≡ invocation (mod PROJECT_MATRIX_GROUP) in order, then a tree over the invocations in shared memory
// (a fixed order: the same bits on every run, no atomics).
#extension GL_GOOGLE_include_directive : require
#include "shared/project_io.h"
layout(local_size_x = PROJECT_MATRIX_GROUP) in;
layout(std430, binding = PROJECT_BINDING_IN0) readonly buffer Points { float points[]; };
layout(std430, binding = PROJECT_BINDING_IN1) readonly buffer GradClip { vec4 gradClip[]; };
layout(std430, binding = PROJECT_BINDING_OUT) writeonly buffer GradMatrices { mat4 gradMatrices[]; };
layout(push_constant) uniform Push { ProjectPush p; };

shared mat4 partial[PROJECT_MATRIX_GROUP];

void main() {
  const uint view = gl_WorkGroupID.x, lane = gl_LocalInvocationIndex;
  mat4 sum = mat4(0.0);
  for (uint n = lane; n < p.points; n += PROJECT_MATRIX_GROUP) {
    uint src = p.pointsPerView != 0u ? view * p.points + n : n;
    vec4 g = gradClip[view * p.points + n];
    // column c of the outer product: g · ph[c]
    sum[0] += g * points[src * 3];
    sum[1] += g * points[src * 3 + 1];
    sum[2] += g * points[src * 3 + 2];
    sum[3] += g;
  }
  partial[lane] = sum;
  barrier();
  for (uint span = PROJECT_MATRIX_GROUP / 2; span > 0u; span /= 2u) {
    if (lane < span) partial[lane] += partial[lane + span];
    barrier();
  }
  if (lane == 0u) gradMatrices[view] = partial[0];
}
