#include "armature/ops/project.h"

#include "armature/shaders.h"
#include "shared/project_io.h"

namespace armature {

void checkProjectDesc(const ProjectDesc& d) {
  ARM_CHECK(d.views >= 1, "project: views must be >= 1");
  // 32-bit indices on the GPU, with room for a grid stride past the end.
  ARM_CHECK(uint64_t(d.views) * d.points <= (uint64_t(1) << 31), "project: %u views of %u points exceed 2^31 outputs",
            d.views, d.points);
}

ProjectPush projectPush(const ProjectDesc& d) { return {d.views, d.points, d.pointsPerView ? 1u : 0u}; }

namespace {
void checkMatrices(const ProjectDesc& d, size_t floats) {
  ARM_CHECK(floats == size_t(d.views) * 16, "project: %zu matrix floats for %u views (16 each)", floats, d.views);
}
// Element (row, column) of view b's column-major matrix.
double entry(const std::vector<float>& m, uint32_t view, int row, int column) {
  return m[view * 16 + column * 4 + row];
}
}  // namespace

std::vector<double> projectRef(const ProjectDesc& d, const std::vector<double>& points, const std::vector<float>& m) {
  checkProjectDesc(d);
  checkMatrices(d, m.size());
  ARM_CHECK(points.size() == d.pointFloats(), "project: %zu point floats, expected %zu", points.size(),
            d.pointFloats());
  std::vector<double> clip(d.clipFloats());
  for (uint32_t b = 0; b < d.views; ++b)
    for (uint32_t n = 0; n < d.points; ++n) {
      const double* p = &points[((d.pointsPerView ? size_t(b) * d.points : 0) + n) * 3];
      for (int r = 0; r < 4; ++r)
        clip[(size_t(b) * d.points + n) * 4 + r] =
            entry(m, b, r, 0) * p[0] + entry(m, b, r, 1) * p[1] + entry(m, b, r, 2) * p[2] + entry(m, b, r, 3);
    }
  return clip;
}

std::vector<double> projectBackwardRef(const ProjectDesc& d, const std::vector<double>& gradClip,
                                       const std::vector<float>& m) {
  checkProjectDesc(d);
  checkMatrices(d, m.size());
  ARM_CHECK(gradClip.size() == d.clipFloats(), "project backward: %zu gradient floats, expected %zu", gradClip.size(),
            d.clipFloats());
  std::vector<double> grad(d.pointFloats(), 0.0);
  for (uint32_t b = 0; b < d.views; ++b)
    for (uint32_t n = 0; n < d.points; ++n) {
      const double* g = &gradClip[(size_t(b) * d.points + n) * 4];
      double* out = &grad[((d.pointsPerView ? size_t(b) * d.points : 0) + n) * 3];
      for (int c = 0; c < 3; ++c)
        for (int r = 0; r < 4; ++r) out[c] += entry(m, b, r, c) * g[r];
    }
  return grad;
}

std::vector<double> projectMatrixGradRef(const ProjectDesc& d, const std::vector<double>& points,
                                         const std::vector<double>& gradClip) {
  checkProjectDesc(d);
  ARM_CHECK(points.size() == d.pointFloats(), "project matrix gradient: %zu point floats, expected %zu", points.size(),
            d.pointFloats());
  ARM_CHECK(gradClip.size() == d.clipFloats(), "project matrix gradient: %zu gradient floats, expected %zu",
            gradClip.size(), d.clipFloats());
  std::vector<double> grad(size_t(d.views) * 16, 0.0);
  for (uint32_t b = 0; b < d.views; ++b)
    for (uint32_t n = 0; n < d.points; ++n) {
      const double* p = &points[((d.pointsPerView ? size_t(b) * d.points : 0) + n) * 3];
      const double* g = &gradClip[(size_t(b) * d.points + n) * 4];
      for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) grad[b * 16 + c * 4 + r] += g[r] * (c < 3 ? p[c] : 1.0);
    }
  return grad;
}

void projectVk(vk::Context& ctx, VkCommandBuffer cmd, const ProjectDesc& d, const vk::Buffer& points,
               const vk::Buffer& matrices, vk::Buffer& clip) {
  checkProjectDesc(d);
  ARM_CHECK(points.size() >= d.pointFloats() * 4 && matrices.size() >= size_t(d.views) * 64 &&
                clip.size() >= d.clipFloats() * 4,
            "project: a buffer is smaller than its shape");
  if (!d.points) return;
  const ProjectPush push = projectPush(d);
  const auto& program = ctx.program(shaders::project_forward, 3, sizeof push);
  vk::dispatch(cmd, program, vk::groupCount(d.clipFloats() / 4, PROJECT_GROUP),
               {points.view(), matrices.view(), clip.view()}, push);
}

void projectBackwardVk(vk::Context& ctx, VkCommandBuffer cmd, const ProjectDesc& d, const vk::Buffer& gradClip,
                       const vk::Buffer& matrices, vk::Buffer& gradPoints) {
  checkProjectDesc(d);
  ARM_CHECK(gradClip.size() >= d.clipFloats() * 4 && matrices.size() >= size_t(d.views) * 64 &&
                gradPoints.size() >= d.pointFloats() * 4,
            "project backward: a buffer is smaller than its shape");
  if (!d.points) return;
  const ProjectPush push = projectPush(d);
  const auto& program = ctx.program(shaders::project_backward, 3, sizeof push);
  vk::dispatch(cmd, program, vk::groupCount(d.pointFloats() / 3, PROJECT_GROUP),
               {gradClip.view(), matrices.view(), gradPoints.view()}, push);
}

void projectMatrixGradVk(vk::Context& ctx, VkCommandBuffer cmd, const ProjectDesc& d, const vk::Buffer& points,
                         const vk::Buffer& gradClip, vk::Buffer& gradMatrices) {
  checkProjectDesc(d);
  ARM_CHECK(points.size() >= d.pointFloats() * 4 && gradClip.size() >= d.clipFloats() * 4 &&
                gradMatrices.size() >= size_t(d.views) * 64,
            "project matrix gradient: a buffer is smaller than its shape");
  ARM_CHECK(d.views <= 65535, "project matrix gradient: %u views, at most 65535 (one workgroup each)", d.views);
  const ProjectPush push = projectPush(d);
  const auto& program = ctx.program(shaders::project_matrix_grad, 3, sizeof push);
  vk::dispatch(cmd, program, d.views, {points.view(), gradClip.view(), gradMatrices.view()}, push);
}

}  // namespace armature
