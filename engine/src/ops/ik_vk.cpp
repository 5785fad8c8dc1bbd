#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "ik_backend.h"

namespace armature {
namespace vk {

void ikStep(const Exec& exec, const IkStepArgs& a) {
  const IkPush push = ikPush(a);
  dispatch(exec.commandBuffer(), exec.context().program(shaders::ik, IK_BINDINGS, sizeof push), 1,
           {a.joints.vulkan(), a.gradPose.vulkan(), a.gradTransl.vulkan(), a.targets.vulkan(), a.pose.vulkan(),
            a.transl.vulkan(), a.bounds.vulkan()},
           push);
}

}  // namespace vk
}  // namespace armature
