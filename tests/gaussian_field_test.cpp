// Gaussian fields: the reference's known answers, its every gradient against central differences, degenerate and
// bad inputs; CUDA and Vulkan against the reference on fresh random fields of awkward sizes (chunked on either
// side, 1 to 32 channels, both shapes), outputs NaN-poisoned, the same bits on a second run, bad arguments refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "armature/error.h"
#include "armature/ops/gaussian_field.h"
#include "shared/buckets_io.h"
#include "shared/gaussian_grid_io.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// A random field: points and means in the unit cube's double, scales 0.2 … 0.8, off-diagonals ±0.5, weights ±1;
// values rounded to float, so the GPU sees the reference's inputs.
GaussianFieldRef randomField(uint32_t B, uint32_t N, uint32_t C, GaussianShape shape) {
  GaussianFieldRef f;
  f.shape = shape, f.channels = C;
  f.points = uniform(size_t(B) * 3, -1, 1), f.means = uniform(size_t(N) * 3, -1, 1);
  f.weights = uniform(size_t(N) * C, -1, 1);
  const uint32_t P = gaussianParameterCount(shape);
  f.cholesky = uniform(size_t(N) * P, -0.5, 0.5);
  const std::vector<double> logScale = uniform(size_t(N) * 3, std::log(0.2), std::log(0.8));
  for (size_t i = 0; i < N; ++i)
    for (uint32_t k : P == 1 ? std::vector<uint32_t>{0} : std::vector<uint32_t>{0, 2, 5})
      f.cholesky[i * P + k] = logScale[i * 3 + (k == 0 ? 0 : k == 2 ? 1 : 2)];
  for (auto* v : {&f.points, &f.means, &f.weights, &f.cholesky})
    for (double& x : *v) x = double(float(x));
  return f;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

// One isotropic Gaussian of σ = 2 at the origin: at (2, 0, 0) the distance is 1 and the field w·e^{−½}. An
// anisotropic one with L = [[1,0,0],[1,1,0],[0,0,3]]: (1, 1, 3) solves to z = (1, 0, 1), distance 2.
TEST(GaussianFieldRef, KnownAnswers) {
  GaussianFieldRef iso;
  iso.shape = GaussianShape::Isotropic, iso.channels = 2;
  iso.points = {2, 0, 0}, iso.means = {0, 0, 0}, iso.cholesky = {std::log(2.0)}, iso.weights = {3, -1};
  GaussianFieldValuesRef v = gaussianFieldRef(iso, true);
  EXPECT_NEAR(v.field[0], 3 * std::exp(-0.5), 1e-14);
  EXPECT_NEAR(v.field[1], -std::exp(-0.5), 1e-14);
  EXPECT_NEAR(v.mahalanobis[0], 1.0, 1e-14);
  GaussianFieldRef aniso;
  aniso.points = {1, 1, 3, 0, 0, 0}, aniso.means = {0, 0, 0}, aniso.weights = {1};
  aniso.cholesky = {0, 1, 0, 0, 0, std::log(3.0)};
  v = gaussianFieldRef(aniso, true);
  EXPECT_NEAR(v.mahalanobis[0], 2.0, 1e-14);
  EXPECT_NEAR(v.field[0], std::exp(-1.0), 1e-14);
  EXPECT_NEAR(v.mahalanobis[1], 0.0, 1e-14);
  EXPECT_NEAR(v.field[1], 1.0, 1e-14);
}

// Every gradient of the reference (points, means, all of L's parameters, weights; both shapes, 3 channels) against
// central differences in double: step 1e-6 on order-one values leaves truncation ~1e-12 and rounding ~1e-10, so
// 1e-6 relative (over the whole vector) is far above both and far below any wrong term.
TEST(GaussianFieldRef, GradientsMatchFiniteDifferences) {
  for (GaussianShape shape : {GaussianShape::Anisotropic, GaussianShape::Isotropic}) {
    SCOPED_TRACE(shape == GaussianShape::Isotropic ? "isotropic" : "anisotropic");
    GaussianFieldRef f = randomField(5, 4, 3, shape);
    for (double& x : f.points) x *= 0.5;  // near the Gaussians: every term matters
    const std::vector<double> gradField = uniform(5 * 3, -1, 1);
    const GaussianFieldGradsRef g = gaussianFieldBackwardRef(f, gradField);
    auto fd = [&](std::vector<double> GaussianFieldRef::*input) {
      std::vector<double> out((f.*input).size());
      for (size_t i = 0; i < out.size(); ++i) {
        GaussianFieldRef up = f, down = f;
        (up.*input)[i] += 1e-6, (down.*input)[i] -= 1e-6;
        out[i] = (dot(gaussianFieldRef(up).field, gradField) - dot(gaussianFieldRef(down).field, gradField)) / 2e-6;
      }
      return out;
    };
    const auto rel = [](const std::vector<double>& a, const std::vector<double>& b) {
      double num = 0, den = 0;
      for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
      return std::sqrt(num / std::max(den, 1e-300));
    };
    EXPECT_LT(rel(g.points, fd(&GaussianFieldRef::points)), 1e-6) << "points";
    EXPECT_LT(rel(g.means, fd(&GaussianFieldRef::means)), 1e-6) << "means";
    EXPECT_LT(rel(g.cholesky, fd(&GaussianFieldRef::cholesky)), 1e-6) << "cholesky";
    EXPECT_LT(rel(g.weights, fd(&GaussianFieldRef::weights)), 1e-6) << "weights";
    for (double x : g.cholesky) EXPECT_NE(x, 0.0);  // every parameter reaches the loss
  }
}

// A degenerate Gaussian (a diagonal of e^-28 ≈ 7e-13, or far below the clamp) gives finite values and gradients;
// beyond the clamp its diagonal's gradient is zero. Non-finite values and bad shapes are errors naming the argument.
TEST(GaussianFieldRef, DegenerateAndBadInputs) {
  GaussianFieldRef f = randomField(7, 3, 2, GaussianShape::Anisotropic);
  f.cholesky[0] = -28, f.cholesky[6 + 2] = -80, f.cholesky[12 + 5] = 80;
  const GaussianFieldValuesRef v = gaussianFieldRef(f, true);
  const GaussianFieldGradsRef g = gaussianFieldBackwardRef(f, uniform(14, -1, 1));
  for (const auto* vec : {&v.field, &g.points, &g.means, &g.cholesky, &g.weights})
    for (double x : *vec) EXPECT_TRUE(std::isfinite(x));
  EXPECT_EQ(g.cholesky[6 + 2], 0.0);
  EXPECT_EQ(g.cholesky[12 + 5], 0.0);

  GaussianFieldRef bad = f;
  bad.means[4] = NAN;
  EXPECT_THAT(errorOf([&] { gaussianFieldRef(bad); }), testing::HasSubstr("means[4] is nan"));
  bad = f, bad.cholesky.pop_back();
  EXPECT_THAT(errorOf([&] { gaussianFieldRef(bad); }), testing::HasSubstr("cholesky has 17 values, not (3,6)"));
  bad = f, bad.channels = 33, bad.weights.resize(99);
  EXPECT_THAT(errorOf([&] { gaussianFieldRef(bad); }), testing::HasSubstr("33 channels, not 1 to 32"));
  EXPECT_THAT(errorOf([&] {
                gaussianFieldBackwardRef(f, {1, 2});
              }),
              testing::HasSubstr("gradField has 2 values, not (7,2)"));
}

namespace {

// The inputs on the device, and the views of them.
struct DeviceField {
  DeviceBuffer points, means, cholesky, weights;
  GaussianFieldInputs in;
  DeviceField(Device& device, const GaussianFieldRef& f)
      : points(device.upload(cast<float>(f.points))),
        means(device.upload(cast<float>(f.means))),
        cholesky(device.upload(cast<float>(f.cholesky))),
        weights(device.upload(cast<float>(f.weights))) {
    in = {f.shape, f.pointCount(), f.gaussianCount(), f.channels, points, means, cholesky, weights};
  }
};

// A gradient summing `terms` float terms with independent roundings: within 1e-5·√terms of the array's largest.
void expectGrad(const std::vector<float>& g, const std::vector<double>& w, size_t terms, const char* name) {
  const double tol = 1e-5 * std::sqrt(double(std::max<size_t>(terms, 1))) * largest(w) + 1e-12;
  EXPECT_TRUE(allClose(g, w, Tol{tol, 0})) << name;
}

// Every output of a second run has the first's bits.
void expectSameBits(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& again) {
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(got[k].empty() || std::memcmp(got[k].data(), again[k].data(), got[k].size() * 4) == 0)
        << "output " << k << " differs";
}

}  // namespace

class GaussianFieldOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(GaussianFieldOp);

// Against the reference on awkward sizes: one pair; the point side cut into chunks (500 × 1000, and 3 × 2000); the
// Gaussian side cut into chunks (5000 × 7); 8 and 32 channels; isotropic; no Gaussians at all; and sides of more
// than 32768 rows (several rows per invocation): points with 1 channel (GAUSSIAN_MOST_ROWS) and 8 (MANY), Gaussians
// with 1; and a field a kilometre from the origin, which the points' passes must see relative to the field (their
// multiply-adds would round to ~1e-4 of Σ|w|·e^{−m/2} there). Tolerances:
//   - the field: each value sums N float terms w·e^{−m/2} (exp2 to a few ulps, m to a few ulps relative), so it is
//     held to 1e-5 of Σ|w|·e^{−m/2} over its row (the sum of the terms' sizes) plus 1e-7;
//   - distances: 1e-5 relative plus 1e-5 (x − μ rounds to 1e-7 of the cube and A scales it by ≤ 5);
//   - gradients: each sums B or N terms with independent roundings, held to 1e-5·√terms of the array's largest.
// A second run must give the same bits for every output.
TEST_P(GaussianFieldOp, MatchesReference) {
  struct Case {
    uint32_t points, gaussians, channels;
    GaussianShape shape;
    double offset = 0;  // added to every coordinate
  };
  const auto aniso = GaussianShape::Anisotropic, iso = GaussianShape::Isotropic;
  for (const Case c :
       {Case{1, 1, 1, aniso}, Case{500, 1000, 1, aniso}, Case{3, 2000, 8, aniso}, Case{5000, 7, 2, aniso},
        Case{130, 777, 32, aniso}, Case{1000, 3, 5, iso}, Case{129, 0, 3, aniso}, Case{40001, 3, 1, aniso},
        Case{33003, 2, 8, aniso}, Case{2, 40001, 1, aniso}, Case{700, 300, 2, aniso, 1000}}) {
    SCOPED_TRACE(std::to_string(c.points) + " points × " + std::to_string(c.gaussians) + " Gaussians, " +
                 std::to_string(c.channels) + " channels" + (c.shape == iso ? ", isotropic" : "") +
                 (c.offset != 0 ? ", offset" : ""));
    const uint32_t B = c.points, N = c.gaussians, C = c.channels, P = gaussianParameterCount(c.shape);
    GaussianFieldRef f = randomField(B, N, C, c.shape);
    for (auto* v : {&f.points, &f.means})
      for (double& x : *v) x = double(float(x + c.offset));
    if (N > 2) f.cholesky[P == 1 ? 1 : 6 + 2] = -28;  // one degenerate Gaussian
    const GaussianFieldValuesRef want = gaussianFieldRef(f, true);
    GaussianFieldRef sizes = f;
    for (double& w : sizes.weights) w = std::abs(w);
    const std::vector<double> scale = gaussianFieldRef(sizes).field;
    const std::vector<double> gradField = uniform(size_t(B) * C, -1, 1);
    const GaussianFieldGradsRef wantGrads = gaussianFieldBackwardRef(f, gradField);

    const DeviceField d(device(), f);
    DeviceBuffer field = poisoned(device(), size_t(B) * C), distances = poisoned(device(), size_t(B) * N);
    DeviceBuffer scratch = poisoned(device(), gaussianFieldScratchFloats(B, N, C, false));
    DeviceBuffer gradIn = device().upload(cast<float>(gradField));
    DeviceBuffer gPoints = poisoned(device(), size_t(B) * 3), gMeans = poisoned(device(), size_t(N) * 3);
    DeviceBuffer gChol = poisoned(device(), size_t(N) * P), gWeights = poisoned(device(), size_t(N) * C);
    DeviceBuffer backScratch = poisoned(device(), gaussianFieldScratchFloats(B, N, C, true));
    auto runBoth = [&] {
      run([&](const Exec& exec) {
        gaussianField(exec, {.in = d.in, .field = field, .mahalanobis = distances, .scratch = scratch});
        gaussianFieldBackward(exec, {.in = d.in,
                                     .gradField = gradIn,
                                     .gradPoints = gPoints,
                                     .gradMeans = gMeans,
                                     .gradCholesky = gChol,
                                     .gradWeights = gWeights,
                                     .scratch = backScratch});
      });
      return std::vector<std::vector<float>>{
          field.download<float>(size_t(B) * C),   distances.download<float>(size_t(B) * N),
          gPoints.download<float>(size_t(B) * 3), gMeans.download<float>(size_t(N) * 3),
          gChol.download<float>(size_t(N) * P),   gWeights.download<float>(size_t(N) * C)};
    };
    const auto got = runBoth();
    for (size_t i = 0; i < want.field.size(); ++i)
      ASSERT_NEAR(got[0][i], want.field[i], 1e-5 * scale[i] + 1e-7) << "field " << i;
    for (size_t i = 0; i < want.mahalanobis.size(); ++i) {
      if (N > 2 && i % N == 1) {  // the degenerate one: ill-conditioned (its L⁻¹ cancels terms of 1e12), only huge
        ASSERT_GT(got[1][i], 1e6f) << "distance " << i;
        continue;
      }
      ASSERT_NEAR(got[1][i], want.mahalanobis[i], 1e-5 * want.mahalanobis[i] + 1e-5) << "distance " << i;
    }
    expectGrad(got[2], wantGrads.points, N, "points");
    expectGrad(got[3], wantGrads.means, B, "means");
    expectGrad(got[4], wantGrads.cholesky, B, "cholesky");
    expectGrad(got[5], wantGrads.weights, B, "weights");
    expectSameBits(got, runBoth());
  }
}

// The backward's outputs are each optional: asking for the weights' gradient only writes that one.
TEST_P(GaussianFieldOp, BackwardWritesOnlyWhatIsAsked) {
  const GaussianFieldRef f = randomField(300, 200, 4, GaussianShape::Anisotropic);
  const std::vector<double> gradField = uniform(300 * 4, -1, 1);
  const GaussianFieldGradsRef want = gaussianFieldBackwardRef(f, gradField);
  const DeviceField d(device(), f);
  DeviceBuffer gradIn = device().upload(cast<float>(gradField)), gWeights = poisoned(device(), 200 * 4);
  DeviceBuffer scratch = poisoned(device(), gaussianFieldScratchFloats(300, 200, 4, true));
  run([&](const Exec& exec) {
    gaussianFieldBackward(exec, {.in = d.in, .gradField = gradIn, .gradWeights = gWeights, .scratch = scratch});
  });
  EXPECT_TRUE(allClose(gWeights.download<float>(200 * 4), want.weights,
                       Tol{1e-5 * std::sqrt(300.0) * largest(want.weights), 0}));
}

TEST_P(GaussianFieldOp, RejectsBadArguments) {
  const GaussianFieldRef f = randomField(10, 4, 2, GaussianShape::Anisotropic);
  DeviceField d(device(), f);
  DeviceBuffer big = device().allocate(ElementType::Float32, 4096), small = device().allocate(ElementType::Float32, 5);
  expectRejected([&](const Exec& e) { gaussianField(e, {.in = d.in, .field = small, .scratch = big}); },
                 "gaussianField: field holds 5 elements");
  GaussianFieldInputs wrong = d.in;
  wrong.channels = 33;
  expectRejected([&](const Exec& e) { gaussianField(e, {.in = wrong, .field = big, .scratch = big}); },
                 "33 channels, not 1 to 32");
  wrong = d.in, wrong.shape = GaussianShape::Anisotropic, wrong.cholesky = small;
  expectRejected([&](const Exec& e) { gaussianField(e, {.in = wrong, .field = big, .scratch = big}); },
                 "gaussianField: cholesky holds 5 elements");
  expectRejected([&](const Exec& e) { gaussianFieldBackward(e, {.in = d.in, .gradField = big, .scratch = big}); },
                 "no gradient asked for");
  expectRejected([&](const Exec& e) { gaussianFieldBackward(e, {.in = d.in, .gradField = big, .gradPoints = big}); },
                 "gaussianFieldBackward: scratch");
}

namespace {

// A localised field for culled mode: `small` Gaussians of scales smallMin … smallMax in the unit cube's double,
// `large` of 0.5 … 1 (beyond the grid's percentile: the list every point walks), weights ±1 (one of them below ε: no
// support), one degenerate; points in a box a little larger than the Gaussians', so some fall outside the grid.
GaussianFieldRef localisedField(uint32_t B, uint32_t small, uint32_t large, uint32_t C, GaussianShape shape,
                                double epsilon, double smallMin = 0.02, double smallMax = 0.08) {
  const uint32_t N = small + large, P = gaussianParameterCount(shape);
  GaussianFieldRef f = randomField(B, N, C, shape);
  f.epsilon = epsilon;
  for (double& x : f.points) x *= 1.2;
  const std::vector<double> smallScale = uniform(size_t(N) * 3, std::log(smallMin), std::log(smallMax));
  const std::vector<double> largeScale = uniform(size_t(N) * 3, std::log(0.5), std::log(1.0));
  for (size_t i = 0; i < N; ++i) {
    const auto& scale = i < small ? smallScale : largeScale;
    if (P == 1) {
      f.cholesky[i] = scale[i * 3];
      continue;
    }
    for (int k : {1, 3, 4}) f.cholesky[i * 6 + size_t(k)] *= std::exp(scale[i * 3]);  // off-diagonals to scale
    f.cholesky[i * 6] = scale[i * 3], f.cholesky[i * 6 + 2] = scale[i * 3 + 1],
                   f.cholesky[i * 6 + 5] = scale[i * 3 + 2];
  }
  if (N > 2) {
    for (uint32_t c = 0; c < C; ++c) f.weights[1 * C + c] = 0.5 * epsilon;  // no support
    f.cholesky[size_t(2) * P] = -28;                                        // degenerate
  }
  for (double& x : f.cholesky) x = double(float(x));
  return f;
}

// Per point: how many Gaussians the cut leaves out there, and whether any pair lies within a rounding of its cut
// (float distances may fall on either side of it there).
struct CutCounts {
  std::vector<uint32_t> cut;
  std::vector<bool> nearCut;
};
CutCounts cutCounts(const GaussianFieldRef& f) {
  GaussianFieldRef dense = f;
  dense.epsilon = 0;
  const std::vector<double> m = gaussianFieldRef(dense, true).mahalanobis;
  const size_t B = f.pointCount(), N = f.gaussianCount();
  CutCounts counts{std::vector<uint32_t>(B, 0), std::vector<bool>(B, false)};
  for (size_t i = 0; i < N; ++i) {
    double weightMax = 0;
    for (uint32_t c = 0; c < f.channels; ++c) weightMax = std::max(weightMax, std::abs(f.weights[i * f.channels + c]));
    const double cut = weightMax > f.epsilon ? 2 * std::log(weightMax / f.epsilon) : -1;
    for (size_t b = 0; b < B; ++b) {
      counts.cut[b] += m[b * N + i] > cut;
      counts.nearCut[b] = counts.nearCut[b] || std::abs(m[b * N + i] - cut) < 1e-3 * std::max(1.0, cut);
    }
  }
  return counts;
}

// Points near a cut (where float and double may disagree on whether a term counts, by up to ε) moved to fresh
// uniform places in (lo, hi)³ until none is.
void moveOffCuts(GaussianFieldRef& f, double lo, double hi) {
  for (int round = 0; round < 20; ++round) {
    const CutCounts counts = cutCounts(f);
    bool moved = false;
    for (size_t b = 0; b < f.pointCount(); ++b)
      if (counts.nearCut[b]) {
        const std::vector<double> fresh = uniform(3, lo, hi);
        for (int k = 0; k < 3; ++k) f.points[b * 3 + k] = double(float(fresh[k]));
        moved = true;
      }
    if (!moved) return;
  }
}

}  // namespace

// The reference's culled field against its dense one: each value within (the Gaussians cut there)·ε, the bound the
// header states; the cut changes something (the test could fail), and a Gaussian whose weights are all below ε is
// gone everywhere.
TEST(GaussianFieldRef, CulledFieldIsWithinItsBound) {
  const double epsilon = 1e-3;
  const GaussianFieldRef f = localisedField(400, 300, 5, 3, GaussianShape::Anisotropic, epsilon);
  GaussianFieldRef dense = f;
  dense.epsilon = 0;
  const std::vector<double> culled = gaussianFieldRef(f).field, exact = gaussianFieldRef(dense).field;
  const CutCounts counts = cutCounts(f);
  double largestError = 0;
  for (size_t b = 0; b < f.pointCount(); ++b)
    for (uint32_t c = 0; c < 3; ++c) {
      const double error = std::abs(culled[b * 3 + c] - exact[b * 3 + c]);
      ASSERT_LE(error, counts.cut[b] * epsilon + 1e-15) << "point " << b;
      largestError = std::max(largestError, error);
    }
  EXPECT_GT(largestError, 0.0);
  GaussianFieldRef alone = f;
  alone.means = {f.means[3], f.means[4], f.means[5]},
  alone.cholesky.assign(f.cholesky.begin() + 6, f.cholesky.begin() + 12);
  alone.weights.assign(f.weights.begin() + 3, f.weights.begin() + 6), alone.points = alone.means;
  EXPECT_EQ(gaussianFieldRef(alone).field, std::vector<double>(3, 0.0));
  alone.epsilon = -1;
  EXPECT_THAT(errorOf([&] { gaussianFieldRef(alone); }), testing::HasSubstr("epsilon is -1"));
}

// Culled mode on the GPU against the culled reference (forward and every gradient, as MatchesReference's
// tolerances) and the dense reference (within the bound), on localised fields: anisotropic with 8 channels and
// outsized Gaussians; isotropic with one channel (1,777 points: one workgroup bins them, its sort's last merge
// needed); 32 channels; no Gaussians; and 3,000 Gaussians of 1–2 cm, a grid
// of more cells than the points' binning counts in shared memory (GAUSSIAN_GRID_SHARED_CELLS) and than one workgroup
// of CUDA's one-launch scan takes. Points near a cut (where float and double may disagree) are moved away first.
// Outputs NaN-poisoned; a second build and run gives the same bits.
TEST_P(GaussianFieldOp, CulledMatchesReference) {
  struct Case {
    uint32_t points, small, large, channels;
    GaussianShape shape;
    double epsilon;
    size_t cellsAbove = 0;  // the grid must have more cells than this
    double smallMin = 0.02, smallMax = 0.08;
  };
  const auto aniso = GaussianShape::Anisotropic, iso = GaussianShape::Isotropic;
  for (const Case c : {Case{3001, 2500, 20, 8, aniso, 1e-3, 64}, Case{1777, 1200, 0, 1, iso, 1e-2, 64},
                       Case{300, 250, 3, 32, aniso, 1e-4}, Case{50, 0, 0, 2, aniso, 1e-3},
                       Case{4099, 3000, 0, 1, iso, 1e-3, GAUSSIAN_GRID_SHARED_CELLS, 0.01, 0.02}}) {
    const uint32_t B = c.points, N = c.small + c.large, C = c.channels, P = gaussianParameterCount(c.shape);
    SCOPED_TRACE(std::to_string(B) + " points × " + std::to_string(N) + " Gaussians, " + std::to_string(C) +
                 " channels" + (c.shape == iso ? ", isotropic" : ""));
    GaussianFieldRef f = localisedField(B, c.small, c.large, C, c.shape, c.epsilon, c.smallMin, c.smallMax);
    moveOffCuts(f, -1.2, 1.2);
    const CutCounts counts = cutCounts(f);
    GaussianFieldRef dense = f;
    dense.epsilon = 0;
    const std::vector<double> exact = gaussianFieldRef(dense).field;
    const std::vector<double> want = gaussianFieldRef(f).field;
    GaussianFieldRef sizes = dense;
    for (double& w : sizes.weights) w = std::abs(w);
    const std::vector<double> scale = gaussianFieldRef(sizes).field;
    const std::vector<double> gradField = uniform(size_t(B) * C, -1, 1);
    const GaussianFieldGradsRef wantGrads = gaussianFieldBackwardRef(f, gradField);

    const DeviceField d(device(), f);
    DeviceBuffer grid = device().allocate(ElementType::UInt32, gaussianGridWords(B, N));
    grid.fill(nanBits());
    DeviceBuffer field = poisoned(device(), size_t(B) * C), gradIn = device().upload(cast<float>(gradField));
    DeviceBuffer gPoints = poisoned(device(), size_t(B) * 3), gMeans = poisoned(device(), size_t(N) * 3);
    DeviceBuffer gChol = poisoned(device(), size_t(N) * P), gWeights = poisoned(device(), size_t(N) * C);
    DeviceBuffer scratch = poisoned(device(), gaussianFieldScratchFloats(B, N, C, true));
    auto runAll = [&] {
      run([&](const Exec& exec) {
        buildGaussianGrid(exec, {.in = d.in, .epsilon = float(c.epsilon), .grid = grid});
        gaussianField(exec, {.in = d.in, .field = field, .grid = grid});
        gaussianFieldBackward(exec, {.in = d.in,
                                     .gradField = gradIn,
                                     .gradPoints = gPoints,
                                     .gradMeans = gMeans,
                                     .gradCholesky = gChol,
                                     .gradWeights = gWeights,
                                     .scratch = scratch,
                                     .grid = grid});
      });
      return std::vector<std::vector<float>>{
          field.download<float>(size_t(B) * C), gPoints.download<float>(size_t(B) * 3),
          gMeans.download<float>(size_t(N) * 3), gChol.download<float>(size_t(N) * P),
          gWeights.download<float>(size_t(N) * C)};
    };
    const auto got = runAll();
    const std::vector<uint32_t> header = grid.download<uint32_t>(GAUSSIAN_GRID_HEADER_WORDS);
    const uint32_t* dims = &header[GAUSSIAN_GRID_DIMS];
    EXPECT_GT(size_t(dims[0]) * dims[1] * dims[2], c.cellsAbove);
    size_t nonzero = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[0][i], want[i], 1e-5 * scale[i] + 1e-7) << "field " << i;
      ASSERT_LE(std::abs(got[0][i] - exact[i]), counts.cut[i / C] * c.epsilon + 1e-5 * scale[i] + 1e-7)
          << "field " << i << " past the bound";
      nonzero += want[i] != 0;
    }
    if (N > 0) {
      EXPECT_GT(nonzero, want.size() / 10) << "most points see no Gaussian: a lost term could go unseen";
    }
    expectGrad(got[1], wantGrads.points, N, "points");
    expectGrad(got[2], wantGrads.means, B, "means");
    expectGrad(got[3], wantGrads.cholesky, B, "cholesky");
    expectGrad(got[4], wantGrads.weights, B, "weights");
    expectSameBits(got, runAll());
  }
}

