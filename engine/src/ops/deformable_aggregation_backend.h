#pragma once
// What both backends of the deformable aggregation share: the passes (shaders/shared/deformable_aggregation_io.h) the entry
// points plan, each run by vk::aggregationPass or cuda::aggregationPass.
#include "armature/ops/deformable_aggregation.h"
#include "shared/deformable_aggregation_io.h"

namespace armature {

struct AggregationPass {
  enum class Kind : uint8_t { Forward, SampleGrads, Pairs, Taps, FeatureGrads };
  Kind kind = Kind::Forward;
  AggregationPush push{};
  uint32_t groupsX = 1, groupsY = 1;
  uint32_t lanes = 1;     // Forward, FeatureGrads: channels an invocation takes (1, or 4 as one 16-byte vector)
  uint32_t splits = 1;    // Forward: invocations an anchor's samples are split over (1 or AGGREGATION_FORWARD_SPLITS)
  uint32_t subgroup = 0;  // SampleGrads: the subgroup (warp) size when a subgroup takes each sample, else 0
  // The AGGREGATION_BINDING_* views (those a pass does not use may be empty).
  DeviceView table, features, locations, weights, gradOut, outA, outB, words;
};

namespace vk {
void aggregationPass(const Exec& exec, const AggregationPass& pass);
}
namespace cuda {
void aggregationPass(const Exec& exec, const AggregationPass& pass);
}

}  // namespace armature
