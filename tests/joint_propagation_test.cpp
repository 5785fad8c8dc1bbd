// Joint forests and the CPU reference of joint propagation: validation with errors naming the joint, the
// heavy-path decomposition's invariants on wide, deep, shuffled and many-rooted forests, the forward on cases with
// known answers, and every gradient of the backward against central differences in double.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "armature/body/body_model.h"
#include "armature/error.h"
#include "armature/ops/joint_forest.h"
#include "armature/ops/joint_propagation.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// parent[i] uniform in [i - window, i - 1] (the random tree), optionally relabelled by a random
// permutation (so parents may come after children) and with extra roots.
std::vector<int32_t> randomForest(uint32_t n, uint32_t window, std::mt19937_64& rng, bool shuffled,
                                  uint32_t extraRoots = 0) {
  std::vector<int32_t> parents(n, -1);
  for (uint32_t i = 1; i < n; ++i) parents[i] = int32_t(i - 1 - rng() % std::min(i, window));
  for (uint32_t k = 0; k < extraRoots && n > 0; ++k) parents[rng() % n] = -1;
  if (!shuffled) return parents;
  std::vector<uint32_t> label(n);
  std::iota(label.begin(), label.end(), 0u);
  std::shuffle(label.begin(), label.end(), rng);
  std::vector<int32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) out[label[i]] = parents[i] < 0 ? -1 : int32_t(label[size_t(parents[i])]);
  return out;
}

// The decomposition's invariants: order() a parent-first permutation; along a path each joint's parent is the one
// before it; a path's top has no parent or one on a path of an earlier generation; the generation bound.
void expectValidDecomposition(const JointForest& f) {
  const size_t N = f.size();
  ASSERT_EQ(f.order().size(), N);
  std::vector<int32_t> pathOf(N, -1), generationOf(f.paths(), -1);
  for (uint32_t g = 0; g < f.generations(); ++g)
    for (uint32_t p = f.generationStart()[g]; p < f.generationStart()[g + 1]; ++p) generationOf[p] = int32_t(g);
  for (uint32_t p = 0; p < f.paths(); ++p) {
    ASSERT_LT(f.pathStart()[p], f.pathStart()[p + 1]) << "an empty path";
    for (uint32_t k = f.pathStart()[p]; k < f.pathStart()[p + 1]; ++k) {
      const uint32_t j = f.order()[k];
      ASSERT_EQ(pathOf[j], -1) << "joint " << j << " twice";
      pathOf[j] = int32_t(p);
      const int32_t parent = f.parents()[j];
      if (k > f.pathStart()[p]) {
        ASSERT_EQ(parent, int32_t(f.order()[k - 1])) << "joint " << j;
      } else if (parent >= 0) {
        ASSERT_GE(pathOf[size_t(parent)], 0) << "a top before its parent";
        ASSERT_LT(generationOf[size_t(pathOf[size_t(parent)])], generationOf[p]);
      }
    }
  }
  EXPECT_EQ(f.pathStart().back(), N);
  EXPECT_LE(f.generations(), N ? uint32_t(std::floor(std::log2(double(N)))) + 1 : 0u);
  // Children as CSR: each joint's in increasing order, every non-root once.
  ASSERT_EQ(f.childStart().size(), N + 1);
  EXPECT_EQ(f.children().size(), N - f.roots());
  for (size_t j = 0; j < N; ++j)
    for (uint32_t k = f.childStart()[j]; k < f.childStart()[j + 1]; ++k) {
      ASSERT_EQ(f.parents()[f.children()[k]], int32_t(j));
      if (k > f.childStart()[j]) {
        ASSERT_LT(f.children()[k - 1], f.children()[k]);
      }
    }
  // Levels: every joint once, roots at level 0, each other joint one level below its parent.
  ASSERT_EQ(f.levelStart().size(), size_t(f.depth()) + 1);
  ASSERT_EQ(f.levelOrder().size(), N);
  EXPECT_EQ(f.levelStart().back(), N);
  std::vector<int32_t> levelOf(N, -1);
  for (uint32_t d = 0; d < f.depth(); ++d)
    for (uint32_t k = f.levelStart()[d]; k < f.levelStart()[d + 1]; ++k) {
      const uint32_t j = f.levelOrder()[k];
      ASSERT_EQ(levelOf[j], -1) << "joint " << j << " twice";
      levelOf[j] = int32_t(d);
      const int32_t parent = f.parents()[j];
      ASSERT_EQ(parent < 0 ? -1 : levelOf[size_t(parent)], int32_t(d) - 1) << "joint " << j;
    }
}

