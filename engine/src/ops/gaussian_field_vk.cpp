#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "gaussian_field_backend.h"

namespace armature::vk {

namespace {

const shaders::SpirvBlob& variant(const GaussianPass& pass) {
  using Kind = GaussianPass::Kind;
  using namespace shaders;
  const bool many = pass.rowsPerInvocation > 1;
  const SpirvBlob* forward[] = {&gaussian_forward_c1_r1, &gaussian_forward_c1_r8, &gaussian_forward_c8_r1,
                                &gaussian_forward_c8_r4, &gaussian_forward_c32_r1};
  const SpirvBlob* pointGrads[] = {&gaussian_point_grads_c1_r1, &gaussian_point_grads_c1_r8,
                                   &gaussian_point_grads_c8_r1, &gaussian_point_grads_c8_r4,
                                   &gaussian_point_grads_c32_r1};
  const SpirvBlob* gaussianGrads[] = {&gaussian_gaussian_grads_c1_r1, &gaussian_gaussian_grads_c1_r4,
                                      &gaussian_gaussian_grads_c8_r1, &gaussian_gaussian_grads_c8_r4,
                                      &gaussian_gaussian_grads_c32_r1};
  const size_t index = pass.maxChannels == 1 ? (many ? 1 : 0) : pass.maxChannels == 8 ? (many ? 3 : 2) : 4;
  return *(pass.kind == Kind::Forward ? forward : pass.kind == Kind::PointGrads ? pointGrads : gaussianGrads)[index];
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

void gaussianGridPass(const Exec& exec, const GaussianGridPass& p) {
  using Kind = GaussianGridPass::Kind;
  using namespace shaders;
  VkCommandBuffer cmd = exec.commandBuffer();
  computeBarrier(cmd);
  if (p.kind == Kind::Grid) {
    dispatch(cmd, exec.context().program(gaussian_grid, GAUSSIAN_GRID_BINDINGS, sizeof p.push), p.groups,
             {bound(p.points, p.grid), bound(p.means, p.grid), bound(p.cholesky, p.grid), bound(p.weights, p.grid),
              p.grid.vulkan()},
             p.push);
    return;
  }
  const std::vector<BufferView> culledBuffers = {p.points.vulkan(), p.weights.vulkan(), bound(p.gradField, p.points),
                                                 p.out.vulkan(), p.grid.vulkan()};
  if (p.kind == Kind::Gather) {
    dispatch(cmd, exec.context().program(gaussian_culled_gather, GAUSSIAN_CULLED_BINDINGS, sizeof p.push), p.groups,
             culledBuffers, p.push);
    return;
  }
  const size_t index = p.maxChannels == 1 ? 0 : p.maxChannels == 8 ? 1 : 2;
  const SpirvBlob* forward[] = {&gaussian_culled_forward_c1, &gaussian_culled_forward_c8, &gaussian_culled_forward_c32};
  const SpirvBlob* pointGrads[] = {&gaussian_culled_point_grads_c1, &gaussian_culled_point_grads_c8,
                                   &gaussian_culled_point_grads_c32};
  const SpirvBlob* gaussianGrads[] = {&gaussian_culled_gaussian_grads_c1, &gaussian_culled_gaussian_grads_c8,
                                      &gaussian_culled_gaussian_grads_c32};
  const SpirvBlob& blob = *(p.kind == Kind::Forward      ? forward
                            : p.kind == Kind::PointGrads ? pointGrads
                                                         : gaussianGrads)[index];
  dispatch(cmd, exec.context().program(blob, GAUSSIAN_CULLED_BINDINGS, sizeof p.push), p.groups, culledBuffers, p.push);
}

}  // namespace armature::vk
