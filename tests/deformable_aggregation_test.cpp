// Deformable aggregation: featureMapsFormat's layout, the reference's known answers and edges (the strict (0, 1)
// test, zero padding at the border, a level of size 1, groups, NaN locations), every gradient against central
// differences; CUDA and Vulkan against the reference on fresh random inputs of awkward sizes, outputs NaN-poisoned,
// the same bits on a second run; bad arguments refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "armature/error.h"
#include "armature/ops/deformable_aggregation.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

// Random inputs: `shapes` (H, W) per level, the same for every camera (as featureMapsFormat makes them); locations
// uniform in (lo, hi) per coordinate, each pixel coordinate kept 1e-3 away from an integer (where float and double
// could pick different corners, and the location's gradient jumps); values rounded to float.
DeformableAggregationRef randomOp(uint32_t batch, uint32_t cameras, const std::vector<std::pair<int, int>>& shapes,
                                  uint32_t channels, uint32_t groups, uint32_t anchors, uint32_t points, double lo,
                                  double hi) {
  DeformableAggregationRef op;
  FeatureMapLayout& l = op.layout;
  l.cameras = cameras, l.levels = uint32_t(shapes.size());
  int32_t start = 0;
  for (uint32_t cam = 0; cam < cameras; ++cam)
    for (const auto& [H, W] : shapes) {
      l.spatialShape.push_back(H), l.spatialShape.push_back(W), l.scaleStartIndex.push_back(start);
      start += H * W;
    }
  op.sizes = {batch, uint32_t(start), channels, anchors, points, groups};
  op.features = uniform(size_t(batch) * start * channels, -1, 1);
  const size_t samples = size_t(batch) * anchors * points * cameras;
  op.locations = uniform(samples * 2, lo, hi);
  op.weights = uniform(samples * l.levels * groups, -1, 1);
  for (size_t s = 0; s < samples; ++s)
    for (int axis = 0; axis < 2; ++axis) {
      double& v = op.locations[s * 2 + axis];
      for (bool nearKink = true; nearKink;) {
        v = double(float(v));
        nearKink = false;
        for (const auto& [H, W] : shapes) {
          const double pixel = v * (axis ? H : W) - 0.5;
          nearKink = nearKink || std::abs(pixel - std::round(pixel)) < 1e-3;
        }
        if (nearKink) v = uniform(1, lo, hi)[0];
      }
    }
  for (auto* v : {&op.features, &op.weights})
    for (double& x : *v) x = double(float(x));
  return op;
}

}  // namespace

// Two levels (2×3 and 1×2), two cameras, 3 channels, a batch of 2: the column layout, the spatial shape and the
// start index are SparseDrive's (levels contiguous per camera).
TEST(DeformableAggregationRef, FeatureMapsFormatMatchesTheColumnLayout) {
  const uint32_t bs = 2, cams = 2, C = 3;
  FeatureLevel a{2, 3, {}}, b{1, 2, {}};
  for (FeatureLevel* level : {&a, &b})
    for (size_t i = 0; i < size_t(bs) * cams * C * level->height * level->width; ++i)
      level->values.push_back(float(i) + (level == &b ? 1000.0f : 0.0f));
  const FormattedFeatures f = featureMapsFormat({a, b}, bs, cams, C);
  EXPECT_EQ(f.layout.spatialShape, (std::vector<int32_t>{2, 3, 1, 2, 2, 3, 1, 2}));
  EXPECT_EQ(f.layout.scaleStartIndex, (std::vector<int32_t>{0, 6, 8, 14}));
  ASSERT_EQ(f.features.size(), size_t(bs) * 16 * C);
  // Batch 1, camera 1, level 1 (b), texel 1, channel 2: b's (1, 1, 2, 0, 1) = ((1·2 + 1)·3 + 2)·2 + 1.
  EXPECT_EQ(f.features[(1 * 16 + 14 + 1) * C + 2], 1000.0f + float(((1 * 2 + 1) * 3 + 2) * 2 + 1));
  // Batch 0, camera 0, level 0, texel 4, channel 1: a's (0, 0, 1, 1, 1) = 1·6 + 4.
  EXPECT_EQ(f.features[4 * C + 1], 10.0f);
  EXPECT_THAT(errorOf([&] { featureMapsFormat({a}, bs, cams, 4); }),
              testing::HasSubstr("level 0 has 72 values, not (2,2,4,2,3)"));
}

