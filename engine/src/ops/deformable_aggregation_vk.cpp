#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "deformable_aggregation_backend.h"

namespace armature::vk {

namespace {

const shaders::SpirvBlob& programOf(const AggregationPass& p) {
  using Kind = AggregationPass::Kind;
  using namespace shaders;
  const bool four = p.lanes == 4;
  switch (p.kind) {
    case Kind::Forward:
      if (p.splits > 1) return four ? deformable_aggregation_forward_split_lanes4 : deformable_aggregation_forward_split;
      return four ? deformable_aggregation_forward_lanes4 : deformable_aggregation_forward;
    case Kind::SampleGrads: return p.subgroup ? deformable_aggregation_sample_subgroup : deformable_aggregation_sample_grads;
    case Kind::Pairs: return deformable_aggregation_pairs;
    case Kind::Taps: return deformable_aggregation_taps;
    case Kind::FeatureGrads: return four ? deformable_aggregation_feature_grads_lanes4 : deformable_aggregation_feature_grads;
  }
  return deformable_aggregation_forward;
}

}  // namespace

void aggregationPass(const Exec& exec, const AggregationPass& p) {
  VkCommandBuffer cmd = exec.commandBuffer();
  computeBarrier(cmd);
  // An absent view binds the table, which the pass then does not touch.
  auto bound = [&](const DeviceView& v) { return (v.empty() ? p.table : v).vulkan(); };
  dispatch(cmd, exec.context().program(programOf(p), AGGREGATION_BINDINGS, sizeof p.push), p.groupsX,
           {p.table.vulkan(), p.features.vulkan(), p.locations.vulkan(), p.weights.vulkan(), bound(p.gradOut),
            bound(p.outA), bound(p.outB), bound(p.words)},
           p.push, p.groupsY);
}

}  // namespace armature::vk
