#include "armature/ops/project.h"

#include "dispatch.h"
#include "shared/project_io.h"

namespace armature {
namespace vk {
void project(const Exec&, const ProjectArgs&);
void projectBackward(const Exec&, const ProjectBackwardArgs&);
void projectMatrixGrad(const Exec&, const ProjectMatrixGradArgs&);
}  // namespace vk
namespace cuda {
void project(const Exec&, const ProjectArgs&);
void projectBackward(const Exec&, const ProjectBackwardArgs&);
void projectMatrixGrad(const Exec&, const ProjectMatrixGradArgs&);
}  // namespace cuda

void checkProjectDesc(const ProjectDesc& d) {
  ARM_CHECK(d.views >= 1, "project: views must be >= 1");
  // 32-bit indices on the GPU, with room for a grid stride past the end.
  ARM_CHECK(uint64_t(d.views) * d.points <= (uint64_t(1) << 31), "project: %u views of %u points exceed 2^31 outputs",
            d.views, d.points);
}

ProjectPush projectPush(const ProjectDesc& d) { return {d.views, d.points, d.pointsPerView ? 1u : 0u}; }

void project(const Exec& exec, const ProjectArgs& a) {
  checkProjectDesc(a.desc);
  OpChecks check("project", exec);
  check.view("points", a.points, ElementType::Float32, a.desc.pointFloats());
  check.view("matrices", a.matrices, ElementType::Float32, size_t(a.desc.views) * 16);
  check.view("clip", a.clip, ElementType::Float32, a.desc.clipFloats());
  if (a.desc.points) dispatch("project", exec, a, &vk::project, ARM_CUDA_BACKEND(project));
}

void projectBackward(const Exec& exec, const ProjectBackwardArgs& a) {
  checkProjectDesc(a.desc);
  OpChecks check("project backward", exec);
  check.view("gradClip", a.gradClip, ElementType::Float32, a.desc.clipFloats());
  check.view("matrices", a.matrices, ElementType::Float32, size_t(a.desc.views) * 16);
  check.view("gradPoints", a.gradPoints, ElementType::Float32, a.desc.pointFloats());
  if (a.desc.points) dispatch("project backward", exec, a, &vk::projectBackward, ARM_CUDA_BACKEND(projectBackward));
}

void projectMatrixGrad(const Exec& exec, const ProjectMatrixGradArgs& a) {
  checkProjectDesc(a.desc);
  ARM_CHECK(a.desc.views <= 65535, "project matrix gradient: %u views, at most 65535 (one workgroup each)",
            a.desc.views);
  OpChecks check("project matrix gradient", exec);
  check.view("points", a.points, ElementType::Float32, a.desc.pointFloats());
  check.view("gradClip", a.gradClip, ElementType::Float32, a.desc.clipFloats());
  check.view("gradMatrices", a.gradMatrices, ElementType::Float32, size_t(a.desc.views) * 16);
  dispatch("project matrix gradient", exec, a, &vk::projectMatrixGrad, ARM_CUDA_BACKEND(projectMatrixGrad));
}

}  // namespace armature
