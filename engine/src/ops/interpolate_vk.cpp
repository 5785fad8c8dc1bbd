#include "armature/ops/interpolate.h"
#include "armature/shaders.h"
#include "shared/interpolate_io.h"

namespace armature::vk {

namespace {
InterpolatePush pushOf(const InterpolateDesc& d) {
  return {d.pixels, d.channels, d.vertexCount, d.faceCount, d.imagePixels};
}
}  // namespace

void interpolate(const Exec& exec, const InterpolateArgs& a) {
  const InterpolatePush push = pushOf(a.desc);
  const auto& prog = exec.context().program(shaders::interpolate_forward, INTERP_FORWARD_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), prog, groupCount(a.desc.pixels, INTERP_GROUP),
           {a.attr.vulkan(), a.findices.vulkan(), a.barycentrics.vulkan(), a.faces.vulkan(), a.out.vulkan()}, push);
}

void interpolateBackward(const Exec& exec, const InterpolateBackwardArgs& a) {
  vk::Context& ctx = exec.context();
  ARM_CHECK(ctx.info().float32AtomicAdd,
            "interpolate backward: '%s' lacks float32 buffer atomic add (VK_EXT_shader_atomic_float)",
            ctx.info().name.c_str());
  const InterpolatePush push = pushOf(a.desc);
  const auto& prog = ctx.program(shaders::interpolate_backward, INTERP_BACKWARD_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), prog, groupCount(a.desc.pixels, INTERP_GROUP),
           {a.attr.vulkan(), a.findices.vulkan(), a.barycentrics.vulkan(), a.faces.vulkan(), a.gradOut.vulkan(),
            a.gradAttr.vulkan(), a.gradBarycentrics.vulkan()},
           push);
}

}  // namespace armature::vk
