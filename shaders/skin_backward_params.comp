#version 450
// Skinning backward (5): one workgroup per item, after skin_backward_chain and skin_backward_features.
//  1. dL/dfeatures: the features pass's partial sums added in slice order (four interleaved running sums, so four
//     loads are in flight at a time, combined in a fixed order).
//  2. Per joint, dL/dR_j = the chain's share + the pose feature's (features hold R_j − I for j ≥ 1), then Rodrigues'
//     backward to dL/dpose.
//  3. Per shape/expression coefficient k: its feature's gradient + Σ_{j,c} dL/dJ_j[c] · jointDirs[k][j][c] (rest
//     joints J_j = jointTemplate_j + Σ_k coef_k jointDirs[k][j]): 8 invocations per coefficient, each a fixed stride
//     of the terms, then a fixed tree. Every sum in a fixed order: the same bits on every run.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

#define PARTS 8  // invocations per coefficient
layout(local_size_x = 256) in;
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_POSE) readonly buffer Pose { float pose[]; };
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_CHAIN_GRADS) readonly buffer ChainGrads { float chainGrads[]; };
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_PARTIALS) readonly buffer Partials { float partials[]; };  // (slices, B, F)
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_JOINT_DIRS) readonly buffer JointDirs { float jointDirs[]; };
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_GRAD_POSE) writeonly buffer GradPose { float gradPose[]; };
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_GRAD_BETAS) writeonly buffer GradBetas { float gradBetas[]; };
layout(std430, binding = SKIN_BACKWARD_PARAMS_BINDING_GRAD_EXPR) writeonly buffer GradExpr { float gradExpr[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float gradF[SKIN_MAX_FEATURES];
shared float gJrest[SKIN_MAX_JOINTS * 3];
shared float parts[256];

void main() {
  uint b = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, J = p.jointCount, P = p.featureCount, K = p.coefCount;
  uint S = p.shapeCount, E = K - S, F = P + K, B = p.batch;
  for (uint f = tid; f < F; f += 256) {
    float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    uint s = 0;
    for (; s + 4 <= p.slices; s += 4) {
      a0 += partials[(s * B + b) * F + f];
      a1 += partials[((s + 1) * B + b) * F + f];
      a2 += partials[((s + 2) * B + b) * F + f];
      a3 += partials[((s + 3) * B + b) * F + f];
    }
    for (; s < p.slices; ++s) a0 += partials[(s * B + b) * F + f];
    gradF[f] = (a0 + a1) + (a2 + a3);
  }
  barrier();
  if (tid < J) {
    uint j = tid, g = (b * J + j) * 12;
    SkinMat3 gR;
    for (uint e = 0; e < 9; ++e) gR.m[e] = chainGrads[g + e] + (j > 0 ? gradF[(j - 1) * 9 + e] : 0.0);
    for (uint c = 0; c < 3; ++c) gJrest[j * 3 + c] = chainGrads[g + 9 + c];
    uint pb = (b * J + j) * 3;
    SkinVec3 gp = skinRodriguesBackward(SkinVec3(float[3](pose[pb], pose[pb + 1], pose[pb + 2])), gR);
    for (uint c = 0; c < 3; ++c) gradPose[pb + c] = gp.v[c];
  }
  barrier();
  uint terms = J * 3, part = tid % PARTS;
  for (uint k0 = 0; k0 < K; k0 += 256 / PARTS) {
    uint k = k0 + tid / PARTS;
    float acc = 0.0;
    if (k < K)
      for (uint i = part; i < terms; i += PARTS) acc += gJrest[i] * jointDirs[k * terms + i];
    parts[tid] = acc;
    barrier();
    if (part == 0 && k < K) {
      float sum = gradF[P + k] + (((parts[tid] + parts[tid + 1]) + (parts[tid + 2] + parts[tid + 3])) +
                                  ((parts[tid + 4] + parts[tid + 5]) + (parts[tid + 6] + parts[tid + 7])));
      if (k < S) gradBetas[b * S + k] = sum;
      else gradExpr[b * E + (k - S)] = sum;
    }
    barrier();
  }
}