// A crowded grid: 5,000 Gaussians around one point, so every cell's list holds thousands (past the shared-memory
// sort's BUCKET_SORT_SHARED: the in-place network). Every list comes out strictly ascending (the fixed sum order),
// and the field matches the reference (points near a cut moved first, as in CulledMatchesReference).
TEST_P(GaussianFieldOp, CrowdedCellsAreSorted) {
  const uint32_t B = 64, N = 5000;
  GaussianFieldRef f = randomField(B, N, 1, GaussianShape::Anisotropic);
  for (double& x : f.means) x = double(float(x * 0.01));
  for (double& x : f.points) x = double(float(x * 0.1));
  for (size_t i = 0; i < N; ++i)
    for (size_t k : {0, 2, 5}) f.cholesky[i * 6 + k] = double(float(std::log(0.05) + 0.1 * f.cholesky[i * 6 + k]));
  for (size_t i = 0; i < N * 6; ++i)
    if (i % 6 != 0 && i % 6 != 2 && i % 6 != 5) f.cholesky[i] = double(float(f.cholesky[i] * 0.05));
  f.epsilon = 1e-3;
  moveOffCuts(f, -0.1, 0.1);
  const DeviceField d(device(), f);
  DeviceBuffer grid = device().allocate(ElementType::UInt32, gaussianGridWords(B, N));
  DeviceBuffer field = poisoned(device(), B);
  run([&](const Exec& exec) {
    buildGaussianGrid(exec, {.in = d.in, .epsilon = float(f.epsilon), .grid = grid});
    gaussianField(exec, {.in = d.in, .field = field, .grid = grid});
  });
  const std::vector<uint32_t> words = grid.download<uint32_t>();
  const uint32_t cells = gaussianGridCells(N);
  const uint32_t starts = GAUSSIAN_GRID_HEADER_WORDS + GAUSSIAN_GRID_HISTOGRAM_BINS + cells + 1;
  const uint32_t entries = starts + cells + 2;
  size_t longest = 0, unsorted = 0;
  for (uint32_t b = 0; b <= cells; ++b) {
    const uint32_t first = words[starts + b], last = words[starts + b + 1];
    if (last < first) continue;  // past the active cells
    longest = std::max<size_t>(longest, last - first);
    for (uint32_t e = first + 1; e < last; ++e) unsorted += words[entries + e] <= words[entries + e - 1];
  }
  EXPECT_GT(longest, 2 * BUCKET_SORT_SHARED) << "no crowded cell";
  EXPECT_EQ(unsorted, 0u);
  const std::vector<double> want = gaussianFieldRef(f).field;
  GaussianFieldRef sizes = f;
  for (double& w : sizes.weights) w = std::abs(w);
  const std::vector<double> scale = gaussianFieldRef(sizes).field;
  const std::vector<float> got = field.download<float>(B);
  for (size_t i = 0; i < B; ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * scale[i] + 1e-6) << i;
}

