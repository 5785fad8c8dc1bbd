// Linear blend skinning: the reference's known answers and checks, and CUDA and Vulkan against it on fresh random
// meshes of awkward sizes (1, 4 and 8 influences, batches), outputs NaN-poisoned, and bad arguments refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "armature/error.h"
#include "armature/ops/linear_blend_skinning.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

std::vector<uint32_t> randomJoints(size_t n, uint32_t jointCount) {
  std::vector<uint32_t> j(n);
  for (uint32_t& x : j) x = uint32_t(rng()() % jointCount);
  return j;
}

}  // namespace

// Identity skinning matrices leave each vertex at its rest position times its weights' sum; a translation moves it
// by the weights' sum times the translation.
TEST(LinearBlendSkinningRef, KnownAnswers) {
  const std::vector<double> rest = {1, 2, 3, -1, 0, 5};
  const std::vector<uint32_t> joints = {0, 1, 1, 1};
  const std::vector<double> weights = {0.25, 0.75, 0.5, 0.25};
  std::vector<double> skinning = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 10, 0, 1, 0, 20, 0, 0, 1, 30};
  const std::vector<double> got = linearBlendSkinningRef(rest, joints, weights, 2, skinning, 2, 1);
  const std::vector<double> want = {1 + 7.5, 2 + 15, 3 + 22.5, -0.75 + 7.5, 0 + 15, 3.75 + 22.5};
  EXPECT_TRUE(allClose(std::span<const double>(got), std::span<const double>(want), Tol{1e-12, 0}));
}

TEST(LinearBlendSkinningRef, BadInfluencesAreNamed) {
  const std::vector<double> rest(6), skinning(24);
  EXPECT_THAT(errorOf([&] {
                linearBlendSkinningRef(rest, {0, 2}, {1, 1}, 1, skinning, 2, 1);
              }),
              testing::HasSubstr("vertex 1's influence 0 names joint 2, not in [0, 2)"));
  EXPECT_THAT(errorOf([&] {
                linearBlendSkinningRef(rest, {0, 1}, {1, NAN}, 1, skinning, 2, 1);
              }),
              testing::HasSubstr("vertex 1's influence 0 has weight nan"));
  EXPECT_THAT(errorOf([&] {
                linearBlendSkinningRef(rest, std::vector<uint32_t>(18), std::vector<double>(18), 9, skinning, 2, 1);
              }),
              testing::HasSubstr("9 influences per vertex, not 1 to 8"));
  EXPECT_THAT(errorOf([&] {
                linearBlendSkinningRef(rest, {0, 1, 0}, {1, 1, 1}, 2, skinning, 2, 1);
              }),
              testing::HasSubstr("3 joint indices and 3 weights for 2 influences"));
}

class LinearBlendSkinningOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(LinearBlendSkinningOp);

// Each position sums K products of order-one matrices and points: float rounding stays within a few ulps of the
// largest term, so positions are held to 1e-5 relative to the largest (|value| ≲ 10 here).
TEST_P(LinearBlendSkinningOp, MatchesReference) {
  struct Case {
    uint32_t vertices, influences, joints, batch;
  };
  for (const Case c : {Case{1, 1, 1, 1}, Case{1027, 4, 37, 3}, Case{513, 8, 55, 5}, Case{130, 3, 300, 2}}) {
    SCOPED_TRACE(std::to_string(c.vertices) + " vertices, " + std::to_string(c.influences) + " influences");
    const size_t VK = size_t(c.vertices) * c.influences;
    std::vector<double> rest = uniform(size_t(c.vertices) * 3, -1, 1), weights = uniform(VK, 0, 1);
    std::vector<double> skinning = uniform(size_t(c.batch) * c.joints * 12, -1, 1);
    for (auto* v : {&rest, &weights, &skinning})
      for (double& x : *v) x = double(float(x));
    const std::vector<uint32_t> joints = randomJoints(VK, c.joints);
    const std::vector<double> want =
        linearBlendSkinningRef(rest, joints, weights, c.influences, skinning, c.joints, c.batch);
    const DeviceSkinWeights skin(device(), c.joints, c.influences, joints, cast<float>(weights));
    DeviceBuffer restBuf = device().upload(cast<float>(rest)), skinningBuf = device().upload(cast<float>(skinning));
    DeviceBuffer positions = device().allocate(ElementType::Float32, size_t(c.batch) * c.vertices * 3);
    positions.fill(nanBits());
    run([&](const Exec& exec) {
      linearBlendSkinning(
          exec, {.weights = &skin, .batch = c.batch, .rest = restBuf, .skinning = skinningBuf, .positions = positions});
    });
    double largest = 1;
    for (double x : want) largest = std::max(largest, std::abs(x));
    EXPECT_TRUE(allClose(positions.download<float>(want.size()), want, Tol{1e-5 * largest, 0}));
  }
}

TEST_P(LinearBlendSkinningOp, RejectsBadArguments) {
  EXPECT_THAT(errorOf([&] {
                DeviceSkinWeights(device(), 4, 2, {0, 1, 4, 0}, {1, 1, 1, 1});
              }),
              testing::HasSubstr("vertex 1's influence 0 names joint 4, not in [0, 4)"));
  const DeviceSkinWeights skin(device(), 4, 2, {0, 1, 3, 0}, {1, 1, 1, 1});
  DeviceBuffer small = device().allocate(ElementType::Float32, 5), big = device().allocate(ElementType::Float32, 1024);
  expectRejected(
      [&](const Exec& e) {
        linearBlendSkinning(e, {.weights = &skin, .batch = 2, .rest = small, .skinning = big, .positions = big});
      },
      "linearBlendSkinning: rest holds 5 elements");
  expectRejected(
      [&](const Exec& e) {
        linearBlendSkinning(e, {.weights = &skin, .batch = 2, .rest = big, .skinning = small, .positions = big});
      },
      "linearBlendSkinning: skinning holds 5 elements");
  expectRejected(
      [&](const Exec& e) {
        linearBlendSkinning(e, {.weights = nullptr, .batch = 2, .rest = big, .skinning = big, .positions = big});
      },
      "the skin weights are missing");
}
