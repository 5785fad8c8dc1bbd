// Posing Gaussians with joints: the reference keeps the field (the posed field at a posed point is the rest field at
// the rest point, for any invertible transform); CUDA and Vulkan against the reference on random skeletons and
// awkward counts, outputs NaN-poisoned; a bad joint index gives NaN for its Gaussian alone; bad arguments refused.
#include <gtest/gtest.h>

#include <cmath>

#include "armature/body/body_model.h"
#include "armature/error.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/gaussian_pose.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// J random rigid transforms (a rotation from a random axis-angle, a translation in ±1), rounded to float.
std::vector<double> rigidTransforms(uint32_t J) {
  std::vector<double> t;
  for (uint32_t j = 0; j < J; ++j) {
    const std::vector<double> r = uniform(3, -2, 2), a = uniform(3, -1, 1);
    const std::array<double, 9> R = rodrigues(r.data());
    for (int row = 0; row < 3; ++row) t.insert(t.end(), {R[row * 3], R[row * 3 + 1], R[row * 3 + 2], a[row]});
  }
  for (double& x : t) x = double(float(x));
  return t;
}

// N Gaussians: means in ±1, scales 0.05 … 0.5, off-diagonals ±0.3, each on a random joint of J.
struct Gaussians {
  std::vector<int32_t> joints;
  std::vector<double> means, cholesky;
};
Gaussians randomGaussians(uint32_t N, uint32_t J) {
  Gaussians g;
  g.means = uniform(size_t(N) * 3, -1, 1), g.cholesky = uniform(size_t(N) * 6, -0.3, 0.3);
  const std::vector<double> logScales = uniform(size_t(N) * 3, std::log(0.05), std::log(0.5));
  for (size_t i = 0; i < N; ++i) {
    g.cholesky[i * 6] = logScales[i * 3], g.cholesky[i * 6 + 2] = logScales[i * 3 + 1];
    g.cholesky[i * 6 + 5] = logScales[i * 3 + 2];
    g.joints.push_back(int32_t(rng()() % J));
  }
  for (auto* v : {&g.means, &g.cholesky})
    for (double& x : *v) x = double(float(x));
  return g;
}

// A non-rigid post transform: per-axis scales and a shear, as a world-to-grid map would have.
constexpr std::array<double, 12> kPost{3, 0.5, 0, -1, 0, 2, 0, 4, 0, 0, 5, 0.5};

}  // namespace

// A Gaussian's value at a point depends on ‖L⁻¹(x − μ)‖ only, and posing maps x − μ by A and L to a factor of A·L:
// the posed field at A x + a is the rest field at x, whatever the (invertible) A. Checked for rigid joints with a
// non-rigid post transform, to 1e-9 (double rounding through a 3×3 Cholesky factorisation).
TEST(GaussianPoseRef, PosedFieldIsTheRestFieldMoved) {
  const uint32_t J = 7, N = 40, B = 25;
  const std::vector<double> transforms = rigidTransforms(J);
  const Gaussians g = randomGaussians(N, J);
  std::vector<double> posedMeans, posedCholesky;
  poseGaussiansRef(transforms, g.joints, g.means, g.cholesky, posedMeans, posedCholesky, kPost);
  for (uint32_t i = 0; i < N; ++i) {  // one Gaussian at a time: each moves with its own joint
    GaussianFieldRef rest, posed;
    rest.means.assign(&g.means[i * 3], &g.means[i * 3 + 3]);
    rest.cholesky.assign(&g.cholesky[i * 6], &g.cholesky[i * 6 + 6]);
    rest.weights = {1.0}, posed.weights = {1.0};
    posed.means.assign(&posedMeans[i * 3], &posedMeans[i * 3 + 3]);
    posed.cholesky.assign(&posedCholesky[i * 6], &posedCholesky[i * 6 + 6]);
    rest.points = uniform(size_t(B) * 3, -0.5, 0.5);  // around the mean, where the distances are of order one
    for (size_t k = 0; k < rest.points.size(); ++k) rest.points[k] += rest.means[k % 3];
    const double* t = &transforms[size_t(g.joints[i]) * 12];
    for (uint32_t b = 0; b < B; ++b) {
      double moved[3];
      for (int r = 0; r < 3; ++r) {
        const double* x = &rest.points[b * 3];
        moved[r] = t[r * 4] * x[0] + t[r * 4 + 1] * x[1] + t[r * 4 + 2] * x[2] + t[r * 4 + 3];
      }
      for (int r = 0; r < 3; ++r)
        posed.points.push_back(kPost[r * 4] * moved[0] + kPost[r * 4 + 1] * moved[1] + kPost[r * 4 + 2] * moved[2] +
                               kPost[r * 4 + 3]);
    }
    EXPECT_TRUE(
        allClose(gaussianFieldRef(posed, true).mahalanobis, gaussianFieldRef(rest, true).mahalanobis, Tol{1e-9, 1e-9}))
        << "Gaussian " << i;
  }
  // The identity moves nothing.
  std::vector<double> same(J * 12, 0.0);
  for (uint32_t j = 0; j < J; ++j) same[j * 12] = same[j * 12 + 5] = same[j * 12 + 10] = 1;
  poseGaussiansRef(same, g.joints, g.means, g.cholesky, posedMeans, posedCholesky);
  EXPECT_TRUE(allClose(posedMeans, g.means, Tol{1e-15, 1e-15}));
  EXPECT_TRUE(allClose(posedCholesky, g.cholesky, Tol{1e-12, 1e-12}));
}

