#version 450
// Per item (one workgroup, one invocation per joint): coefficients, rest joints (from the folded regressor tables),
// Rodrigues, the kinematic chain one tree level at a time (the joints of a level are independent),
// the skinning transforms A_j and the posed joints, and what the backward needs of the chain (saved). Same math as
// cuda/src/skinning_forward.h. The blend product computes its pose features itself (skin_feature.glsl, whose rotation and
// coefficient helpers this shares), so it runs beside this.
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_io.h"
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_MAX_JOINTS) in;
layout(std430, binding = SKIN_JOINTS_BINDING_POSE) readonly buffer Pose { float pose[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_BETAS) readonly buffer Betas { float betas[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_EXPR) readonly buffer Expr { float expression[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_TRANSL) readonly buffer Transl { float transl[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_JOINT_TEMPLATE) readonly buffer JointTemplate { float jointTemplate[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_JOINT_DIRS) readonly buffer JointDirs { float jointDirs[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_TRANSFORMS) buffer Transforms { float transforms[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_JOINTS) writeonly buffer Joints { float jointsOut[]; };
layout(std430, binding = SKIN_JOINTS_BINDING_SAVED) writeonly buffer Saved { float saved[]; };
layout(push_constant) uniform Push { SkinningPush p; };

#include "skin_feature.glsl"

shared float sR[SKIN_MAX_JOINTS * 9], sG[SKIN_MAX_JOINTS * 9], sJ[SKIN_MAX_JOINTS * 3], sT[SKIN_MAX_JOINTS * 3];
shared float sCoef[SKIN_MAX_COEFS];
shared int sParent[SKIN_MAX_JOINTS], sDepth[SKIN_MAX_JOINTS];
shared int sMaxDepth;

void main() {
  uint b = gl_WorkGroupID.x, j = gl_LocalInvocationID.x;
  uint J = p.jointCount, K = p.coefCount;
  if (j == 0) sMaxDepth = 0;
  if (j < J) sParent[j] = parents[j];
  for (uint k = j; k < K; k += SKIN_MAX_JOINTS) sCoef[k] = skinCoefficient(b, k);
  barrier();
  if (j < J) {
    for (uint c = 0; c < 3; ++c) {
      float acc = jointTemplate[j * 3 + c];
      for (uint k = 0; k < K; ++k) acc += sCoef[k] * jointDirs[(k * J + j) * 3 + c];
      sJ[j * 3 + c] = acc;
    }
    SkinMat3 R = skinPoseRotation(b, j);
    for (uint e = 0; e < 9; ++e) sR[j * 9 + e] = R.m[e];
    int depth = 0;  // the model is a validated forest; the cap only guards the loop
    for (int q = sParent[j]; q >= 0 && depth < int(J); q = sParent[q]) ++depth;
    sDepth[j] = depth;
    atomicMax(sMaxDepth, depth);
  }
  barrier();
  for (int level = 0; level <= sMaxDepth; ++level) {
    if (j < J && sDepth[j] == level) {
      int par = sParent[j];
      if (par < 0) {
        for (uint e = 0; e < 9; ++e) sG[j * 9 + e] = sR[j * 9 + e];
        for (uint c = 0; c < 3; ++c) sT[j * 3 + c] = sJ[j * 3 + c];
      } else {
        uint q = uint(par);
        float gp[9], tp[3], r[9], rel[3], g[9], t[3];  // joint propagation's product (shared/joint_propagation_io.h)
        for (uint e = 0; e < 9; ++e) gp[e] = sG[q * 9 + e], r[e] = sR[j * 9 + e];
        for (uint c = 0; c < 3; ++c) tp[c] = sT[q * 3 + c], rel[c] = sJ[j * 3 + c] - sJ[q * 3 + c];
        jointChainStep(gp, tp, r, rel, g, t);
        for (uint e = 0; e < 9; ++e) sG[j * 9 + e] = g[e];
        for (uint c = 0; c < 3; ++c) sT[j * 3 + c] = t[c];
      }
    }
    barrier();
  }
  if (j < J) {
    uint abase = (b * J + j) * 12;
    for (uint r0 = 0; r0 < 3; ++r0) {
      for (uint c = 0; c < 3; ++c) transforms[abase + r0 * 4 + c] = sG[j * 9 + r0 * 3 + c];
      transforms[abase + r0 * 4 + 3] = sT[j * 3 + r0] - (sG[j * 9 + r0 * 3] * sJ[j * 3] + sG[j * 9 + r0 * 3 + 1] * sJ[j * 3 + 1] +
                                                         sG[j * 9 + r0 * 3 + 2] * sJ[j * 3 + 2]);
      jointsOut[(b * J + j) * 3 + r0] = sT[j * 3 + r0] + transl[b * 3 + r0];
    }
    uint sbase = (b * J + j) * SKIN_SAVED;
    for (uint e = 0; e < 9; ++e) saved[sbase + e] = sR[j * 9 + e], saved[sbase + 9 + e] = sG[j * 9 + e];
    for (uint c = 0; c < 3; ++c) saved[sbase + 18 + c] = sJ[j * 3 + c];
  }
}
