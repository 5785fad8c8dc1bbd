#version 450
// Skinning backward (5): one workgroup per item. dL/dfeatures is the sum of skin_backward_features' partials, in slice
// order. Per joint, dL/dR_j = the chain's share + the pose feature's (features hold R_j − I for j ≥ 1), then
// Rodrigues' backward to dL/dpose. Per shape/expression coefficient k:
// its feature's gradient + Σ_{j,c} dL/dJ_j[c] · jointDirs[k][j][c] (rest joints J_j = jointTemplate_j +
// Σ_k coef_k jointDirs[k][j]), summed in a fixed order.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_MAX_JOINTS) in;
layout(std430, binding = 0) readonly buffer Pose { float pose[]; };
layout(std430, binding = 1) readonly buffer ChainGrads { float chainGrads[]; };
layout(std430, binding = 2) readonly buffer Partials { float partials[]; };  // (slices, B, F)
layout(std430, binding = 3) readonly buffer JointDirs { float jointDirs[]; };
layout(std430, binding = 4) writeonly buffer GradPose { float gradPose[]; };
layout(std430, binding = 5) writeonly buffer GradBetas { float gradBetas[]; };
layout(std430, binding = 6) writeonly buffer GradExpr { float gradExpr[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float gJrest[SKIN_MAX_JOINTS * 3];

float gradFeature(uint b, uint f) {
  uint F = p.featureCount + p.coefCount;
  float sum = 0.0;
  for (uint s = 0; s < p.slices; ++s) sum += partials[(s * p.batch + b) * F + f];
  return sum;
}

void main() {
  uint b = gl_WorkGroupID.x, j = gl_LocalInvocationID.x, J = p.jointCount, P = p.featureCount, K = p.coefCount;
  uint S = p.shapeCount, E = K - S;
  if (j < J) {
    uint g = (b * J + j) * 12;
    SkinMat3 gR;
    for (uint e = 0; e < 9; ++e) gR.m[e] = chainGrads[g + e] + (j > 0 ? gradFeature(b, (j - 1) * 9 + e) : 0.0);
    for (uint c = 0; c < 3; ++c) gJrest[j * 3 + c] = chainGrads[g + 9 + c];
    uint pb = (b * J + j) * 3;
    SkinVec3 gp = skinRodriguesBackward(SkinVec3(float[3](pose[pb], pose[pb + 1], pose[pb + 2])), gR);
    for (uint c = 0; c < 3; ++c) gradPose[pb + c] = gp.v[c];
  }
  barrier();
  for (uint k = j; k < K; k += SKIN_MAX_JOINTS) {
    float acc = gradFeature(b, P + k);
    for (uint i = 0; i < J * 3; ++i) acc += gJrest[i] * jointDirs[k * J * 3 + i];
    if (k < S) gradBetas[b * S + k] = acc;
    else gradExpr[b * E + (k - S)] = acc;
  }
}