// The points' lists the Gaussians' side walks, read back from the grid's tail: every point on the grid once, in its
// own cell's list, each list strictly ascending (the fixed sum order, which the field's values cannot see), and the
// starts rising to the count of them past the used cells. 1, 1,777 (a sort over 2,048 keys with padding) and 2,048
// points (none) are binned by one workgroup (GAUSSIAN_GRID_FEW_POINTS); 3,001 by the passes or CUDA's one launch,
// then sorted. A point within a rounding of a cell's face (float division may put it on either side) is not checked
// for its cell.
TEST_P(GaussianFieldOp, PointListsAreSortedByCell) {
  for (const uint32_t B : {1u, 1777u, 2048u, 3001u}) {
    SCOPED_TRACE(std::to_string(B) + " points");
    const uint32_t N = 303;
    const GaussianFieldRef f = localisedField(B, 300, 3, 1, GaussianShape::Anisotropic, 1e-3);
    const uint32_t cells = gaussianGridCells(N);
    ASSERT_LE(cells, GAUSSIAN_GRID_FEW_POINTS_CELLS);
    const DeviceField d(device(), f);
    const size_t words = gaussianGridWords(B, N);
    DeviceBuffer grid = device().allocate(ElementType::UInt32, words);
    grid.fill(nanBits());
    DeviceBuffer gradIn = device().upload(cast<float>(uniform(B, -1, 1))), gMeans = poisoned(device(), size_t(N) * 3);
    DeviceBuffer scratch = poisoned(device(), gaussianFieldScratchFloats(B, N, 1, true));
    run([&](const Exec& exec) {
      buildGaussianGrid(exec, {.in = d.in, .epsilon = 1e-3f, .grid = grid});
      gaussianFieldBackward(exec,
                            {.in = d.in, .gradField = gradIn, .gradMeans = gMeans, .scratch = scratch, .grid = grid});
    });
    const std::vector<uint32_t> w = grid.download<uint32_t>(words);
    // The grid's tail (gaussian_grid.cpp's layout): the points' counts, starts (cells + 1) and entries, then the
    // scan's block sums.
    const size_t entries = words - bucketBlockSums(cells + 1) - B, starts = entries - (cells + 1);
    float lo[3], hi[3];
    uint32_t dims[3];
    for (int k = 0; k < 3; ++k) {
      lo[k] = gaussianFromOrderedBits(w[GAUSSIAN_GRID_LO + k]),
      hi[k] = gaussianFromOrderedBits(w[GAUSSIAN_GRID_HI + k]);
      dims[k] = w[GAUSSIAN_GRID_DIMS + k];
    }
    float edge;
    std::memcpy(&edge, &w[GAUSSIAN_GRID_EDGE], 4);
    const uint32_t used = dims[0] * dims[1] * dims[2];
    std::vector<int> listOf(B, -1);  // the cell whose list holds each point
    for (uint32_t c = 0; c < used; ++c) {
      ASSERT_LE(w[starts + c], w[starts + c + 1]) << "cell " << c;
      for (uint32_t e = w[starts + c]; e < w[starts + c + 1]; ++e) {
        const uint32_t b = w[entries + e];
        ASSERT_LT(b, B) << "entry " << e;
        ASSERT_EQ(listOf[b], -1) << "point " << b << " listed twice";
        listOf[b] = int(c);
        if (e > w[starts + c]) {
          ASSERT_GT(b, w[entries + e - 1]) << "cell " << c << " not ascending";
        }
      }
    }
    for (uint32_t c = used; c <= cells; ++c) ASSERT_EQ(w[starts + c], w[starts + used]) << "cell " << c;
    size_t checked = 0;
    for (uint32_t b = 0; b < B; ++b) {
      const float x[3] = {float(f.points[b * 3]), float(f.points[b * 3 + 1]), float(f.points[b * 3 + 2])};
      bool inside = true, nearFace = false;
      uint32_t index[3];
      for (int k = 0; k < 3; ++k) {
        inside = inside && x[k] >= lo[k] && x[k] <= hi[k];
        const double t = (double(x[k]) - lo[k]) / edge;
        nearFace = nearFace || std::abs(t - std::round(t)) < 1e-4;
        index[k] = gaussianGridAxis(x[k], lo[k], edge, dims[k]);
      }
      if (nearFace) continue;
      ASSERT_EQ(listOf[b] >= 0, inside) << "point " << b;
      if (!inside) continue;
      ASSERT_EQ(uint32_t(listOf[b]), (index[2] * dims[1] + index[1]) * dims[0] + index[0]) << "point " << b;
      ++checked;
    }
    if (B > 1) {
      EXPECT_GT(checked, B / 2) << "most points on the grid, away from its faces";
    }
  }
}

