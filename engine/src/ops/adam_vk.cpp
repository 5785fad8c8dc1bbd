#include "armature/ops/adam.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "shared/adam_io.h"

namespace armature {
AdamPush adamPush(const AdamArgs& args);  // adam.cpp

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
