// The deformable aggregation's entry points: argument checks and the passes (deformable_aggregation_backend.h); the
// reference is deformable_aggregation_ref.cpp, the backends deformable_aggregation_vk.cpp and
// cuda/src/deformable_aggregation.cu.
#include <algorithm>

#include "buckets.h"
#include "deformable_aggregation_backend.h"
#include "dispatch.h"

namespace armature {

namespace {

// The scratch's regions: each texel's count (then cursor), start, the entries, the scan's block sums.
struct ScratchLayout {
  uint32_t buckets, counts, starts, entries, blockSums, words;
};
ScratchLayout scratchLayout(const DeformableAggregationSizes& s, uint32_t cameras, uint32_t levels) {
  ScratchLayout l{};
  l.buckets = s.batch * s.features;
  const uint64_t pairs = uint64_t(s.batch) * s.anchors * s.points * cameras * levels * 4;
  l.counts = 0, l.starts = l.buckets, l.entries = 2 * l.buckets + 1;
  l.blockSums = l.entries + uint32_t(pairs);
  l.words = l.blockSums + bucketBlockSums(l.buckets);
  return l;
}

const char* const kForward = "deformableAggregation";

void checkInputs(const char* op, const OpChecks& check, const DeformableAggregationInputs& in) {
  ARM_CHECK(in.maps, "%s: the feature maps' layout is missing", op);
  const DeformableAggregationSizes& s = in.sizes;
  const FeatureMapLayout& l = in.maps->layout();
  ARM_CHECK(s.features == in.maps->features(), "%s: sizes.features is %u, the layout's maps span %u", op, s.features,
            in.maps->features());
  ARM_CHECK(s.channels >= 1 && s.groups >= 1 && s.channels % s.groups == 0,
            "%s: %u channels do not split into %u groups", op, s.channels, s.groups);
  const uint64_t pairs = uint64_t(s.batch) * s.anchors * s.points * l.cameras * l.levels * 4;
  ARM_CHECK(pairs + 2 * uint64_t(s.batch) * s.features + 65536 < UINT32_MAX &&
                uint64_t(s.batch) * s.features * s.channels < UINT32_MAX &&
                uint64_t(s.batch) * s.anchors * s.channels < UINT32_MAX,
            "%s: %u × %u anchors × %u points, %u features × %u channels: indices past 2^32", op, s.batch, s.anchors,
            s.points, s.features, s.channels);
  const size_t samples = size_t(s.batch) * s.anchors * s.points * l.cameras;
  check.view("features", in.features, ElementType::Float32, size_t(s.batch) * s.features * s.channels);
  check.view("locations", in.locations, ElementType::Float32, samples * 2);
  check.view("weights", in.weights, ElementType::Float32, samples * l.levels * s.groups);
}

AggregationPass passOf(AggregationPass::Kind kind, const DeformableAggregationInputs& in, uint64_t invocations,
                       uint32_t threads) {
  AggregationPass pass;
  pass.kind = kind;
  const DeformableAggregationSizes& s = in.sizes;
  const FeatureMapLayout& l = in.maps->layout();
  pass.push = {s.batch, s.features, s.channels, s.anchors, s.points, l.cameras, l.levels, s.groups,
               0,       0,          0,          0,         0,        0,         0,        0};
  const uint64_t groups = std::max<uint64_t>(1, (invocations + threads - 1) / threads);
  pass.groupsX = uint32_t(std::min<uint64_t>(groups, 65535));
  pass.groupsY = uint32_t((groups + pass.groupsX - 1) / pass.groupsX);
  pass.push.groupsX = pass.groupsX;
  pass.table = in.maps->table(), pass.features = in.features, pass.locations = in.locations;
  pass.weights = in.weights;
  return pass;
}

void run(const char* op, const Exec& exec, const AggregationPass& pass) {
  dispatch(op, exec, pass, &vk::aggregationPass, ARM_CUDA_BACKEND(aggregationPass));
}

}  // namespace

DeviceFeatureMaps::DeviceFeatureMaps(Device& device, const FeatureMapLayout& layout, uint32_t features)
    : m_layout(layout), m_features(features) {
  validateFeatureMapLayout(layout, features);
  std::vector<int32_t> table;
  for (size_t m = 0; m < size_t(layout.cameras) * layout.levels; ++m)
    table.insert(table.end(), {layout.spatialShape[m * 2], layout.spatialShape[m * 2 + 1], layout.scaleStartIndex[m]});
  m_table = device.upload(table);
}

size_t deformableAggregationScratchWords(const DeformableAggregationSizes& sizes, uint32_t cameras, uint32_t levels) {
  return scratchLayout(sizes, cameras, levels).words;
}

void deformableAggregation(const Exec& exec, const DeformableAggregationArgs& a) {
  const char* op = kForward;
  OpChecks check(op, exec);
  checkInputs(op, check, a.in);
  const DeformableAggregationSizes& s = a.in.sizes;
  check.view("out", a.out, ElementType::Float32, size_t(s.batch) * s.anchors * s.channels);
  if (size_t(s.batch) * s.anchors == 0) return;
  AggregationPass pass =
      passOf(AggregationPass::Kind::Forward, a.in, uint64_t(s.batch) * s.anchors * s.channels, AGGREGATION_THREADS);
  pass.outA = a.out;
  run(op, exec, pass);
}

void deformableAggregationBackward(const Exec& exec, const DeformableAggregationBackwardArgs& a) {
  const char* op = "deformableAggregationBackward";
  OpChecks check(op, exec);
  checkInputs(op, check, a.in);
  const DeformableAggregationSizes& s = a.in.sizes;
  const FeatureMapLayout& l = a.in.maps->layout();
  const size_t samples = size_t(s.batch) * s.anchors * s.points * l.cameras;
  check.view("gradOut", a.gradOut, ElementType::Float32, size_t(s.batch) * s.anchors * s.channels);
  check.optionalView("gradFeatures", a.gradFeatures, ElementType::Float32, size_t(s.batch) * s.features * s.channels);
  check.optionalView("gradLocations", a.gradLocations, ElementType::Float32, samples * 2);
  check.optionalView("gradWeights", a.gradWeights, ElementType::Float32, samples * l.levels * s.groups);
  ARM_CHECK(!a.gradFeatures.empty() || !a.gradLocations.empty() || !a.gradWeights.empty(), "%s: no gradient asked for",
            op);
  ARM_CHECK(size_t(l.levels) * s.channels <= AGGREGATION_MAX_LEVEL_CHANNELS || a.gradWeights.empty(),
            "%s: %u levels × %u channels: the weights' gradient takes at most %u", op, l.levels, s.channels,
            AGGREGATION_MAX_LEVEL_CHANNELS);
  const ScratchLayout layout = scratchLayout(s, l.cameras, l.levels);
  if (!a.gradFeatures.empty()) check.view("scratch", a.scratch, ElementType::UInt32, layout.words);
  if ((!a.gradLocations.empty() || !a.gradWeights.empty()) && samples > 0) {
    AggregationPass pass = passOf(AggregationPass::Kind::SampleGrads, a.in, samples, 1);
    pass.push.mode = (a.gradLocations.empty() ? 0u : AGGREGATION_GRAD_LOCATIONS) |
                     (a.gradWeights.empty() ? 0u : AGGREGATION_GRAD_WEIGHTS);
    pass.gradOut = a.gradOut, pass.outA = a.gradLocations, pass.outB = a.gradWeights;
    run(op, exec, pass);
  }
  if (a.gradFeatures.empty() || layout.buckets == 0) return;
  // Each texel's bucket of the sample corners that touch it, sorted; then a gather per texel and channel.
  const BucketLists lists{a.scratch, layout.buckets, layout.counts, layout.starts, layout.entries, layout.blockSums};
  clearBuckets(op, exec, lists);
  AggregationPass pairs = passOf(AggregationPass::Kind::Pairs, a.in, samples * l.levels, AGGREGATION_THREADS);
  pairs.push.counts = layout.counts, pairs.push.entries = layout.entries, pairs.push.starts = layout.starts;
  pairs.words = a.scratch;
  if (samples > 0) run(op, exec, pairs);
  scanBuckets(op, exec, lists);
  pairs.push.mode = AGGREGATION_PAIRS_FILL;
  if (samples > 0) run(op, exec, pairs);
  sortBuckets(op, exec, lists);
  AggregationPass gather = passOf(AggregationPass::Kind::FeatureGrads, a.in,
                                  uint64_t(s.batch) * s.features * s.channels, AGGREGATION_THREADS);
  gather.push.counts = layout.counts, gather.push.entries = layout.entries, gather.push.starts = layout.starts;
  gather.gradOut = a.gradOut, gather.outA = a.gradFeatures, gather.words = a.scratch;
  run(op, exec, gather);
}

}  // namespace armature