JointLocalsRef randomLocals(const JointForest& f, uint32_t batch, LocalTransform kind, uint32_t points,
                            std::mt19937_64& rng, bool skinning) {
  std::uniform_real_distribution<double> u(-1, 1);
  const size_t N = f.size();
  JointLocalsRef in;
  if (N == 0) return in;
  in.batch = batch;
  in.kind = kind;
  if (kind == LocalTransform::Rigid) {
    in.rotations.resize(batch * N * 4);
    for (size_t i = 0; i < batch * N; ++i) {
      double* q = &in.rotations[i * 4];
      double norm = 0;
      for (int c = 0; c < 4; ++c) q[c] = u(rng), norm += q[c] * q[c];
      for (int c = 0; c < 4; ++c) q[c] /= std::sqrt(norm);
    }
    in.translations.resize(batch * N * 3);
    for (double& x : in.translations) x = 0.3 * u(rng);
  } else {
    // Near the identity by 0.4/√depth, so that products along the deepest chain stay of order one.
    const double spread = 0.4 / std::sqrt(double(f.depth()));
    in.affine.resize(batch * N * 12);
    for (size_t i = 0; i < in.affine.size(); ++i) in.affine[i] = (i % 12 % 5 == 0 ? 1.0 : 0.0) + spread * u(rng);
  }
  if (skinning) {
    in.inverseBind.resize(N * 12);
    for (size_t i = 0; i < in.inverseBind.size(); ++i) in.inverseBind[i] = (i % 12 % 5 == 0 ? 1.0 : 0.0) + 0.3 * u(rng);
  }
  for (uint32_t k = 0; k < points; ++k) {
    in.pointJoints.push_back(int32_t(rng() % N));
    for (int c = 0; c < 3; ++c) in.points.push_back(0.5 * u(rng));
  }
  return in;
}

// <weights, outputs> for fixed random weights: the loss whose gradients the backward must give.
struct Loss {
  JointGlobalsRef weights;
  double operator()(const JointForest& f, const JointLocalsRef& in) const {
    const JointGlobalsRef out = propagateJointsRef(f, in);
    double sum = 0;
    for (auto [w, y] : {std::pair{&weights.globals, &out.globals},
                        {&weights.skinning, &out.skinning},
                        {&weights.positions, &out.positions},
                        {&weights.points, &out.points}})
      for (size_t i = 0; i < w->size(); ++i) sum += (*w)[i] * (*y)[i];
    return sum;
  }
};

}  // namespace

TEST(JointForest, BadParentsAreNamed) {
  EXPECT_NE(errorOf([] { JointForest({-1, 0, 7}); }).find("joint 2 has parent 7"), std::string::npos);
  EXPECT_NE(errorOf([] { JointForest({-1, -2}); }).find("joint 1 has parent -2"), std::string::npos);
  EXPECT_NE(errorOf([] { JointForest({-1, 1}); }).find("joint 1 is its own parent"), std::string::npos);
  const std::string cycle = errorOf([] { JointForest({-1, 3, 1, 2, 0}); });
  EXPECT_NE(cycle.find("cycle: 1 -> 3 -> 2 -> 1"), std::string::npos) << cycle;
  // A chain hanging off a cycle: the cycle is named, not the chain.
  const std::string hanging = errorOf([] { JointForest({1, 2, 3, 2}); });
  EXPECT_NE(hanging.find("cycle: 2 -> 3 -> 2"), std::string::npos) << hanging;
}

