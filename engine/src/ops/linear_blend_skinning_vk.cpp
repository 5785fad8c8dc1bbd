#include "armature/ops/linear_blend_skinning.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "shared/lbs_io.h"

namespace armature::vk {

void linearBlendSkinning(const Exec& exec, const LinearBlendSkinningArgs& a) {
  const LbsPush push{a.batch, a.weights->vertices(), a.weights->jointCount(), a.weights->influences()};
  computeBarrier(exec.commandBuffer());
  dispatch(exec.commandBuffer(), exec.context().program(shaders::linear_blend_skinning, LBS_BINDINGS, sizeof push),
           groupCount(uint64_t(push.batch) * push.vertices, LBS_WORKGROUP_SIZE),
           {a.rest.vulkan(), a.weights->joints().vulkan(), a.weights->weights().vulkan(), a.skinning.vulkan(),
            a.positions.vulkan()},
           push);
}

}  // namespace armature::vk