// One 2×2 map, one channel: at a texel's centre the sample is that texel; halfway between two it is their mean; at
// x = 0.1 (pixel −0.3) the left column is off the map and reads 0; x = 0, x = 1 and NaN lie outside (0, 1) and add
// nothing; a weight group scales its channels only.
TEST(DeformableAggregationRef, KnownAnswersAndEdges) {
  DeformableAggregationRef op;
  op.layout = {1, 1, {2, 2}, {0}};
  op.sizes = {1, 4, 2, 1, 1, 2};
  op.features = {1, 10, 2, 20, 3, 30, 4, 40};  // texels (0,0) (0,1) (1,0) (1,1), channels 1 and 10
  op.weights = {1, 0.5};
  auto at = [&](double x, double y) {
    op.locations = {x, y};
    return deformableAggregationRef(op);
  };
  EXPECT_EQ(at(0.25, 0.25), (std::vector<double>{1, 5}));
  EXPECT_EQ(at(0.75, 0.75), (std::vector<double>{4, 20}));
  const std::vector<double> mid = at(0.5, 0.25);
  EXPECT_NEAR(mid[0], 1.5, 1e-12);
  EXPECT_NEAR(mid[1], 7.5, 1e-12);
  const std::vector<double> border = at(0.1, 0.25);  // w = −0.3: 0.7 of texel (0,0), 0.3 of the padding
  EXPECT_NEAR(border[0], 0.7, 1e-12);
  EXPECT_EQ(at(0.0, 0.5), (std::vector<double>{0, 0}));
  EXPECT_EQ(at(1.0, 0.5), (std::vector<double>{0, 0}));
  EXPECT_EQ(at(NAN, 0.5), (std::vector<double>{0, 0}));
  // A level of size 1: every location inside reads its one texel, scaled by the distance to its centre.
  DeformableAggregationRef one = op;
  one.layout = {1, 1, {1, 1}, {0}};
  one.sizes.features = 1, one.features = {2, 4};
  one.locations = {0.5, 0.5};
  EXPECT_EQ(deformableAggregationRef(one), (std::vector<double>{2, 2}));

  DeformableAggregationRef bad = op;
  bad.sizes.groups = 3;
  EXPECT_THAT(errorOf([&] { deformableAggregationRef(bad); }), testing::HasSubstr("2 channels do not split into 3"));
  bad = op, bad.layout.scaleStartIndex = {1};
  EXPECT_THAT(errorOf([&] { deformableAggregationRef(bad); }), testing::HasSubstr("spans features [1, 5), past the 4"));
  bad = op, bad.layout.spatialShape = {0, 2};
  EXPECT_THAT(errorOf([&] { deformableAggregationRef(bad); }), testing::HasSubstr("is 0 × 2"));
  bad = op, bad.weights.pop_back();
  EXPECT_THAT(errorOf([&] { deformableAggregationRef(bad); }), testing::HasSubstr("weights has 1 values"));
}