// More points than CUDA's one-launch binning takes (at most 8 blocks of 2,048 points an SM, on up to 256 SMs): the
// points go through the binning passes instead. Slices of them small enough for one launch give the same bits for the
// field and the points' gradient (each point sums its cell's list in list order, however it was binned), and the
// Gaussians' gradients summed over the slices agree with the whole call's to float rounding; a subset of the points
// matches the culled reference.
TEST_P(GaussianFieldOp, CulledBinsMorePointsThanOneLaunchHolds) {
  // Vulkan bins in passes at any size: there a smaller field (lavapipe would take minutes over 4M points).
  const uint32_t B = backend() == Backend::Cuda ? (1u << 22) + 5 : (1u << 16) + 5, N = 300, slices = 4;
  const uint32_t perSlice = ((B + slices - 1) / slices + 3) & ~3u;  // views start 16-byte aligned
  const GaussianFieldRef f = localisedField(B, N, 0, 1, GaussianShape::Anisotropic, 1e-3);
  const DeviceField d(device(), f);
  DeviceBuffer grid = device().allocate(ElementType::UInt32, gaussianGridWords(B, N));
  DeviceBuffer gradIn = device().upload(cast<float>(uniform(B, -1, 1)));
  DeviceBuffer scratch = poisoned(device(), gaussianFieldScratchFloats(B, N, 1, true));
  auto runOn = [&](uint32_t first, uint32_t count) {
    GaussianFieldInputs in = d.in;
    in.points = count, in.x = d.points.view().slice(size_t(first) * 3, size_t(count) * 3);
    DeviceBuffer field = poisoned(device(), count), gPoints = poisoned(device(), size_t(count) * 3);
    DeviceBuffer gMeans = poisoned(device(), N * 3), gChol = poisoned(device(), N * 6);
    DeviceBuffer gWeights = poisoned(device(), N);
    run([&](const Exec& exec) {
      buildGaussianGrid(exec, {.in = d.in, .epsilon = float(f.epsilon), .grid = grid});
      gaussianField(exec, {.in = in, .field = field, .grid = grid});
      gaussianFieldBackward(exec,
                            {in, gradIn.view().slice(first, count), gPoints, gMeans, gChol, gWeights, scratch, grid});
    });
    return std::vector<std::vector<float>>{field.download<float>(count), gPoints.download<float>(size_t(count) * 3),
                                           gMeans.download<float>(N * 3), gChol.download<float>(N * 6),
                                           gWeights.download<float>(N)};
  };
  const auto whole = runOn(0, B);
  std::vector<std::vector<float>> summed(3);
  for (uint32_t first = 0; first < B; first += perSlice) {
    const uint32_t count = std::min(perSlice, B - first);
    const auto part = runOn(first, count);
    for (size_t k = 0; k < count; ++k) ASSERT_EQ(std::memcmp(&part[0][k], &whole[0][first + k], 4), 0) << first + k;
    ASSERT_EQ(std::memcmp(part[1].data(), &whole[1][size_t(first) * 3], size_t(count) * 12), 0) << "slice " << first;
    for (size_t k = 0; k < 3; ++k) {
      summed[k].resize(part[k + 2].size());
      for (size_t i = 0; i < part[k + 2].size(); ++i) summed[k][i] += part[k + 2][i];
    }
  }
  for (size_t k = 0; k < 3; ++k) {
    float top = 0;
    for (float g : whole[k + 2]) top = std::max(top, std::abs(g));
    EXPECT_GT(top, 0.0f) << "output " << k + 2 << " is all zero";
    for (size_t i = 0; i < summed[k].size(); ++i)
      ASSERT_NEAR(summed[k][i], whole[k + 2][i], 1e-4 * top) << "output " << k + 2 << " entry " << i;
  }
  GaussianFieldRef some = f;
  some.points.clear();
  for (size_t b = 0; b < B; b += 997) some.points.insert(some.points.end(), &f.points[b * 3], &f.points[b * 3 + 3]);
  const std::vector<double> want = gaussianFieldRef(some).field;
  GaussianFieldRef sizes = some;
  for (double& w : sizes.weights) w = std::abs(w);
  const std::vector<double> scale = gaussianFieldRef(sizes).field;
  const std::vector<bool> nearCut = cutCounts(some).nearCut;  // float and double may disagree there by up to ε
  size_t nonzero = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    if (!nearCut[k]) {
      EXPECT_NEAR(whole[0][k * 997], want[k], 1e-5 * scale[k] + 1e-7) << "point " << k * 997;
    }
    nonzero += want[k] != 0;
  }
  EXPECT_GT(nonzero, want.size() / 10) << "most points see no Gaussian: the test would not see a lost one";
}