TEST(JointForest, DecompositionOfWideDeepShuffledAndEmptyForests) {
  std::mt19937_64 rng(7);
  const JointForest empty({});
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.paths(), 0u);
  EXPECT_EQ(empty.generations(), 0u);
  EXPECT_EQ(empty.depth(), 0u);
  const JointForest single({-1});
  EXPECT_EQ(single.paths(), 1u);
  EXPECT_EQ(single.depth(), 1u);
  expectValidDecomposition(single);

  std::vector<int32_t> chain(100000);
  for (size_t i = 0; i < chain.size(); ++i) chain[i] = int32_t(i) - 1;
  const JointForest deep(chain);
  EXPECT_EQ(deep.depth(), 100000u);
  EXPECT_EQ(deep.paths(), 1u);  // one path, one generation: a single scan
  expectValidDecomposition(deep);

  std::vector<int32_t> star(100001, 0);
  star[0] = -1;
  const JointForest wide(star);
  EXPECT_EQ(wide.depth(), 2u);
  EXPECT_EQ(wide.paths(), 100000u);
  EXPECT_EQ(wide.generations(), 2u);
  expectValidDecomposition(wide);

  for (bool shuffled : {false, true}) {
    const JointForest random(randomForest(100000, 64, rng, shuffled, 37));
    EXPECT_GE(random.roots(), 2u);
    EXPECT_LE(random.roots(), 38u);  // joint 0 and 37 more (some may coincide)
    expectValidDecomposition(random);
  }
  std::vector<int32_t> many(1000, -1);  // all roots
  const JointForest flat(many);
  EXPECT_EQ(flat.roots(), 1000u);
  EXPECT_EQ(flat.generations(), 1u);
  expectValidDecomposition(flat);
}

// Known answers: a chain of pure translations accumulates them; affine locals built from the rigid ones give the
// same globals; skinning matrices are global × inverse bind; points ride their joint.
TEST(JointPropagationRef, KnownAnswers) {
  const JointForest chain({-1, 0, 1, 2});
  JointLocalsRef in;
  in.rotations = std::vector<double>(16, 0.0);
  for (size_t j = 0; j < 4; ++j) in.rotations[j * 4 + 3] = 1;  // identity
  in.translations = {1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 1, 1};
  in.inverseBind = std::vector<double>(48, 0.0);
  for (size_t j = 0; j < 4; ++j)
    in.inverseBind[j * 12] = in.inverseBind[j * 12 + 5] = in.inverseBind[j * 12 + 10] = 1,
                       in.inverseBind[j * 12 + 3] = -1;
  in.pointJoints = {3};
  in.points = {0.5, 0, 0};
  const JointGlobalsRef out = propagateJointsRef(chain, in);
  EXPECT_EQ(out.positions, (std::vector<double>{1, 0, 0, 1, 2, 0, 1, 2, 3, 2, 3, 4}));
  EXPECT_EQ(out.skinning[3 * 12 + 3], 1.0);  // x translation 2 - 1
  EXPECT_EQ(out.points, (std::vector<double>{2.5, 3, 4}));

  std::mt19937_64 rng(3);
  const JointForest f(randomForest(50, 8, rng, true, 3));
  const JointLocalsRef rigid = randomLocals(f, 2, LocalTransform::Rigid, 5, rng, true);
  JointLocalsRef affine = rigid;
  affine.kind = LocalTransform::Affine;
  const JointGlobalsRef fromRigid = propagateJointsRef(f, rigid);
  // The rigid locals as matrices: the globals of a one-joint forest per local.
  const JointForest one({-1});
  for (size_t i = 0; i < 2 * 50; ++i) {
    JointLocalsRef single;
    single.rotations.assign(&rigid.rotations[i * 4], &rigid.rotations[i * 4 + 4]);
    single.translations.assign(&rigid.translations[i * 3], &rigid.translations[i * 3 + 3]);
    const std::vector<double> m = propagateJointsRef(one, single).globals;
    affine.affine.insert(affine.affine.end(), m.begin(), m.end());
  }
  const JointGlobalsRef fromAffine = propagateJointsRef(f, affine);
  for (size_t i = 0; i < fromRigid.globals.size(); ++i) EXPECT_NEAR(fromAffine.globals[i], fromRigid.globals[i], 1e-12);
  for (size_t i = 0; i < fromRigid.points.size(); ++i) EXPECT_NEAR(fromAffine.points[i], fromRigid.points[i], 1e-12);
}

