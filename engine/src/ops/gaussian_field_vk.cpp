#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "gaussian_field_backend.h"

namespace armature::vk {

namespace {

const shaders::SpirvBlob& variant(const GaussianPass& pass) {
  using Kind = GaussianPass::Kind;
  const uint32_t c = pass.maxChannels;
  if (pass.kind == Kind::Forward)
    return c == 1   ? shaders::gaussian_forward_c1
           : c == 8 ? shaders::gaussian_forward_c8
                    : shaders::gaussian_forward_c32;
  if (pass.kind == Kind::PointGrads)
    return c == 1   ? shaders::gaussian_point_grads_c1
           : c == 8 ? shaders::gaussian_point_grads_c8
                    : shaders::gaussian_point_grads_c32;
  return c == 1   ? shaders::gaussian_gaussian_grads_c1
         : c == 8 ? shaders::gaussian_gaussian_grads_c8
                  : shaders::gaussian_gaussian_grads_c32;
}

// An absent view binds a buffer of the pass that the shader then does not touch.
BufferView bound(const DeviceView& view, const DeviceView& standIn) { return (view.empty() ? standIn : view).vulkan(); }

}  // namespace

void gaussianPass(const Exec& exec, const GaussianPass& p) {
  VkCommandBuffer cmd = exec.commandBuffer();
  computeBarrier(cmd);
  if (p.kind == GaussianPass::Kind::Finish) {
    dispatch(cmd, exec.context().program(shaders::gaussian_finish, GAUSSIAN_FINISH_BINDINGS, sizeof p.push), p.groupsX,
             {p.cholesky.vulkan(), p.partials.vulkan(), bound(p.outA, p.partials), bound(p.outB, p.partials),
              bound(p.outC, p.partials)},
             p.push);
    return;
  }
  dispatch(cmd, exec.context().program(variant(p), GAUSSIAN_BINDINGS, sizeof p.push), p.groupsX,
           {p.points.vulkan(), p.means.vulkan(), p.cholesky.vulkan(), p.weights.vulkan(), bound(p.gradField, p.points),
            p.out.vulkan(), bound(p.mahalanobis, p.out)},
           p.push, p.groupsY);
}

}  // namespace armature::vk
