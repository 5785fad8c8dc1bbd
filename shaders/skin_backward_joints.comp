#version 450
// Skinning backward (2): one workgroup per (part, p.sumItems items b): a part's share of dL/dA_j = Σ_v w_vj g_v
// [p_v; 1]ᵀ over its range of joint j's vertices (CSC), g = dL/dv, p = v_posed; parts of joint J sum g_v over a
// range of vertices (the translation's gradient). skin_backward_chain adds a joint's parts in order. Each item has
// SKIN_REDUCE_GROUP / p.sumItems invocations; each sums a fixed subset in order, then a shared-memory tree: the same
// bits on every run. (Several items per workgroup at large batches: a workgroup's fixed cost, its tree, then serves
// them all. Parts at small batches: a joint's thousands of vertices on one workgroup were the longest path.)
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_REDUCE_GROUP) in;
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_GRAD_V) readonly buffer GradV { float gradV[]; };
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_V_POSED) readonly buffer VPosed { float vPosed[]; };
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_PART_RANGE) readonly buffer PartRange { uint partRange[]; };
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_PART_JOINT) readonly buffer PartJoint { uint partJoint[]; };
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_JOINT_VERTEX) readonly buffer JointVertex { uint jointVertex[]; };
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_JOINT_WEIGHT) readonly buffer JointWeight { float jointWeight[]; };
layout(std430, binding = SKIN_BACKWARD_JOINTS_BINDING_GRAD_PARTS) writeonly buffer GradParts { float gradParts[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float red[12][SKIN_REDUCE_GROUP];

void main() {
  const uint part = gl_WorkGroupID.x, j = partJoint[part], first = partRange[2 * part], end = partRange[2 * part + 1];
  const uint tid = gl_LocalInvocationID.x, J = p.jointCount;
  const uint lanes = SKIN_REDUCE_GROUP / p.sumItems, lane = tid % lanes, b = gl_WorkGroupID.y * p.sumItems + tid / lanes;
  const uint vbase = b * p.vertexCount * 3;
  float acc[12] = float[12](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  if (b < p.batch && j < J) {
    for (uint e = first + lane; e < end; e += lanes) {
      uint v = vbase + jointVertex[e] * 3;
      float w = jointWeight[e];
      vec4 ph = vec4(vPosed[v], vPosed[v + 1], vPosed[v + 2], 1.0);
      for (uint r = 0; r < 3; ++r) {
        float wg = w * gradV[v + r];
        for (uint c = 0; c < 4; ++c) acc[r * 4 + c] += wg * ph[c];
      }
    }
  } else if (b < p.batch) {
    for (uint v = first + lane; v < end; v += lanes)
      for (uint r = 0; r < 3; ++r) acc[r] += gradV[vbase + v * 3 + r];
  }
  for (uint q = 0; q < 12; ++q) red[q][tid] = acc[q];
  barrier();
  for (uint s = lanes / 2; s > 0; s >>= 1) {
    if (lane < s)
      for (uint q = 0; q < 12; ++q) red[q][tid] += red[q][tid + s];
    barrier();
  }
  if (b < p.batch && lane < 12) gradParts[(part * p.batch + b) * 12 + lane] = red[lane][tid - lane];
}
