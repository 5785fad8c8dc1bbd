#pragma once
// Helpers shared by the rasteriser's tests and the differentiable pipeline's.
#include <cstdint>
#include <vector>

#include "armature/ops/raster.h"
#include "shared/raster_io.h"

namespace armature::test {

// L = Σ g · barycentrics with the visible faces held fixed, in double with the continuous divide: what the
// rasteriser's backward differentiates (the GPU rounds NDC to float first).
inline double barycentricLoss(const std::vector<double>& pos, const std::vector<int32_t>& faces, const RasterDesc& d,
                              const std::vector<int32_t>& ids, const std::vector<double>& g) {
  const size_t N = pos.size() / 4 / d.images;
  const double hx = (d.width - 1) / 2.0, hy = (d.height - 1) / 2.0;
  double loss = 0;
  for (size_t pix = 0; pix < ids.size(); ++pix) {
    if (ids[pix] <= 0) continue;
    const size_t image = pix / d.imagePixels(), inImage = pix % d.imagePixels(), f = size_t(ids[pix] - 1);
    double sx[3], sy[3], w[3];
    for (size_t k = 0; k < 3; ++k) {
      const double* v = &pos[(image * N + size_t(faces[f * 3 + k])) * 4];
      sx[k] = v[0] / v[3] * hx + hx + 0.5, sy[k] = v[1] / v[3] * hy + hy + 0.5, w[k] = v[3];
    }
    const double cx = double(inImage % d.width) + 0.5, cy = double(inImage / d.width) + 0.5;
    for (int k = 0; k < 3; ++k)
      loss +=
          g[pix * 3 + size_t(k)] * rasterBary(sx[0], sy[0], sx[1], sy[1], sx[2], sy[2], w[0], w[1], w[2], cx, cy, k);
  }
  return loss;
}

}  // namespace armature::test