TEST(GaussianPoseRef, RejectsABadJoint) {
  std::vector<double> m, c;
  const std::vector<double> transforms = rigidTransforms(3);
  EXPECT_THROW(
      {
        try {
          poseGaussiansRef(transforms, {0, 3}, std::vector<double>(6, 0.0), std::vector<double>(12, 0.0), m, c);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("Gaussian 1 is attached to joint 3, not in [0, 3)"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}

namespace {
class GaussianPoseOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(GaussianPoseOp);

// Float inputs, one 3×4 product and a Gram–Schmidt over rows of norm ≤ ~10: each value carries a few float
// roundings of its row's norm, so 2e-5 absolute (on log-scales and entries of order 0.05 … 10) with 2e-5 relative
// leaves a wide margin over float's 6e-8 and is far below any wrong formula.
constexpr Tol kPoseTol{2e-5, 2e-5};
}  // namespace

TEST_P(GaussianPoseOp, MatchesReference) {
  const uint32_t J = 55;
  for (uint32_t N : {1u, 127u, 129u, 10007u}) {
    SCOPED_TRACE("N=" + std::to_string(N));
    const std::vector<double> transforms = rigidTransforms(J);
    const Gaussians g = randomGaussians(N, J);
    std::array<float, 12> post;
    for (int k = 0; k < 12; ++k) post[size_t(k)] = float(kPost[size_t(k)]);
    std::vector<double> wantMeans, wantCholesky;
    poseGaussiansRef(transforms, g.joints, g.means, g.cholesky, wantMeans, wantCholesky, kPost);
    DeviceBuffer t = device().upload(cast<float>(transforms)), joints = device().upload(g.joints);
    DeviceBuffer means = device().upload(cast<float>(g.means)), cholesky = device().upload(cast<float>(g.cholesky));
    DeviceBuffer outMeans = device().allocate(ElementType::Float32, size_t(N) * 3 + 5);
    DeviceBuffer outCholesky = device().allocate(ElementType::Float32, size_t(N) * 6 + 5);
    outMeans.fill(nanBits()), outCholesky.fill(nanBits());
    device().run(backend(), [&](const Exec& e) {
      poseGaussians(e, {.gaussians = N,
                        .joints = J,
                        .transforms = t,
                        .gaussianJoints = joints,
                        .means = means,
                        .cholesky = cholesky,
                        .post = post,
                        .posedMeans = outMeans,
                        .posedCholesky = outCholesky});
    });
    const std::vector<float> gotMeans = outMeans.download<float>(), gotCholesky = outCholesky.download<float>();
    EXPECT_TRUE(
        allClose(std::span<const float>(gotMeans.data(), size_t(N) * 3), std::span<const double>(wantMeans), kPoseTol));
    EXPECT_TRUE(allClose(std::span<const float>(gotCholesky.data(), size_t(N) * 6),
                         std::span<const double>(wantCholesky), kPoseTol));
    for (size_t k = size_t(N) * 3; k < gotMeans.size(); ++k) EXPECT_TRUE(std::isnan(gotMeans[k])) << "past the end";
    for (size_t k = size_t(N) * 6; k < gotCholesky.size(); ++k) EXPECT_TRUE(std::isnan(gotCholesky[k]));
  }
}

// A joint index out of range is the GPU's defined result: NaN for that Gaussian's nine values, the others posed.
TEST_P(GaussianPoseOp, BadJointGivesNaNForItsGaussianOnly) {
  const uint32_t J = 4, N = 3;
  const std::vector<double> transforms = rigidTransforms(J);
  Gaussians g = randomGaussians(N, J);
  DeviceBuffer t = device().upload(cast<float>(transforms));
  DeviceBuffer joints = device().upload(std::vector<int32_t>{g.joints[0], 4, -1});
  DeviceBuffer means = device().upload(cast<float>(g.means)), cholesky = device().upload(cast<float>(g.cholesky));
  DeviceBuffer outMeans = device().allocate(ElementType::Float32, N * 3);
  DeviceBuffer outCholesky = device().allocate(ElementType::Float32, N * 6);
  device().run(backend(), [&](const Exec& e) {
    poseGaussians(e, {.gaussians = N,
                      .joints = J,
                      .transforms = t,
                      .gaussianJoints = joints,
                      .means = means,
                      .cholesky = cholesky,
                      .post = kIdentityTransform34,
                      .posedMeans = outMeans,
                      .posedCholesky = outCholesky});
  });
  const std::vector<float> m = outMeans.download<float>(), c = outCholesky.download<float>();
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(std::isfinite(m[k]));
  for (size_t k = 0; k < 6; ++k) EXPECT_TRUE(std::isfinite(c[k]));
  for (size_t k = 3; k < 9; ++k) EXPECT_TRUE(std::isnan(m[k])) << k;
  for (size_t k = 6; k < 18; ++k) EXPECT_TRUE(std::isnan(c[k])) << k;
}

TEST_P(GaussianPoseOp, RejectsBadArguments) {
  DeviceBuffer t = device().allocate(ElementType::Float32, 12 * 2), joints = device().allocate(ElementType::Int32, 4);
  DeviceBuffer f = device().allocate(ElementType::Float32, 4 * 6);
  expectRejected(
      [&](const Exec& e) {
        poseGaussians(e, {.gaussians = 4,
                          .joints = 3,
                          .transforms = t,
                          .gaussianJoints = joints,
                          .means = f,
                          .cholesky = f,
                          .post = kIdentityTransform34,
                          .posedMeans = f,
                          .posedCholesky = f});
      },
      "poseGaussians: transforms holds 24 elements, its shape needs 36");
  expectRejected(
      [&](const Exec& e) {
        poseGaussians(e, {.gaussians = 4,
                          .joints = 2,
                          .transforms = t,
                          .gaussianJoints = f,
                          .means = f,
                          .cholesky = f,
                          .post = kIdentityTransform34,
                          .posedMeans = f,
                          .posedCholesky = f});
      },
      "gaussianJoints");
  std::array<float, 12> bad = kIdentityTransform34;
  bad[3] = std::nanf("");
  expectRejected(
      [&](const Exec& e) {
        poseGaussians(e, {.gaussians = 4,
                          .joints = 2,
                          .transforms = t,
                          .gaussianJoints = joints,
                          .means = f,
                          .cholesky = f,
                          .post = bad,
                          .posedMeans = f,
                          .posedCholesky = f});
      },
      "poseGaussians: post holds a non-finite value");
}
