#include "adam_backend.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"

namespace armature {
namespace vk {

void adamStep(const Exec& exec, const AdamArgs& a) {
  const AdamPush push = adamPush(a);
  computeBarrier(exec.commandBuffer());
  dispatch(exec.commandBuffer(), exec.context().program(shaders::adam, ADAM_BINDINGS, sizeof push),
           groupCount(push.count, ADAM_WORKGROUP_SIZE),
           {a.params.vulkan(), a.grads.vulkan(), a.m.vulkan(), a.v.vulkan()}, push);
}

}  // namespace vk
}  // namespace armature