// Every gradient against central differences in double: step 1e-6 on order-one values leaves truncation ~1e-12 and
// rounding ~1e-10 (the locations' kinks are kept 1e-3 away, far beyond the step), so 1e-6 relative over the whole
// vector is far above both and far below any wrong term. Two cameras, a level of size 1, 6 channels in 3 groups,
// locations over (−0.2, 1.2) so some are skipped and some read the padding.
TEST(DeformableAggregationRef, GradientsMatchFiniteDifferences) {
  const DeformableAggregationRef op = randomOp(2, 2, {{3, 4}, {1, 1}}, 6, 3, 3, 2, -0.2, 1.2);
  const std::vector<double> gradOut = uniform(2 * 3 * 6, -1, 1);
  const DeformableAggregationGradsRef g = deformableAggregationBackwardRef(op, gradOut);
  auto fd = [&](std::vector<double> DeformableAggregationRef::*input) {
    std::vector<double> out((op.*input).size());
    for (size_t i = 0; i < out.size(); ++i) {
      DeformableAggregationRef up = op, down = op;
      (up.*input)[i] += 1e-6, (down.*input)[i] -= 1e-6;
      const std::vector<double> fu = deformableAggregationRef(up), fdn = deformableAggregationRef(down);
      double d = 0;
      for (size_t k = 0; k < fu.size(); ++k) d += gradOut[k] * (fu[k] - fdn[k]);
      out[i] = d / 2e-6;
    }
    return out;
  };
  for (const auto& [name, input, analytic] : {std::tuple{"features", &DeformableAggregationRef::features, &g.features},
                                              {"locations", &DeformableAggregationRef::locations, &g.locations},
                                              {"weights", &DeformableAggregationRef::weights, &g.weights}}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(allClose(*analytic, fd(input), Tol{1e-6 * largest(*analytic), 0}));
    EXPECT_GT(largest(*analytic), 0.0);
  }
}

namespace {

struct DeviceOp {
  DeviceFeatureMaps maps;
  DeviceBuffer features, locations, weights;
  DeformableAggregationInputs in;
  DeviceOp(Device& device, const DeformableAggregationRef& op)
      : maps(device, op.layout, op.sizes.features),
        features(device.upload(cast<float>(op.features))),
        locations(device.upload(cast<float>(op.locations))),
        weights(device.upload(cast<float>(op.weights))) {
    in = {&maps, op.sizes, features, locations, weights};
  }
};

}  // namespace

class DeformableAggregationOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(DeformableAggregationOp);

