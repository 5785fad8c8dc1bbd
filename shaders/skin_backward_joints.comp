#version 450
// Skinning backward (2): one workgroup per (joint j, item b): dL/dA_j = Σ_v w_vj g_v [p_v; 1]ᵀ over the joint's
// vertices (CSC), g = dL/dv, p = v_posed. Workgroup j = J sums the translation's gradient, Σ_v g_v + Σ_j dL/djoint_j.
// Each invocation sums a fixed subset in order, then a shared-memory tree: the same bits on every run.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_REDUCE_GROUP) in;
layout(std430, binding = 0) readonly buffer GradV { float gradV[]; };
layout(std430, binding = 1) readonly buffer VPosed { float vPosed[]; };
layout(std430, binding = 2) readonly buffer JointStart { uint jointStart[]; };
layout(std430, binding = 3) readonly buffer JointVertex { uint jointVertex[]; };
layout(std430, binding = 4) readonly buffer JointWeight { float jointWeight[]; };
layout(std430, binding = 5) readonly buffer GradJoints { float gradJoints[]; };
layout(std430, binding = 6) writeonly buffer GradA { float gradA[]; };
layout(std430, binding = 7) writeonly buffer GradTransl { float gradTransl[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float red[12][SKIN_REDUCE_GROUP];

void main() {
  uint j = gl_WorkGroupID.x, b = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x, J = p.jointCount;
  uint vbase = b * p.vertexCount * 3;
  float acc[12] = float[12](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  if (j < J) {
    for (uint e = jointStart[j] + tid; e < jointStart[j + 1]; e += SKIN_REDUCE_GROUP) {
      uint v = vbase + jointVertex[e] * 3;
      float w = jointWeight[e];
      vec4 ph = vec4(vPosed[v], vPosed[v + 1], vPosed[v + 2], 1.0);
      for (uint r = 0; r < 3; ++r) {
        float wg = w * gradV[v + r];
        for (uint c = 0; c < 4; ++c) acc[r * 4 + c] += wg * ph[c];
      }
    }
  } else {
    for (uint v = tid; v < p.vertexCount; v += SKIN_REDUCE_GROUP)
      for (uint r = 0; r < 3; ++r) acc[r] += gradV[vbase + v * 3 + r];
  }
  for (uint q = 0; q < 12; ++q) red[q][tid] = acc[q];
  barrier();
  for (uint s = SKIN_REDUCE_GROUP / 2; s > 0; s >>= 1) {
    if (tid < s)
      for (uint q = 0; q < 12; ++q) red[q][tid] += red[q][tid + s];
    barrier();
  }
  if (j < J) {
    if (tid < 12) gradA[(b * J + j) * 12 + tid] = red[tid][0];
  } else if (tid < 3) {
    float sum = red[tid][0];
    if (p.jointGrads != 0u)
      for (uint q = 0; q < J; ++q) sum += gradJoints[(b * J + q) * 3 + tid];
    gradTransl[b * 3 + tid] = sum;
  }
}