// Every gradient against central differences: rigid and affine locals on a shuffled forest with several roots, a
// batch of 2, skinning matrices and attached points, each output weighted at random.
TEST(JointPropagationRef, BackwardMatchesFiniteDifferences) {
  for (LocalTransform kind : {LocalTransform::Rigid, LocalTransform::Affine}) {
    SCOPED_TRACE(kind == LocalTransform::Rigid ? "rigid" : "affine");
    std::mt19937_64 rng(kind == LocalTransform::Rigid ? 11 : 12);
    const JointForest f(randomForest(23, 5, rng, true, 2));
    JointLocalsRef in = randomLocals(f, 2, kind, 7, rng, true);
    const JointGlobalsRef shape = propagateJointsRef(f, in);
    std::uniform_real_distribution<double> u(-1, 1);
    Loss loss;
    for (auto [w, y] : {std::pair{&loss.weights.globals, &shape.globals},
                        {&loss.weights.skinning, &shape.skinning},
                        {&loss.weights.positions, &shape.positions},
                        {&loss.weights.points, &shape.points}}) {
      w->resize(y->size());
      for (double& x : *w) x = u(rng);
    }
    const JointLocalGradsRef g = propagateJointsBackwardRef(f, in, loss.weights);
    auto check = [&](std::vector<double>& values, const std::vector<double>& analytic, const char* name) {
      ASSERT_EQ(analytic.size(), values.size()) << name;
      for (size_t i = 0; i < values.size(); ++i) {
        const double keep = values[i], h = 1e-6;
        values[i] = keep + h;
        const double up = loss(f, in);
        values[i] = keep - h;
        const double down = loss(f, in);
        values[i] = keep;
        const double numeric = (up - down) / (2 * h);
        EXPECT_NEAR(analytic[i], numeric, 1e-6 * (1 + std::abs(numeric))) << name << "[" << i << "]";
      }
    };
    if (kind == LocalTransform::Rigid) {
      check(in.rotations, g.rotations, "rotations");
      check(in.translations, g.translations, "translations");
    } else {
      check(in.affine, g.affine, "affine");
    }
    check(in.points, g.points, "points");
  }
}

TEST(JointPropagationRef, BadInputsAreClearErrors) {
  std::mt19937_64 rng(5);
  const JointForest f({-1, 0, 0});
  JointLocalsRef in = randomLocals(f, 1, LocalTransform::Rigid, 2, rng, false);
  JointLocalsRef shortRotations = in;
  shortRotations.rotations.pop_back();
  EXPECT_NE(errorOf([&] { propagateJointsRef(f, shortRotations); }).find("rotations has 11 values, expected 12"),
            std::string::npos);
  JointLocalsRef badPoint = in;
  badPoint.pointJoints[1] = 3;
  EXPECT_NE(errorOf([&] { propagateJointsRef(f, badPoint); }).find("point 1 is attached to joint 3"),
            std::string::npos);
  JointLocalsRef nan = in;
  nan.translations[4] = std::nan("");
  EXPECT_NE(errorOf([&] { propagateJointsRef(f, nan); }).find("translations[4]"), std::string::npos);
  JointGlobalsRef grads;
  grads.skinning.assign(36, 1.0);
  EXPECT_NE(errorOf([&] { propagateJointsBackwardRef(f, in, grads); }).find("without inverse binds"),
            std::string::npos);
  // An empty forest propagates to nothing.
  const JointForest empty({});
  JointLocalsRef none;
  EXPECT_TRUE(propagateJointsRef(empty, none).globals.empty());
}

// ---- GPU ---------------------------------------------------------------------------------------------------------

