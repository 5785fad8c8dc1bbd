#include "armature/ops/project.h"

namespace armature {

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

}  // namespace armature