// Against the reference: 3 cameras × levels 5×7, 1×1 and 3×2, 20 channels in 4 groups (not a multiple of 32), a
// batch of 2, locations over (−0.5, 1.5) (about a quarter of the samples valid) with some exactly 0, 1 and NaN; one
// channel and one group over the detection head's 900 anchors × 13 points × 6 cameras (more samples than one
// dispatch row holds; its texels' lists of taps hold ~1,600 to ~2,900 entries, on both sides of what a workgroup
// sorts in shared memory); a reduced detection head (6 cameras, 4 levels, 64 channels in 8 groups, 13 points; lists
// of a few to hundreds of entries; its gather takes 4 channels an invocation, and its sample gradients a subgroup
// per sample where the subgroup is 8 wide, as lavapipe's); 1,100 anchors of 128 channels, enough that the forward
// takes 4 channels an invocation as it does at the detection head's size, with a subgroup (CUDA's warp) per sample,
// on small maps: a pixel coordinate's float rounding (~ulp(W)) moves the bilinear weights by more than the output's
// 1e-5 allows once the maps are wide and the outputs many (one in 140,000 outputs on 8 × 22 maps); a small map
// head (5 anchors × 300 points × 6 cameras). The forward splits each anchor's samples over invocations in the
// 1-channel, 64-channel and map head cases (4 channels an invocation in the 64-channel one); the 20-channel case
// takes every one-channel path.
// Tolerances: the output to 1e-5 of Σ|w·value| over its terms plus 1e-7 (float sums of that many terms); gradients to
// 1e-5·√terms of the array's largest value. A second run gives the same bits.
TEST_P(DeformableAggregationOp, MatchesReference) {
  struct Case {
    uint32_t batch, cameras;
    std::vector<std::pair<int, int>> shapes;
    uint32_t channels, groups, anchors, points;
    double lo, hi;
  };
  for (const Case& c :
       {Case{2, 3, {{5, 7}, {1, 1}, {3, 2}}, 20, 4, 37, 5, -0.5, 1.5}, Case{1, 6, {{4, 4}}, 1, 1, 900, 13, 0.0, 1.0},
        Case{1, 6, {{16, 44}, {8, 22}, {4, 11}, {2, 6}}, 64, 8, 60, 13, 0.0, 1.0},
        Case{1, 2, {{5, 7}, {3, 2}}, 128, 8, 1100, 2, -0.2, 1.2},
        Case{1, 6, {{8, 22}, {4, 11}}, 32, 4, 5, 300, 0.0, 1.0}}) {
    SCOPED_TRACE(std::to_string(c.batch) + " × " + std::to_string(c.anchors) + " anchors × " +
                 std::to_string(c.points) + " points, " + std::to_string(c.channels) + " channels");
    DeformableAggregationRef op =
        randomOp(c.batch, c.cameras, c.shapes, c.channels, c.groups, c.anchors, c.points, c.lo, c.hi);
    if (c.batch == 2) op.locations[0] = 0, op.locations[3] = 1, op.locations[4] = NAN;
    const DeformableAggregationSizes& s = op.sizes;
    const std::vector<double> want = deformableAggregationRef(op);
    DeformableAggregationRef sizes = op;
    for (auto* v : {&sizes.features, &sizes.weights})
      for (double& x : *v) x = std::abs(x);
    const std::vector<double> scale = deformableAggregationRef(sizes);
    const std::vector<double> gradOut = uniform(want.size(), -1, 1);
    const DeformableAggregationGradsRef wantGrads = deformableAggregationBackwardRef(op, gradOut);

    const DeviceOp d(device(), op);
    DeviceBuffer out = poisoned(device(), want.size()), gradIn = device().upload(cast<float>(gradOut));
    DeviceBuffer gFeatures = poisoned(device(), op.features.size()),
                 gLocations = poisoned(device(), op.locations.size());
    DeviceBuffer gWeights = poisoned(device(), op.weights.size());
    DeviceBuffer scratch = device().allocate(ElementType::UInt32,
                                             deformableAggregationScratchWords(s, op.layout.cameras, op.layout.levels));
    scratch.fill(nanBits());
    auto runAll = [&] {
      run([&](const Exec& exec) {
        deformableAggregation(exec, {.in = d.in, .out = out});
        deformableAggregationBackward(exec, {.in = d.in,
                                             .gradOut = gradIn,
                                             .gradFeatures = gFeatures,
                                             .gradLocations = gLocations,
                                             .gradWeights = gWeights,
                                             .scratch = scratch});
      });
      return std::vector<std::vector<float>>{
          out.download<float>(want.size()), gFeatures.download<float>(op.features.size()),
          gLocations.download<float>(op.locations.size()), gWeights.download<float>(op.weights.size())};
    };
    const auto got = runAll();
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[0][i], want[i], 1e-5 * scale[i] + 1e-7) << "out " << i;
    const size_t terms = size_t(c.points) * c.cameras * c.shapes.size() * 4;
    const auto expectGrad = [&](const std::vector<float>& g, const std::vector<double>& w, size_t n, const char* name) {
      EXPECT_TRUE(allClose(g, w, Tol{1e-5 * std::sqrt(double(n)) * largest(w) + 1e-12, 0})) << name;
    };
    expectGrad(got[1], wantGrads.features, terms * c.anchors, "features");
    expectGrad(got[2], wantGrads.locations, c.channels * c.shapes.size() * 4, "locations");
    expectGrad(got[3], wantGrads.weights, c.channels, "weights");
    const auto again = runAll();
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(std::memcmp(got[k].data(), again[k].data(), got[k].size() * 4), 0) << "output " << k << " differs";
  }
}