namespace {

struct ForestCase {
  std::string name;
  std::vector<int32_t> parents;
  uint32_t batch;
};

// Small forests (at most DeviceJointForest::kSmallJoints joints) take the level-by-level dispatch, the others the
// scans. `wide`: the children of the wide root (lavapipe gathers at most 60,000 per invocation). The chain's 150k
// joints make 293 tiles, more than one workgroup's worth of carries, and CUDA's backward scans them in wide tiles
// on a GPU of up to 146 multiprocessors (JOINTS_WIDE_TILE); a leaf off its middle makes a second generation, so that
// scan gathers a light child's message and is CUDA's dependent launch. The random 5000's generations of a few tiles
// take narrow ones.
std::vector<ForestCase> gpuCases(uint32_t wide) {
  std::mt19937_64 r(19);
  std::vector<int32_t> chain(150000), star(wide + 1, 0);
  for (size_t i = 0; i < chain.size(); ++i) chain[i] = int32_t(i) - 1;
  chain.push_back(75000);  // the leaf
  star[0] = -1;
  std::vector<int32_t> smallChain(DeviceJointForest::kSmallJoints);  // the deepest small forest (walked level by level)
  for (size_t i = 0; i < smallChain.size(); ++i) smallChain[i] = int32_t(i) - 1;
  return {{"SMPL-X tree x 37", smplxParents(), 37},
          {"random 150, shuffled, 3 roots x 41", randomForest(150, 8, r, true, 2), 41},
          {"chain of " + std::to_string(DeviceJointForest::kSmallJoints) + " x 3", smallChain, 3},
          {"random 5000, shuffled, 6 roots", randomForest(5000, 16, r, true, 5), 3},
          {"chain of 150000 with a leaf", chain, 1},
          {"root with " + std::to_string(wide) + " children", star, 1},
          {"one joint", {-1}, 5},
          {"1000 roots", std::vector<int32_t>(1000, -1), 2}};
}

// Float inputs: the reference reads the same rounded values.
void roundToFloat(std::vector<double>& v) {
  for (double& x : v) x = double(float(x));
}

}  // namespace

class JointPropagationOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(JointPropagationOp);