TEST_P(GaussianFieldOp, CulledModeRejectsBadArguments) {
  const GaussianFieldRef f = randomField(10, 4, 2, GaussianShape::Anisotropic);
  DeviceField d(device(), f);
  DeviceBuffer grid = device().allocate(ElementType::UInt32, gaussianGridWords(10, 4));
  DeviceBuffer floats = device().allocate(ElementType::Float32, gaussianGridWords(10, 4));
  DeviceBuffer small = device().allocate(ElementType::UInt32, 16);
  expectRejected([&](const Exec& e) { buildGaussianGrid(e, {.in = d.in, .epsilon = 0.0f, .grid = grid}); },
                 "epsilon is 0");
  expectRejected([&](const Exec& e) { buildGaussianGrid(e, {.in = d.in, .epsilon = NAN, .grid = grid}); },
                 "epsilon is nan");
  expectRejected([&](const Exec& e) { buildGaussianGrid(e, {.in = d.in, .epsilon = 1e-3f, .grid = small}); },
                 "buildGaussianGrid: grid");
  expectRejected([&](const Exec& e) { buildGaussianGrid(e, {.in = d.in, .epsilon = 1e-3f, .grid = floats}); },
                 "buildGaussianGrid: grid");
  expectRejected(
      [&](const Exec& e) { gaussianField(e, {.in = d.in, .field = floats, .mahalanobis = floats, .grid = grid}); },
      "culled mode (a grid) has none");
}
