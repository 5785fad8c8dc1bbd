#version 450
// Per item: coefficients, rest joints (from the folded regressor tables), Rodrigues, pose features, the
// kinematic chain, the skinning transforms A_j and the posed joints. Same math as cuda/src/skinning.cu.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_JOINT_GROUP) in;
layout(std430, binding = 0) readonly buffer Pose { float pose[]; };
layout(std430, binding = 1) readonly buffer Betas { float betas[]; };
layout(std430, binding = 2) readonly buffer Expr { float expression[]; };
layout(std430, binding = 3) readonly buffer Transl { float transl[]; };
layout(std430, binding = 4) readonly buffer JointTemplate { float jointTemplate[]; };
layout(std430, binding = 5) readonly buffer JointDirs { float jointDirs[]; };
layout(std430, binding = 6) readonly buffer Parents { int parents[]; };
layout(std430, binding = 7) readonly buffer Order { int order[]; };
layout(std430, binding = 8) writeonly buffer Features { float features[]; };
layout(std430, binding = 9) buffer Transforms { float transforms[]; };
layout(std430, binding = 10) writeonly buffer Joints { float jointsOut[]; };
layout(push_constant) uniform Push { SkinningPush p; };

float R[SKIN_MAX_JOINTS * 9];
float G[SKIN_MAX_JOINTS * 9];
float jr[SKIN_MAX_JOINTS * 3];
float tj[SKIN_MAX_JOINTS * 3];

void main() {
  uint b = gl_GlobalInvocationID.x;
  if (b >= p.batch) return;
  uint F = p.featureCount + p.coefCount, J = p.jointCount, E = p.coefCount - p.shapeCount;
  uint fbase = b * F;
  for (uint k = 0; k < p.coefCount; ++k)
    features[fbase + p.featureCount + k] = k < p.shapeCount ? betas[b * p.shapeCount + k] : expression[b * E + (k - p.shapeCount)];
  for (uint j = 0; j < J; ++j) {
    for (uint c = 0; c < 3; ++c) {
      float acc = jointTemplate[j * 3 + c];
      for (uint k = 0; k < p.coefCount; ++k) {
        float coef = k < p.shapeCount ? betas[b * p.shapeCount + k] : expression[b * E + (k - p.shapeCount)];
        acc += coef * jointDirs[(k * J + j) * 3 + c];
      }
      jr[j * 3 + c] = acc;
    }
    uint pb = (b * J + j) * 3;
    vec3 r = vec3(pose[pb], pose[pb + 1], pose[pb + 2]);
    float angle = length(r + vec3(1e-8));
    vec3 u = r / angle;
    float s = sin(angle), oc = 1.0 - cos(angle), uu = dot(u, u);
    float m[9] = float[9](1.0 + oc * (u.x * u.x - uu), -s * u.z + oc * u.x * u.y, s * u.y + oc * u.x * u.z,
                          s * u.z + oc * u.y * u.x, 1.0 + oc * (u.y * u.y - uu), -s * u.x + oc * u.y * u.z,
                          -s * u.y + oc * u.z * u.x, s * u.x + oc * u.z * u.y, 1.0 + oc * (u.z * u.z - uu));
    for (uint e = 0; e < 9; ++e) {
      R[j * 9 + e] = m[e];
      if (j > 0) features[fbase + (j - 1) * 9 + e] = m[e] - ((e % 4 == 0) ? 1.0 : 0.0);
    }
  }
  for (uint i = 0; i < J; ++i) {
    uint j = uint(order[i]);
    int par = parents[j];
    if (par < 0) {
      for (uint e = 0; e < 9; ++e) G[j * 9 + e] = R[j * 9 + e];
      for (uint c = 0; c < 3; ++c) tj[j * 3 + c] = jr[j * 3 + c];
    } else {
      uint q = uint(par);
      vec3 rel = vec3(jr[j * 3] - jr[q * 3], jr[j * 3 + 1] - jr[q * 3 + 1], jr[j * 3 + 2] - jr[q * 3 + 2]);
      for (uint r0 = 0; r0 < 3; ++r0) {
        for (uint c = 0; c < 3; ++c)
          G[j * 9 + r0 * 3 + c] = G[q * 9 + r0 * 3] * R[j * 9 + c] + G[q * 9 + r0 * 3 + 1] * R[j * 9 + 3 + c] +
                                  G[q * 9 + r0 * 3 + 2] * R[j * 9 + 6 + c];
        tj[j * 3 + r0] = tj[q * 3 + r0] + G[q * 9 + r0 * 3] * rel.x + G[q * 9 + r0 * 3 + 1] * rel.y + G[q * 9 + r0 * 3 + 2] * rel.z;
      }
    }
    uint abase = (b * J + j) * 12;
    for (uint r0 = 0; r0 < 3; ++r0) {
      for (uint c = 0; c < 3; ++c) transforms[abase + r0 * 4 + c] = G[j * 9 + r0 * 3 + c];
      transforms[abase + r0 * 4 + 3] = tj[j * 3 + r0] - (G[j * 9 + r0 * 3] * jr[j * 3] + G[j * 9 + r0 * 3 + 1] * jr[j * 3 + 1] +
                                                         G[j * 9 + r0 * 3 + 2] * jr[j * 3 + 2]);
      jointsOut[(b * J + j) * 3 + r0] = tj[j * 3 + r0] + transl[b * 3 + r0];
    }
  }
}