// Forward and backward against the double reference, outputs NaN-poisoned, for rigid and affine locals on wide,
// deep, shuffled, batched and trivial forests. Tolerances: float composition along a chain of depth D loses about
// D ulps in the worst case (errors of independent rounding grow like √D), so globals are held to 2e-6·√D relative
// to the largest value; a gradient sums its whole subtree (up to N terms, a wide root's 100k children among them),
// so gradients are held to 1e-5·√N; a second run must give the same bits.
TEST_P(JointPropagationOp, MatchesReference) {
  const bool lavapipe = device().vulkan() && device().vulkan()->info().isCpu();
  for (const ForestCase& c : gpuCases(lavapipe && backend() == Backend::Vulkan ? 30000 : 100000)) {
    const JointForest forest(c.parents);
    for (LocalTransform kind : {LocalTransform::Rigid, LocalTransform::Affine}) {
      SCOPED_TRACE(c.name + (kind == LocalTransform::Rigid ? ", rigid" : ", affine"));
      std::mt19937_64 r(uint64_t(forest.size()) * 7 + uint64_t(kind));
      const uint32_t P = std::min<uint32_t>(forest.size(), 2000) + 3;  // attached points, several on some joints
      JointLocalsRef in = randomLocals(forest, c.batch, kind, P, r, true);
      for (auto* v : {&in.rotations, &in.translations, &in.affine, &in.inverseBind, &in.points}) roundToFloat(*v);
      const DeviceJointForest onDevice(device(), backend(), c.parents, in.pointJoints);  // analysed on the GPU
      const JointGlobalsRef want = propagateJointsRef(forest, in);
      const size_t BN = size_t(c.batch) * forest.size();
      JointGlobalsRef grads;
      grads.globals = uniform(BN * 12, -1, 1);
      grads.skinning = uniform(BN * 12, -1, 1);
      grads.positions = uniform(BN * 3, -1, 1);
      grads.points = uniform(size_t(c.batch) * P * 3, -1, 1);
      for (auto* v : {&grads.globals, &grads.skinning, &grads.positions, &grads.points}) roundToFloat(*v);
      const JointLocalGradsRef wantGrads = propagateJointsBackwardRef(forest, in, grads);

      const bool rigid = kind == LocalTransform::Rigid;
      DeviceBuffer rotations = device().upload(cast<float>(rigid ? in.rotations : std::vector<double>(1)));
      DeviceBuffer translations = device().upload(cast<float>(rigid ? in.translations : std::vector<double>(1)));
      DeviceBuffer affine = device().upload(cast<float>(rigid ? std::vector<double>(1) : in.affine));
      DeviceBuffer inverseBind = device().upload(cast<float>(in.inverseBind));
      DeviceBuffer gGlobals = device().upload(cast<float>(grads.globals));
      DeviceBuffer gSkinning = device().upload(cast<float>(grads.skinning));
      DeviceBuffer gPositions = device().upload(cast<float>(grads.positions));
      DeviceBuffer points = device().upload(cast<float>(in.points)),
                   gPointsOut = device().upload(cast<float>(grads.points));
      DeviceBuffer globals = device().allocate(ElementType::Float32, BN * 12),
                   skinning = device().allocate(ElementType::Float32, BN * 12),
                   positions = device().allocate(ElementType::Float32, BN * 3),
                   adjoint = device().allocate(ElementType::Float32, BN * 12),
                   gradA = device().allocate(ElementType::Float32, BN * (rigid ? 4 : 12)),
                   gradB = device().allocate(ElementType::Float32, BN * 3),
                   scratch = device().allocate(ElementType::Float32, onDevice.scratchFloats(c.batch)),
                   pointsOut = device().allocate(ElementType::Float32, size_t(c.batch) * P * 3),
                   gradPoints = device().allocate(ElementType::Float32, size_t(P) * 3);
      for (DeviceBuffer* b :
           {&globals, &skinning, &positions, &adjoint, &gradA, &gradB, &scratch, &pointsOut, &gradPoints})
        b->fill(nanBits());
      JointPropagationArgs fwd{&onDevice, c.batch, kind};
      (rigid ? fwd.rotations : fwd.affine) = rigid ? rotations.view() : affine.view();
      if (rigid) fwd.translations = translations;
      fwd.inverseBind = inverseBind;
      fwd.globals = globals, fwd.skinning = skinning, fwd.positions = positions, fwd.scratch = scratch;
      fwd.points = points, fwd.pointsOut = pointsOut;
      JointPropagationBackwardArgs bwd{&onDevice, c.batch, kind};
      bwd.rotations = fwd.rotations, bwd.translations = fwd.translations, bwd.affine = fwd.affine;
      bwd.inverseBind = inverseBind, bwd.globals = globals;
      bwd.gradGlobals = gGlobals, bwd.gradSkinning = gSkinning, bwd.gradPositions = gPositions;
      bwd.adjoint = adjoint, bwd.scratch = scratch;
      bwd.points = points, bwd.gradPointsOut = gPointsOut, bwd.gradPoints = gradPoints;
      (rigid ? bwd.gradRotations : bwd.gradAffine) = gradA;
      if (rigid) bwd.gradTranslations = gradB;
      run([&](const Exec& exec) {
        propagateJoints(exec, fwd);
        propagateJointsBackward(exec, bwd);
      });
      const double depth = std::sqrt(double(forest.depth())), terms = std::sqrt(double(forest.size()));
      auto scaled = [&](const std::vector<double>& v, double tol) {
        double largest = 0;
        for (double x : v) largest = std::max(largest, std::abs(x));
        return Tol{tol * std::max(largest, 1.0), 0};
      };
      EXPECT_TRUE(allClose(globals.download<float>(BN * 12), want.globals, scaled(want.globals, 2e-6 * depth)));
      EXPECT_TRUE(allClose(skinning.download<float>(BN * 12), want.skinning, scaled(want.skinning, 2e-6 * depth)));
      EXPECT_TRUE(allClose(positions.download<float>(BN * 3), want.positions, scaled(want.positions, 2e-6 * depth)));
      EXPECT_TRUE(
          allClose(pointsOut.download<float>(size_t(c.batch) * P * 3), want.points, scaled(want.points, 2e-6 * depth)));
      // A point's gradient sums the batch of its joint's rotations (each as good as the globals) times gradients.
      EXPECT_TRUE(allClose(gradPoints.download<float>(size_t(P) * 3), wantGrads.points,
                           scaled(wantGrads.points, (2e-6 * depth + 1e-5) * std::sqrt(double(c.batch)))));
      const std::vector<double>& wantA = rigid ? wantGrads.rotations : wantGrads.affine;
      const std::vector<float> gotA = gradA.download<float>(wantA.size());
      EXPECT_TRUE(allClose(gotA, wantA, scaled(wantA, 1e-5 * terms)));
      if (rigid) {
        EXPECT_TRUE(allClose(gradB.download<float>(BN * 3), wantGrads.translations,
                             scaled(wantGrads.translations, 1e-5 * terms)));
      }
      const std::vector<float> gotGlobals = globals.download<float>(BN * 12);
      const std::vector<float> gotPoints = gradPoints.download<float>(size_t(P) * 3);
      run([&](const Exec& exec) {
        propagateJoints(exec, fwd);
        propagateJointsBackward(exec, bwd);
      });
      EXPECT_EQ(globals.download<float>(BN * 12), gotGlobals) << "the forward is deterministic";
      EXPECT_EQ(gradA.download<float>(wantA.size()), gotA) << "the backward is deterministic";
      EXPECT_EQ(gradPoints.download<float>(size_t(P) * 3), gotPoints) << "the points' backward is deterministic";
    }
  }
}

