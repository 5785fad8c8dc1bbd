#pragma once
// Posing a Gaussian field with a skeleton: each Gaussian is attached to one joint and moves with that joint's
// transform (a skinning matrix: rest space to posed space), mean and frame:
//     μ' = A μ + a,   Σ' = A Σ Aᵀ,   [A | a] = post × transforms[joint],
// with Σ = L Lᵀ and L' the lower-triangular factor of Σ' with a positive diagonal (the LQ factor of A·L). `post` is a
// 3×4 transform applied after the joint's (the identity by default), e.g. world space to a volume's grid. Only the
// anisotropic parametrisation (gaussian_field.h) is taken and given: (log l00, l10, log l11, l20, l21, log l22).
// The field at a posed point equals the rest field at its rest point when every A is a rotation (rigid joints).
#include <array>
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

constexpr std::array<float, 12> kIdentityTransform34{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};

// CPU reference in double. transforms (J,12); joints (N) each in [0, J) (else armature::Error naming the
// Gaussian); means (N,3) and cholesky (N,6) in, posed means and cholesky out (resized).
void poseGaussiansRef(const std::vector<double>& transforms, const std::vector<int32_t>& joints,
                      const std::vector<double>& means, const std::vector<double>& cholesky,
                      std::vector<double>& posedMeans, std::vector<double>& posedCholesky,
                      const std::array<double, 12>& post = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});

struct GaussianPoseArgs {
  uint32_t gaussians = 0, joints = 0;
  DeviceView transforms;       // (J,12) 3×4 row-major
  DeviceView gaussianJoints;   // (N) Int32; a Gaussian whose joint is out of [0, J) is posed to NaN (all 9 values)
  DeviceView means, cholesky;  // (N,3), (N,6)
  std::array<float, 12> post = kIdentityTransform34;
  DeviceView posedMeans, posedCholesky;  // out (N,3), (N,6)
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void poseGaussians(const Exec& exec, const GaussianPoseArgs& args);

}  // namespace armature
