#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "deformable_aggregation_backend.h"

namespace armature::vk {

void aggregationPass(const Exec& exec, const AggregationPass& p) {
  using Kind = AggregationPass::Kind;
  using namespace shaders;
  VkCommandBuffer cmd = exec.commandBuffer();
  computeBarrier(cmd);
  const SpirvBlob& blob = p.kind == Kind::Forward       ? aggregation_forward
                          : p.kind == Kind::SampleGrads ? aggregation_sample_grads
                          : p.kind == Kind::Pairs       ? aggregation_pairs
                                                        : aggregation_feature_grads;
  // An absent view binds the table, which the pass then does not touch.
  auto bound = [&](const DeviceView& v) { return (v.empty() ? p.table : v).vulkan(); };
  dispatch(cmd, exec.context().program(blob, AGGREGATION_BINDINGS, sizeof p.push), p.groupsX,
           {p.table.vulkan(), p.features.vulkan(), p.locations.vulkan(), p.weights.vulkan(), bound(p.gradOut),
            bound(p.outA), bound(p.outB), bound(p.words)},
           p.push, p.groupsY);
}

}  // namespace armature::vk
