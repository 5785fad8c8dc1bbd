// The deformable aggregation's entry points: argument checks and the passes (deformable_aggregation_backend.h); the
// reference is deformable_aggregation_ref.cpp, the backends deformable_aggregation_vk.cpp and
// cuda/src/deformable_aggregation.cu.
#include <algorithm>
#include <initializer_list>

#include "armature/vk/context.h"
#include "buckets.h"
#include "deformable_aggregation_backend.h"
#include "dispatch.h"

namespace armature {

namespace {

// The scratch's regions: each texel's count (then cursor), start, the entries, the scan's block sums, the taps.
// `words` is counted in 64 bits, so checkInputs can refuse sizes past 2^32 words before the offsets are used.
struct ScratchLayout {
  uint64_t pairs, words;
  uint32_t buckets, counts, starts, entries, blockSums, taps;
};
ScratchLayout scratchLayout(const DeformableAggregationSizes& s, uint32_t cameras, uint32_t levels) {
  ScratchLayout l{};
  const uint64_t buckets = uint64_t(s.batch) * s.features;
  l.pairs = uint64_t(s.batch) * s.anchors * s.points * cameras * levels * 4;
  l.words = 2 * buckets + 1 + l.pairs + (buckets + BUCKET_SCAN_BLOCK - 1) / BUCKET_SCAN_BLOCK +
            AGGREGATION_TAP_WORDS * l.pairs;
  l.buckets = uint32_t(buckets);
  l.counts = 0, l.starts = l.buckets, l.entries = 2 * l.buckets + 1;
  l.blockSums = uint32_t(l.entries + l.pairs);
  l.taps = l.blockSums + bucketBlockSums(l.buckets);
  return l;
}

// Fewer invocations than this leave a large GPU mostly idle (the map head's 100 anchors × 256 channels): 4-channel
// lanes are taken only at or above it, and the forward splits anchors' samples below it.
constexpr uint64_t kGpuFillingInvocations = 32768;

// OpChecks already holds every CUDA view to 16 bytes; a Vulkan view's binding offset may be less aligned.
bool starts16ByteAligned(const Exec& exec, const DeviceView& v) {
  return exec.backend() == Backend::Cuda || v.offset % 16 == 0;
}

// 4 channels an invocation (one 16-byte vector per texel, its sample decoded once per 4 channels) where the channels
// and each group split into fours, the views read or written by fours start 16-byte aligned, and `slots` (the
// invocations at 4 channels) still fill the GPU; else 1. Either gives each channel the same sum in the same order.
uint32_t channelLanes(const Exec& exec, const DeformableAggregationSizes& s, uint64_t slots,
                      std::initializer_list<DeviceView> byFours) {
  bool aligned = true;
  for (const DeviceView& v : byFours) aligned = aligned && starts16ByteAligned(exec, v);
  return s.channels % 4 == 0 && (s.channels / s.groups) % 4 == 0 && aligned && slots >= kGpuFillingInvocations ? 4 : 1;
}

// The subgroup size when a subgroup (warp) can take each sample of the sample gradients: 4 channels a lane, so the
// channels come in rounds of 4 × the subgroup size, and a group spans a power of two of a round's lanes (its sum a
// shuffle-xor tree); else 0 (the workgroup per sample).
uint32_t subgroupPerSample(const Exec& exec, const DeformableAggregationSizes& s, const DeviceView& features,
                           const DeviceView& gradOut) {
  uint32_t size = 32;  // CUDA's warp
  if (exec.backend() == Backend::Vulkan) {
    const vk::PhysicalDeviceInfo& info = exec.context().info();
    size = info.subgroupShuffle ? info.subgroupSize : 0;
  }
  const uint32_t perGroup = s.channels / s.groups, groupLanes = perGroup / 4;
  const bool fits = size >= 1 && size <= AGGREGATION_THREADS && (size & (size - 1)) == 0 &&
                    s.channels % (4 * size) == 0 && perGroup % 4 == 0 && groupLanes >= 1 && groupLanes <= size &&
                    (groupLanes & (groupLanes - 1)) == 0 && starts16ByteAligned(exec, features) &&
                    starts16ByteAligned(exec, gradOut);
  return fits ? size : 0;
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
  ARM_CHECK(scratchLayout(s, l.cameras, l.levels).words < UINT32_MAX &&
                uint64_t(s.batch) * s.features * s.channels < UINT32_MAX &&
                uint64_t(s.batch) * s.anchors * s.channels < UINT32_MAX,
            "%s: %u × %u anchors × %u points, %u features × %u channels: indices past 2^32 words", op, s.batch, s.anchors,
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
  return size_t(scratchLayout(sizes, cameras, levels).words);
}

void deformableAggregation(const Exec& exec, const DeformableAggregationArgs& a) {
  const char* op = kForward;
  OpChecks check(op, exec);
  checkInputs(op, check, a.in);
  const DeformableAggregationSizes& s = a.in.sizes;
  check.view("out", a.out, ElementType::Float32, size_t(s.batch) * s.anchors * s.channels);
  if (size_t(s.batch) * s.anchors == 0) return;
  // Few anchor channels with many samples each (the map head): split each anchor's samples over invocations.
  const uint64_t anchors = uint64_t(s.batch) * s.anchors;
  const uint32_t splits = anchors * s.channels < kGpuFillingInvocations &&
                                  uint64_t(s.points) * a.in.maps->layout().cameras >= AGGREGATION_FORWARD_SPLITS
                              ? AGGREGATION_FORWARD_SPLITS
                              : 1;
  const uint32_t lanes = channelLanes(exec, s, anchors * (s.channels / 4) * splits, {a.in.features, a.out});
  AggregationPass pass =
      passOf(AggregationPass::Kind::Forward, a.in, anchors * (s.channels / lanes) * splits, AGGREGATION_THREADS);
  pass.lanes = lanes, pass.splits = splits, pass.outA = a.out;
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
    const uint32_t subgroup = subgroupPerSample(exec, s, a.in.features, a.gradOut);
    AggregationPass pass = subgroup ? passOf(AggregationPass::Kind::SampleGrads, a.in, samples * subgroup,
                                             AGGREGATION_THREADS)
                                    : passOf(AggregationPass::Kind::SampleGrads, a.in, samples, 1);
    pass.subgroup = subgroup;
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
  // Each sorted entry decoded once, for all the channels that gather it.
  AggregationPass taps = passOf(AggregationPass::Kind::Taps, a.in, layout.pairs, AGGREGATION_THREADS);
  taps.push.entries = layout.entries, taps.push.starts = layout.starts, taps.push.taps = layout.taps;
  taps.words = a.scratch;
  if (samples > 0) run(op, exec, taps);
  const uint64_t texels = uint64_t(s.batch) * s.features;
  const uint32_t lanes = channelLanes(exec, s, texels * (s.channels / 4), {a.gradOut, a.gradFeatures});
  AggregationPass gather =
      passOf(AggregationPass::Kind::FeatureGrads, a.in, texels * (s.channels / lanes), AGGREGATION_THREADS);
  gather.lanes = lanes, gather.push.starts = layout.starts, gather.push.taps = layout.taps;
  gather.gradOut = a.gradOut, gather.outA = a.gradFeatures, gather.words = a.scratch;
  run(op, exec, gather);
}

}  // namespace armature