// The analysis on the GPU gives the host's tables exactly (both order paths by generation, then by top index; both
// sums are of integers): the order with path tops marked, the parents, the light children as CSR, the generations.
TEST_P(JointPropagationOp, AnalysisOnTheGpuMatchesTheHost) {
  std::mt19937_64 r(23);
  std::vector<int32_t> chain(3001), star(2501, 0), comb(4000);
  for (size_t i = 0; i < chain.size(); ++i) chain[i] = int32_t(i) - 1;
  star[0] = -1;
  for (size_t i = 0; i < comb.size(); ++i) comb[i] = i < 2 ? -1 : int32_t(i % 2 ? i - 1 : i - 2);  // equal subtrees
  std::vector<int32_t> roots(700, -1), crowd;
  for (uint32_t k = 0; k < 9; ++k)
    for (int32_t p : smplxParents()) crowd.push_back(p < 0 ? -1 : p + int32_t(k * smplxParents().size()));
  const std::vector<std::pair<std::string, std::vector<int32_t>>> cases = {
      {"random 5000", randomForest(5000, 64, r, false)},
      {"random 4099, shuffled, 30 roots", randomForest(4099, 16, r, true, 29)},
      {"chain of 3001", chain},
      {"root with 2500 children", star},
      {"two combs of equal halves", comb},
      {"700 roots", roots},
      {"9 SMPL-X trees", crowd},
      {"random 193, shuffled", randomForest(193, 4, r, true)}};
  for (const auto& [name, parents] : cases) {
    SCOPED_TRACE(name);
    const DeviceJointForest host(device(), JointForest(parents)), gpu(device(), backend(), parents);
    EXPECT_EQ(gpu.size(), host.size());
    EXPECT_EQ(gpu.paths(), host.paths());
    ASSERT_EQ(gpu.generations(), host.generations());
    for (uint32_t g = 0; g <= host.generations(); ++g) EXPECT_EQ(gpu.generationStart(g), host.generationStart(g));
    EXPECT_EQ(gpu.widestFanOut(), host.widestFanOut());
    const std::vector<uint32_t> gpuWords = gpu.tables().download<uint32_t>(),
                                hostWords = host.tables().download<uint32_t>();
    auto words = [](const std::vector<uint32_t>& all, const DeviceView& v) {
      return std::vector<uint32_t>(all.begin() + ptrdiff_t(v.offset / 4),
                                   all.begin() + ptrdiff_t(v.offset / 4 + v.count));
    };
    EXPECT_EQ(words(gpuWords, gpu.parents()), words(hostWords, host.parents()));
    EXPECT_EQ(words(gpuWords, gpu.order()), words(hostWords, host.order()));
    EXPECT_EQ(words(gpuWords, gpu.lightStart()), words(hostWords, host.lightStart()));
    // lightStart()[N] light children (the paths less the roots') of the N words reserved.
    const size_t light = words(hostWords, host.lightStart()).back();
    EXPECT_EQ(words(gpuWords, gpu.lightChildren().slice(0, light)),
              words(hostWords, host.lightChildren().slice(0, light)));
  }
}

// Bad parents get the host's errors from the GPU's analysis too: the joint out of range, or the cycle's joints.
TEST_P(JointPropagationOp, AnalysisOnTheGpuRejectsBadParents) {
  std::mt19937_64 r(29);
  std::vector<int32_t> parents = randomForest(1000, 8, r, false);
  parents[0] = 700;  // 700's ancestors lead back to 0: a cycle through the root, the rest of the tree hanging off it
  EXPECT_THAT(errorOf([&] { DeviceJointForest(device(), backend(), parents); }),
              testing::HasSubstr("the parents form a cycle: "));
  parents = randomForest(1000, 8, r, false);
  parents[500] = 600, parents[600] = 500;  // a cycle of two, below which part of the tree hangs
  EXPECT_THAT(errorOf([&] { DeviceJointForest(device(), backend(), parents); }),
              testing::HasSubstr("the parents form a cycle: "));
  parents = randomForest(1000, 8, r, false);
  parents[321] = 1000;
  EXPECT_THAT(errorOf([&] { DeviceJointForest(device(), backend(), parents); }),
              testing::HasSubstr("joint 321 has parent 1000"));
}

