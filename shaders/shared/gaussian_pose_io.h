// Posing Gaussians with joints (GLSL, CUDA, C++): Gaussian i, attached to joint j_i, becomes
//     μ' = A μ + a,   L' L'ᵀ = (A L)(A L)ᵀ,   [A | a] = post × transforms[j_i],
// where L' is lower triangular with a positive diagonal: the LQ factor of A·L (A·L = L'·Q, Q orthogonal), found by
// Gram–Schmidt over A·L's rows (more accurate than a Cholesky factorisation of (A L)(A L)ᵀ, whose condition number is
// the square of A·L's). L' is written in the field's parametrisation (gaussian_io.h): anisotropic, log-diagonal.
#ifndef ARMATURE_GAUSSIAN_POSE_IO_H
#define ARMATURE_GAUSSIAN_POSE_IO_H
#include "common_io.h"

#define GAUSSIAN_POSE_THREADS 128
#define GAUSSIAN_POSE_BINDING_TRANSFORMS 0  // float (J,12): 3×4 row-major
#define GAUSSIAN_POSE_BINDING_JOINTS 1      // int (N): the joint each Gaussian is attached to
#define GAUSSIAN_POSE_BINDING_MEANS 2       // float (N,3)
#define GAUSSIAN_POSE_BINDING_CHOLESKY 3    // float (N,6)
#define GAUSSIAN_POSE_BINDING_OUT_MEANS 4   // float (N,3)
#define GAUSSIAN_POSE_BINDING_OUT_CHOLESKY 5  // float (N,6)
#define GAUSSIAN_POSE_BINDINGS 6

ARM_SHARED_STRUCT(GaussianPosePush) {
  float post[12];  // 3×4 row-major, applied after the joint's transform
  uint gaussians;
  uint joints;
};

// [A | a] = post × t (3×4 each, the last row 0 0 0 1 implied), into m.
ARM_FN void gaussianPoseCompose(float post[12], float t[12], ARM_OUT(float, m, 12)) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      m[r * 4 + c] = post[r * 4] * t[c] + post[r * 4 + 1] * t[4 + c] + post[r * 4 + 2] * t[8 + c] +
                     (c == 3 ? post[r * 4 + 3] : 0.0f);
}

// μ' and L's parameters for one Gaussian under [A | a] (m); p: (log l00, l10, log l11, l20, l21, log l22).
ARM_FN void gaussianPoseOne(float m[12], float mean[3], float p[6], ARM_OUT(float, outMean, 3),
                            ARM_OUT(float, outP, 6)) {
  for (int r = 0; r < 3; ++r)
    outMean[r] = m[r * 4] * mean[0] + m[r * 4 + 1] * mean[1] + m[r * 4 + 2] * mean[2] + m[r * 4 + 3];
  const float l00 = exp(p[0]), l10 = p[1], l11 = exp(p[2]), l20 = p[3], l21 = p[4], l22 = exp(p[5]);
  float rows[9];  // A·L
  for (int r = 0; r < 3; ++r) {
    const float a0 = m[r * 4], a1 = m[r * 4 + 1], a2 = m[r * 4 + 2];
    rows[r * 3] = a0 * l00 + a1 * l10 + a2 * l20;
    rows[r * 3 + 1] = a1 * l11 + a2 * l21;
    rows[r * 3 + 2] = a2 * l22;
  }
  // Row 0: l'00 q0. Row 1: l'10 q0 + l'11 q1. Row 2: l'20 q0 + l'21 q1 + l'22 q2 (modified Gram–Schmidt).
  // + 1e-30: a singular A gives a flat Gaussian (its log-diagonal clamped by the field), not a division by zero.
  const float n0 = sqrt(rows[0] * rows[0] + rows[1] * rows[1] + rows[2] * rows[2]) + 1e-30f;
  float q0[3] = {rows[0] / n0, rows[1] / n0, rows[2] / n0};
  const float d10 = rows[3] * q0[0] + rows[4] * q0[1] + rows[5] * q0[2];
  float r1[3] = {rows[3] - d10 * q0[0], rows[4] - d10 * q0[1], rows[5] - d10 * q0[2]};
  const float n1 = sqrt(r1[0] * r1[0] + r1[1] * r1[1] + r1[2] * r1[2]) + 1e-30f;
  float q1[3] = {r1[0] / n1, r1[1] / n1, r1[2] / n1};
  const float d20 = rows[6] * q0[0] + rows[7] * q0[1] + rows[8] * q0[2];
  float s2[3] = {rows[6] - d20 * q0[0], rows[7] - d20 * q0[1], rows[8] - d20 * q0[2]};
  const float d21 = s2[0] * q1[0] + s2[1] * q1[1] + s2[2] * q1[2];
  float r2[3] = {s2[0] - d21 * q1[0], s2[1] - d21 * q1[1], s2[2] - d21 * q1[2]};
  const float n2 = sqrt(r2[0] * r2[0] + r2[1] * r2[1] + r2[2] * r2[2]) + 1e-30f;
  outP[0] = log(n0), outP[1] = d10, outP[2] = log(n1), outP[3] = d20, outP[4] = d21, outP[5] = log(n2);
}

#ifdef __cplusplus
static_assert(sizeof(GaussianPosePush) == 56);
#endif
#endif
