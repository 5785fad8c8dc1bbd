// One step of the body's inverse kinematics (GLSL and CUDA; the CPU reference is ikStepRef), in one workgroup.
// Damped least squares with a prior: with r the weighted residuals of the targets (3 per target, joint minus target,
// times its weight), J their Jacobian over the free parameters θ (the pose's axis-angle components, then the
// translation) and θ₀ the prior pose, the step Δ minimises ½‖r + JΔ‖² + ½μ‖θ + Δ − θ₀‖² + ½λ‖Δ‖² (μ: prior, on the
// pose only; λ: damping). With c = μ + λ and g = Jᵀr + μ(θ − θ₀) it is Δ = −(g − Jᵀy)/c, y = (JJᵀ + cI)⁻¹Jg (by
// Woodbury: an m×m solve, m = 3·targets, instead of one over every parameter). Then θ + Δ is clamped to each
// parameter's [lower, upper].
#ifndef ARMATURE_IK_IO_H
#define ARMATURE_IK_IO_H
#include "common_io.h"

#define IK_WORKGROUP_SIZE 256
#define IK_MAX_TARGETS 8
#define IK_MAX_ROWS (3 * IK_MAX_TARGETS)
#define IK_MAX_PARAMS (3 * 64 + 3)  // the skinning's most joints, and the translation

#define IK_BINDING_JOINTS 0       // float (m,J,3): the forward's joints (every row the same body)
#define IK_BINDING_GRAD_POSE 1    // float (m,J,3): row k is d joints[k's target joint][k's axis] / d pose
#define IK_BINDING_GRAD_TRANSL 2  // float (m,3): the same for the translation
#define IK_BINDING_TARGETS 3      // IkTargetIO (targets)
#define IK_BINDING_POSE 4         // float (m,J,3), updated: the solve's pose, every row
#define IK_BINDING_TRANSL 5       // float (m,3), updated
#define IK_BINDING_BOUNDS 6       // float (4,P): the prior θ₀, lower, upper, free (1 or 0) of each parameter
#define IK_BINDINGS 7

ARM_SHARED_STRUCT(IkTargetIO) {
  float x, y, z, weight;
  uint joint, pad0, pad1, pad2;
};

ARM_SHARED_STRUCT(IkPush) {
  uint rows;    // m = 3·targets
  uint joints;  // J
  uint params;  // P = 3J + 3
  uint pad0;
  float prior, damping;  // μ, λ
  uint pad1, pad2;
};

// The Cholesky solve of A y = v in place (A: n×n row-major, symmetric positive definite: JJᵀ + cI with c > 0).
ARM_FN void ikCholeskySolve(uint n, ARM_INOUT(float, a, IK_MAX_ROWS* IK_MAX_ROWS), ARM_INOUT(float, v, IK_MAX_ROWS)) {
  for (uint j = 0; j < n; ++j) {
    float d = a[j * n + j];
    for (uint k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    d = sqrt(d > 1e-30f ? d : 1e-30f);  // c > 0 keeps d positive; this guards rounding
    a[j * n + j] = d;
    for (uint i = j + 1; i < n; ++i) {
      float s = a[i * n + j];
      for (uint k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
  }
  for (uint i = 0; i < n; ++i) {  // L z = v
    float s = v[i];
    for (uint k = 0; k < i; ++k) s -= a[i * n + k] * v[k];
    v[i] = s / a[i * n + i];
  }
  for (uint i = n; i-- > 0;) {  // Lᵀ y = z
    float s = v[i];
    for (uint k = i + 1; k < n; ++k) s -= a[k * n + i] * v[k];
    v[i] = s / a[i * n + i];
  }
}

#ifdef __cplusplus
static_assert(sizeof(IkTargetIO) == 32 && sizeof(IkPush) == 32);
#endif

#endif