// An empty forest is no work on either backend: nothing is written, nothing is refused.
TEST_P(JointPropagationOp, EmptyForestIsNoWork) {
  const JointForest empty(std::vector<int32_t>{});
  const DeviceJointForest onDevice(device(), empty);
  DeviceBuffer one = device().allocate(ElementType::Float32, std::max<size_t>(onDevice.scratchFloats(3), 1));
  one.fill(nanBits());
  JointPropagationArgs fwd{&onDevice, 3, LocalTransform::Rigid, one, one, {}, {}, one};
  fwd.scratch = one;
  JointPropagationBackwardArgs bwd{&onDevice, 3, LocalTransform::Rigid, one, one, {}, {}, one};
  bwd.gradGlobals = one, bwd.adjoint = one, bwd.scratch = one, bwd.gradRotations = one, bwd.gradTranslations = one;
  run([&](const Exec& exec) {
    propagateJoints(exec, fwd);
    propagateJointsBackward(exec, bwd);
  });
  EXPECT_TRUE(std::isnan(one.download<float>(1)[0])) << "nothing written";
}

TEST_P(JointPropagationOp, RejectsBadArguments) {
  const JointForest forest({-1, 0, 1});
  const DeviceJointForest onDevice(device(), forest);
  DeviceBuffer small = device().allocate(ElementType::Float32, 4), big = device().allocate(ElementType::Float32, 1024);
  JointPropagationArgs a{&onDevice, 2, LocalTransform::Rigid, big, big, {}, big, big, {}, {}};
  a.scratch = big;
  a.rotations = small;
  expectRejected([&](const Exec& e) { propagateJoints(e, a); }, "propagateJoints: rotations holds 4 elements");
  a.rotations = big;
  a.skinning = big;
  a.inverseBind = {};
  expectRejected([&](const Exec& e) { propagateJoints(e, a); }, "skinning matrices need inverseBind");
  JointPropagationBackwardArgs b{&onDevice, 2, LocalTransform::Rigid, big, big, {}, big, big};
  b.adjoint = big, b.scratch = big, b.gradRotations = big, b.gradTranslations = big;
  expectRejected([&](const Exec& e) { propagateJointsBackward(e, b); }, "no gradient given");
  JointPropagationArgs none;
  expectRejected([&](const Exec& e) { propagateJoints(e, none); }, "the forest is missing");
  a.scratch = small;
  a.skinning = {};
  expectRejected([&](const Exec& e) { propagateJoints(e, a); }, "propagateJoints: scratch holds 4 elements");
  EXPECT_THAT(errorOf([&] {
                DeviceJointForest(device(), forest, {0, 5});
              }),
              testing::HasSubstr("point 1 is attached to joint 5, not in [0, 3)"));
  const DeviceJointForest withPoints(device(), forest, {2, 0, 2});
  a.forest = &withPoints, a.scratch = big, a.pointsOut = big;
  expectRejected([&](const Exec& e) { propagateJoints(e, a); }, "propagateJoints: points is missing");
  b.forest = &withPoints, b.gradRotations = big, b.gradPointsOut = big, b.points = big, b.gradPoints = small;
  expectRejected([&](const Exec& e) { propagateJointsBackward(e, b); }, "gradPoints holds 4 elements");
  if (backend() == Backend::Vulkan && device().vulkan()->info().isCpu()) {  // lavapipe's loop budget
    std::vector<int32_t> star(70001, 0);
    star[0] = -1;
    const DeviceJointForest wide(device(), JointForest(star));
    DeviceBuffer huge = device().allocate(ElementType::Float32, 70001 * 12);
    JointPropagationArgs d{&wide, 1, LocalTransform::Affine, {}, {}, huge, {}, huge, {}, {}};
    d.scratch = huge;
    expectRejected([&](const Exec& e) { propagateJoints(e, d); }, "more than the 60000 llvmpipe gathers");
  }
}
