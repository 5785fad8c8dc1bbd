#include "armature/ops/gaussian_pose.h"

#include <cmath>

#include "dispatch.h"

namespace armature {
namespace vk {
void poseGaussians(const Exec& exec, const GaussianPoseArgs& args);
}
namespace cuda {
void poseGaussians(const Exec& exec, const GaussianPoseArgs& args);
}

void poseGaussians(const Exec& exec, const GaussianPoseArgs& args) {
  OpChecks check("poseGaussians", exec);
  const size_t N = args.gaussians;
  ARM_CHECK(N <= 65535u * 128u, "poseGaussians: %zu Gaussians, at most %u per call", N, 65535u * 128u);
  ARM_CHECK(args.joints >= 1 || N == 0, "poseGaussians: %zu Gaussians but no joints", N);
  for (float v : args.post) ARM_CHECK(std::isfinite(v), "poseGaussians: post holds a non-finite value");
  check.view("transforms", args.transforms, ElementType::Float32, size_t(args.joints) * 12);
  check.view("gaussianJoints", args.gaussianJoints, ElementType::Int32, N);
  check.view("means", args.means, ElementType::Float32, N * 3);
  check.view("cholesky", args.cholesky, ElementType::Float32, N * 6);
  check.view("posedMeans", args.posedMeans, ElementType::Float32, N * 3);
  check.view("posedCholesky", args.posedCholesky, ElementType::Float32, N * 6);
  if (N == 0) return;
  dispatch("poseGaussians", exec, args, &vk::poseGaussians, ARM_CUDA_BACKEND(poseGaussians));
}

void poseGaussiansRef(const std::vector<double>& transforms, const std::vector<int32_t>& joints,
                      const std::vector<double>& means, const std::vector<double>& cholesky,
                      std::vector<double>& posedMeans, std::vector<double>& posedCholesky,
                      const std::array<double, 12>& post) {
  const size_t N = joints.size(), J = transforms.size() / 12;
  ARM_CHECK(transforms.size() == J * 12, "poseGaussians: transforms hold %zu values, not (J,12)", transforms.size());
  ARM_CHECK(means.size() == N * 3 && cholesky.size() == N * 6,
            "poseGaussians: %zu joints, so means (%zu,3) and cholesky (%zu,6); got %zu and %zu values", N, N, N,
            means.size(), cholesky.size());
  posedMeans.assign(N * 3, 0.0), posedCholesky.assign(N * 6, 0.0);
  for (size_t i = 0; i < N; ++i) {
    ARM_CHECK(joints[i] >= 0 && size_t(joints[i]) < J,
              "poseGaussians: Gaussian %zu is attached to joint %d, not in [0, %zu)", i, joints[i], J);
    const double* t = &transforms[size_t(joints[i]) * 12];
    double m[12];  // post × t
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        m[r * 4 + c] = post[r * 4] * t[c] + post[r * 4 + 1] * t[4 + c] + post[r * 4 + 2] * t[8 + c] +
                       (c == 3 ? post[r * 4 + 3] : 0.0);
    const double* mu = &means[i * 3];
    for (int r = 0; r < 3; ++r)
      posedMeans[i * 3 + r] = m[r * 4] * mu[0] + m[r * 4 + 1] * mu[1] + m[r * 4 + 2] * mu[2] + m[r * 4 + 3];
    // Σ' = (A L)(A L)ᵀ, then its Cholesky factor: the reference takes the direct route the GPU's Gram–Schmidt avoids.
    const double* p = &cholesky[i * 6];
    const double L[9] = {std::exp(p[0]), 0, 0, p[1], std::exp(p[2]), 0, p[3], p[4], std::exp(p[5])};
    double AL[9] = {}, S[9] = {};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k) AL[r * 3 + c] += m[r * 4 + k] * L[k * 3 + c];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 3; ++k) S[r * 3 + c] += AL[r * 3 + k] * AL[c * 3 + k];
    const double l00 = std::sqrt(S[0]), l10 = S[3] / l00, l11 = std::sqrt(S[4] - l10 * l10);
    const double l20 = S[6] / l00, l21 = (S[7] - l20 * l10) / l11, l22 = std::sqrt(S[8] - l20 * l20 - l21 * l21);
    const double out[6] = {std::log(l00), l10, std::log(l11), l20, l21, std::log(l22)};
    std::copy_n(out, 6, &posedCholesky[i * 6]);
  }
}

}  // namespace armature