// Each gradient alone: asking for the weights' only writes those.
TEST_P(DeformableAggregationOp, BackwardWritesOnlyWhatIsAsked) {
  for (uint32_t channels : {8u, 64u, 128u}) {  // a subgroup per sample: 64 where it is 8 wide, 128 where 32
    SCOPED_TRACE(std::to_string(channels) + " channels");
    const DeformableAggregationRef op = randomOp(1, 2, {{4, 5}}, channels, 2, 10, 3, 0.0, 1.0);
    const std::vector<double> gradOut = uniform(10 * channels, -1, 1);
    const DeformableAggregationGradsRef want = deformableAggregationBackwardRef(op, gradOut);
    const DeviceOp d(device(), op);
    DeviceBuffer gradIn = device().upload(cast<float>(gradOut)), gWeights = poisoned(device(), op.weights.size());
    run([&](const Exec& exec) {
      deformableAggregationBackward(exec, {.in = d.in, .gradOut = gradIn, .gradWeights = gWeights});
    });
    EXPECT_TRUE(allClose(gWeights.download<float>(op.weights.size()), want.weights,
                         Tol{1e-5 * std::sqrt(double(channels)) * largest(want.weights), 0}));
  }
}

// The locations' gradient alone over more channels than the weights' gradient may take (levels × channels past
// AGGREGATION_MAX_LEVEL_CHANNELS): 4,099 channels on one level, 2 levels of 2,052, against the reference.
TEST_P(DeformableAggregationOp, LocationsAloneTakeWideChannels) {
  for (const auto& [levels, channels] : {std::pair{1u, 4099u}, std::pair{2u, 2052u}}) {
    SCOPED_TRACE(std::to_string(levels) + " levels × " + std::to_string(channels) + " channels");
    std::vector<std::pair<int, int>> shapes{{3, 4}, {2, 2}};
    shapes.resize(levels);
    const DeformableAggregationRef op = randomOp(1, 2, shapes, channels, 1, 3, 2, 0.0, 1.0);
    const std::vector<double> gradOut = uniform(size_t(3) * channels, -1, 1);
    const DeformableAggregationGradsRef want = deformableAggregationBackwardRef(op, gradOut);
    const DeviceOp d(device(), op);
    DeviceBuffer gradIn = device().upload(cast<float>(gradOut)), gLocations = poisoned(device(), op.locations.size());
    run([&](const Exec& exec) {
      deformableAggregationBackward(exec, {.in = d.in, .gradOut = gradIn, .gradLocations = gLocations});
    });
    EXPECT_TRUE(allClose(gLocations.download<float>(op.locations.size()), want.locations,
                         Tol{1e-5 * std::sqrt(double(channels) * levels * 4) * largest(want.locations), 0}));
  }
}

TEST_P(DeformableAggregationOp, RejectsBadArguments) {
  const DeformableAggregationRef op = randomOp(1, 2, {{4, 5}}, 8, 2, 10, 3, 0.0, 1.0);
  DeviceOp d(device(), op);
  DeviceBuffer big = device().allocate(ElementType::Float32, 4096), small = device().allocate(ElementType::Float32, 5);
  expectRejected([&](const Exec& e) { deformableAggregation(e, {.in = d.in, .out = small}); },
                 "deformableAggregation: out holds 5");
  DeformableAggregationInputs wrong = d.in;
  wrong.sizes.groups = 3;
  expectRejected([&](const Exec& e) { deformableAggregation(e, {.in = wrong, .out = big}); },
                 "8 channels do not split into 3");
  wrong = d.in, wrong.sizes.features = 41;
  expectRejected([&](const Exec& e) { deformableAggregation(e, {.in = wrong, .out = big}); },
                 "the layout's maps span 40");
  wrong = d.in, wrong.locations = small;
  expectRejected([&](const Exec& e) { deformableAggregation(e, {.in = wrong, .out = big}); }, "locations holds 5");
  expectRejected([&](const Exec& e) { deformableAggregationBackward(e, {.in = d.in, .gradOut = big}); },
                 "no gradient asked for");
  expectRejected(
      [&](const Exec& e) { deformableAggregationBackward(e, {.in = d.in, .gradOut = big, .gradFeatures = big}); },
      "deformableAggregationBackward: scratch");
  FeatureMapLayout past = op.layout;
  past.scaleStartIndex[1] = 30;
  EXPECT_THAT(errorOf([&] { DeviceFeatureMaps(device(), past, 40); }),
              testing::HasSubstr("map (camera 1, level 0) spans features [30, 50), past the 40"));
}
