#version 450
// One inverse-kinematics step (shared/ik_io.h) in one workgroup: the residuals, g, JJᵀ + cI and Jg from the
// backward's Jacobian rows, the m×m solve on one invocation, then the clamped update written to every row.
#extension GL_GOOGLE_include_directive : require
#include "shared/ik_io.h"

layout(local_size_x = IK_WORKGROUP_SIZE) in;
layout(std430, binding = IK_BINDING_JOINTS) readonly buffer Joints { float joints[]; };
layout(std430, binding = IK_BINDING_GRAD_POSE) readonly buffer GradPose { float gradPose[]; };
layout(std430, binding = IK_BINDING_GRAD_TRANSL) readonly buffer GradTransl { float gradTransl[]; };
layout(std430, binding = IK_BINDING_TARGETS) readonly buffer Targets { IkTargetIO targets[]; };
layout(std430, binding = IK_BINDING_POSE) buffer Pose { float pose[]; };
layout(std430, binding = IK_BINDING_TRANSL) buffer Transl { float transl[]; };
layout(std430, binding = IK_BINDING_BOUNDS) readonly buffer Bounds { float bounds[]; };
layout(push_constant) uniform Push { IkPush p; };

shared float sResidual[IK_MAX_ROWS];
shared float sG[IK_MAX_PARAMS];
shared float sA[IK_MAX_ROWS * IK_MAX_ROWS];
shared float sY[IK_MAX_ROWS];

// Row k's weighted Jacobian entry for parameter q (0 where q is not free).
float jacobian(uint k, uint q) {
  const uint P = p.params, poseParams = 3 * p.joints;
  const float d = q < poseParams ? gradPose[k * poseParams + q] : gradTransl[k * 3 + (q - poseParams)];
  return targets[k / 3].weight * bounds[3 * P + q] * d;
}

float parameter(uint q) {
  const uint poseParams = 3 * p.joints;
  return q < poseParams ? pose[q] : transl[q - poseParams];
}

void main() {
  const uint t = gl_LocalInvocationID.x, m = p.rows, P = p.params, poseParams = 3 * p.joints;
  if (t < m) {
    IkTargetIO target = targets[t / 3];
    target.joint = min(target.joint, p.joints - 1);  // memory safety only: IkSolver checks the joints
    const uint axis = t % 3;
    const float goal = axis == 0 ? target.x : axis == 1 ? target.y : target.z;
    sResidual[t] = target.weight * (joints[target.joint * 3 + axis] - goal);
  }
  barrier();
  for (uint q = t; q < P; q += IK_WORKGROUP_SIZE) {
    float g = 0.0;
    for (uint k = 0; k < m; ++k) g += jacobian(k, q) * sResidual[k];
    if (q < poseParams) g += p.prior * bounds[3 * P + q] * (parameter(q) - bounds[q]);
    sG[q] = g;
  }
  barrier();
  const float c = p.prior + p.damping;
  for (uint e = t; e < m * m + m; e += IK_WORKGROUP_SIZE) {
    float s = 0.0;
    if (e < m * m) {  // (JJᵀ + cI)[a][b]
      const uint a = e / m, b = e % m;
      for (uint q = 0; q < P; ++q) s += jacobian(a, q) * jacobian(b, q);
      sA[e] = s + (a == b ? c : 0.0);
    } else {  // (Jg)[a]
      const uint a = e - m * m;
      for (uint q = 0; q < P; ++q) s += jacobian(a, q) * sG[q];
      sY[a] = s;
    }
  }
  barrier();
  if (t == 0) ikCholeskySolve(m, sA, sY);
  barrier();
  for (uint q = t; q < P; q += IK_WORKGROUP_SIZE) {
    float s = sG[q];
    for (uint k = 0; k < m; ++k) s -= jacobian(k, q) * sY[k];
    const float value = clamp(parameter(q) - s / c, bounds[P + q], bounds[2 * P + q]);
    if (bounds[3 * P + q] != 0.0) {
      for (uint k = 0; k < m; ++k) {  // every row: the next forward skins m copies of this body
        if (q < poseParams) pose[k * poseParams + q] = value;
        else transl[k * 3 + (q - poseParams)] = value;
      }
    }
  }
}
