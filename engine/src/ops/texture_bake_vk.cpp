#include "armature/ops/texture_bake.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "shared/bake_io.h"

namespace armature::vk {

void bakeSamples(const Exec& exec, const BakeSamplesArgs& a) {
  const BakePush push = bakePush(a.desc);
  dispatch(exec.commandBuffer(), exec.context().program(shaders::bake_samples, BAKE_BINDINGS, sizeof push),
           groupCount(a.desc.texels, BAKE_THREADS),
           {a.positions.vulkan(), a.faces.vulkan(), a.texelFaces.vulkan(), a.texelBary.vulkan(), a.viewFaces.vulkan(),
            a.viewBary.vulkan(), a.matrices.vulkan(), a.locations.vulkan(), a.weights.vulkan()},
           push);
}

}  // namespace armature::vk
