#include "armature/ops/winding_numbers.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "shared/winding_io.h"

namespace armature::vk {

void windingNumbers(const Exec& exec, const WindingNumbersArgs& a) {
  const WindingPush push{a.points, a.mesh->faceCount(), a.distances.empty() ? 0u : 1u, 0};
  computeBarrier(exec.commandBuffer());
  dispatch(exec.commandBuffer(), exec.context().program(shaders::winding_numbers, WINDING_BINDINGS, sizeof push),
           (a.points + WINDING_WORKGROUP_SIZE - 1) / WINDING_WORKGROUP_SIZE,
           {a.x.vulkan(), a.mesh->vertices().vulkan(), a.mesh->faces().vulkan(), a.windings.vulkan(),
            (a.distances.empty() ? a.windings : a.distances).vulkan()},  // unwritten without distances
           push);
}

}  // namespace armature::vk
