#version 450
// Skinning backward (3): one workgroup per item, one invocation per joint: the kinematic chain in reverse, one tree
// level at a time from the deepest (a joint's children are final by then). Forward (skin_joints.comp):
//   G_root = R_root, T_root = J_root;  G_j = G_p R_j,  T_j = T_p + G_p (J_j − J_p);  A_j = [G_j | T_j − G_j J_j];
//   posed joint j = T_j + transl.
// In: dL/dA_j as its parts' sums (skin_backward_joints), added here in order. Out per joint (chainGrads): the
// chain's share of dL/dR_j (9) and dL/dJ_j (3), J_j the rest joint; and dL/dtransl = Σ dL/dv + Σ dL/djoint.
// Children are summed in increasing index: the same bits on every run.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_MAX_JOINTS) in;
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_SAVED) readonly buffer Saved { float saved[]; };
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_GRAD_PARTS) readonly buffer GradParts { float gradParts[]; };
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_JOINT_PART_START) readonly buffer JointPartStart { uint jointPartStart[]; };
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_GRAD_JOINTS) readonly buffer GradJoints { float gradJoints[]; };
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_PARENTS) readonly buffer Parents { int parents[]; };
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_CHAIN_GRADS) writeonly buffer ChainGrads { float chainGrads[]; };
layout(std430, binding = SKIN_BACKWARD_CHAIN_BINDING_GRAD_TRANSL) writeonly buffer GradTransl { float gradTransl[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared float sv[SKIN_MAX_JOINTS * SKIN_SAVED];  // per joint: R (9), G (9), rest joint (3)
shared float gG[SKIN_MAX_JOINTS * 9], gT[SKIN_MAX_JOINTS * 3];
shared int sParent[SKIN_MAX_JOINTS];
shared uint sChildren[SKIN_MAX_JOINTS][SKIN_MAX_JOINTS / 32];  // bit c of word c / 32: joint c is a child
shared int sMaxDepth;

void main() {
  uint b = gl_WorkGroupID.x, j = gl_LocalInvocationID.x, J = p.jointCount, B = p.batch;
  if (j < 3) {  // the translation: its parts (joint J's), then the posed joints' gradient; four loads at a time
    float sum = 0.0;
    const uint first = jointPartStart[J], end = jointPartStart[J + 1], joints = p.jointGrads != 0u ? J : 0u;
    for (uint q = first; q < end; q += 4) {
      float x[4];
      for (uint i = 0; i < 4; ++i) x[i] = q + i < end ? gradParts[((q + i) * B + b) * 12 + j] : 0.0;
      for (uint i = 0; i < 4; ++i) sum += x[i];
    }
    for (uint q = 0; q < joints; q += 4) {
      float x[4];
      for (uint i = 0; i < 4; ++i) x[i] = q + i < joints ? gradJoints[(b * J + q + i) * 3 + j] : 0.0;
      for (uint i = 0; i < 4; ++i) sum += x[i];
    }
    gradTransl[b * 3 + j] = sum;
  }
  for (uint i = j; i < J * SKIN_SAVED; i += SKIN_MAX_JOINTS) sv[i] = saved[b * J * SKIN_SAVED + i];
  if (j == 0) sMaxDepth = 0;
  if (j < J) sParent[j] = parents[j];
  for (uint w = 0; w < SKIN_MAX_JOINTS / 32; ++w) sChildren[j][w] = 0u;
  barrier();
  if (j < J && sParent[j] >= 0) atomicOr(sChildren[sParent[j]][j / 32], 1u << (j % 32));
  float gR[9] = float[9](0, 0, 0, 0, 0, 0, 0, 0, 0);
  vec3 gJ = vec3(0.0);  // dL/d rest joint j
  int depth = 0;
  if (j < J) {
    // A_j's translation column is T_j − G_j J_j: dL/dT_j = its gradient (+ the posed joint's), dL/dG_j gets
    // −dL/dt ⊗ J_j, dL/dJ_j gets −G_jᵀ dL/dt.
    float gA[12] = float[12](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);  // dL/dA_j: its parts in order, two at a time
    for (uint q = jointPartStart[j], end = jointPartStart[j + 1]; q < end; q += 2) {
      float x[12], y[12];
      for (uint e = 0; e < 12; ++e) {
        x[e] = gradParts[(q * B + b) * 12 + e];
        y[e] = q + 1 < end ? gradParts[((q + 1) * B + b) * 12 + e] : 0.0;
      }
      for (uint e = 0; e < 12; ++e) gA[e] += x[e], gA[e] += y[e];
    }
    uint gs = j * SKIN_SAVED;
    for (uint r = 0; r < 3; ++r) {
      float t = gA[r * 4 + 3];
      gT[j * 3 + r] = t + (p.jointGrads != 0u ? gradJoints[(b * J + j) * 3 + r] : 0.0);
      for (uint c = 0; c < 3; ++c) {
        gG[j * 9 + r * 3 + c] = gA[r * 4 + c] - t * sv[gs + 18 + c];
        gJ[c] -= sv[gs + 9 + r * 3 + c] * t;
      }
    }
    for (int q = sParent[j]; q >= 0 && depth < int(J); q = sParent[q]) ++depth;  // a validated forest; capped anyway
    atomicMax(sMaxDepth, depth);
  }
  barrier();
  for (int level = sMaxDepth; level >= 0; --level) {
    if (j < J && depth == level) {
      uint gs = j * SKIN_SAVED;
      for (uint word = 0; word < SKIN_MAX_JOINTS / 32; ++word)
        for (uint kids = sChildren[j][word]; kids != 0u; kids &= kids - 1u) {  // children, in increasing index
          uint c = uint(findLSB(kids)) + 32 * word, cs = c * SKIN_SAVED;
          vec3 rel = vec3(sv[cs + 18] - sv[gs + 18], sv[cs + 19] - sv[gs + 19], sv[cs + 20] - sv[gs + 20]);
          for (uint r = 0; r < 3; ++r) {
            for (uint q = 0; q < 3; ++q)  // G_c = G_j R_c: dL/dG_j += dL/dG_c R_cᵀ; T_c: dL/dG_j += dL/dT_c relᵀ
              gG[j * 9 + r * 3 + q] += gG[c * 9 + r * 3] * sv[cs + q * 3] + gG[c * 9 + r * 3 + 1] * sv[cs + q * 3 + 1] +
                                       gG[c * 9 + r * 3 + 2] * sv[cs + q * 3 + 2] + gT[c * 3 + r] * rel[q];
            gT[j * 3 + r] += gT[c * 3 + r];
            gJ[r] -= sv[gs + 9 + r] * gT[c * 3] + sv[gs + 12 + r] * gT[c * 3 + 1] + sv[gs + 15 + r] * gT[c * 3 + 2];
          }
        }
      int par = sParent[j];
      if (par < 0) {  // G_root = R_root, T_root = J_root
        for (uint e = 0; e < 9; ++e) gR[e] += gG[j * 9 + e];
        for (uint c = 0; c < 3; ++c) gJ[c] += gT[j * 3 + c];
      } else {  // G_j = G_p R_j: dL/dR_j = G_pᵀ dL/dG_j; T_j: dL/dJ_j += G_pᵀ dL/dT_j
        uint ps = uint(par) * SKIN_SAVED + 9;
        for (uint r = 0; r < 3; ++r) {
          for (uint c = 0; c < 3; ++c)
            gR[r * 3 + c] += sv[ps + r] * gG[j * 9 + c] + sv[ps + 3 + r] * gG[j * 9 + 3 + c] + sv[ps + 6 + r] * gG[j * 9 + 6 + c];
          gJ[r] += sv[ps + r] * gT[j * 3] + sv[ps + 3 + r] * gT[j * 3 + 1] + sv[ps + 6 + r] * gT[j * 3 + 2];
        }
      }
    }
    barrier();
  }
  if (j < J) {
    uint o = (b * J + j) * 12;
    for (uint e = 0; e < 9; ++e) chainGrads[o + e] = gR[e];
    for (uint c = 0; c < 3; ++c) chainGrads[o + 9 + c] = gJ[c];
  }
}
