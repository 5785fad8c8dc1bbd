#version 450
// Skinning backward (2): one workgroup per (joint j, p.sumItems items b): dL/dA_j = Σ_v w_vj g_v [p_v; 1]ᵀ over the
// joint's vertices (CSC), g = dL/dv, p = v_posed. Workgroup j = J sums the translation's gradient,
// Σ_v g_v + Σ_j dL/djoint_j. Each item has SKIN_REDUCE_GROUP / p.sumItems invocations; each sums a fixed subset in
// order, then a shared-memory tree: the same bits on every run. (Several items per workgroup at large batches: a
// workgroup's fixed cost, its tree, then serves them all.)
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
  const uint j = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, J = p.jointCount;
  const uint lanes = SKIN_REDUCE_GROUP / p.sumItems, lane = tid % lanes, b = gl_WorkGroupID.y * p.sumItems + tid / lanes;
  const uint vbase = b * p.vertexCount * 3;
  float acc[12] = float[12](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  if (b < p.batch && j < J) {
    for (uint e = jointStart[j] + lane; e < jointStart[j + 1]; e += lanes) {
      uint v = vbase + jointVertex[e] * 3;
      float w = jointWeight[e];
      vec4 ph = vec4(vPosed[v], vPosed[v + 1], vPosed[v + 2], 1.0);
      for (uint r = 0; r < 3; ++r) {
        float wg = w * gradV[v + r];
        for (uint c = 0; c < 4; ++c) acc[r * 4 + c] += wg * ph[c];
      }
    }
  } else if (b < p.batch) {
    for (uint v = lane; v < p.vertexCount; v += lanes)
      for (uint r = 0; r < 3; ++r) acc[r] += gradV[vbase + v * 3 + r];
  }
  for (uint q = 0; q < 12; ++q) red[q][tid] = acc[q];
  barrier();
  for (uint s = lanes / 2; s > 0; s >>= 1) {
    if (lane < s)
      for (uint q = 0; q < 12; ++q) red[q][tid] += red[q][tid + s];
    barrier();
  }
  if (b >= p.batch) return;
  if (j < J) {
    if (lane < 12) gradA[(b * J + j) * 12 + lane] = red[lane][tid - lane];
  } else if (lane < 3) {
    float sum = red[lane][tid - lane];
    if (p.jointGrads != 0u)
      for (uint q = 0; q < J; ++q) sum += gradJoints[(b * J + q) * 3 + lane];
    gradTransl[b * 3 + lane] = sum;
  }
}
