#include "armature/ops/project.h"
#include "armature/shaders.h"
#include "shared/project_io.h"

namespace armature::vk {

void project(const Exec& exec, const ProjectArgs& a) {
  const ProjectPush push = projectPush(a.desc);
  const auto& program = exec.context().program(shaders::project_forward, PROJECT_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), program, groupCount(a.desc.clipFloats() / 4, PROJECT_GROUP),
           {a.points.vulkan(), a.matrices.vulkan(), a.clip.vulkan()}, push);
}

void projectBackward(const Exec& exec, const ProjectBackwardArgs& a) {
  const ProjectPush push = projectPush(a.desc);
  const auto& program = exec.context().program(shaders::project_backward, PROJECT_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), program, groupCount(a.desc.pointFloats() / 3, PROJECT_GROUP),
           {a.gradClip.vulkan(), a.matrices.vulkan(), a.gradPoints.vulkan()}, push);
}

void projectMatrixGrad(const Exec& exec, const ProjectMatrixGradArgs& a) {
  const ProjectPush push = projectPush(a.desc);
  const auto& program = exec.context().program(shaders::project_matrix_grad, PROJECT_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), program, a.desc.views,
           {a.points.vulkan(), a.gradClip.vulkan(), a.gradMatrices.vulkan()}, push);
}

}  // namespace armature::vk
