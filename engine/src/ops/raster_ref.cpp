// CPU reference of the rasteriser: the same fixed-point coverage and depth tokens as the GPU paths (one
// definition in shaders/shared/raster_io.h), barycentrics in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "armature/error.h"
#include "armature/ops/raster.h"
#include "shared/raster_io.h"

namespace armature {

void validateRasterInputs(size_t positionFloats, const std::vector<int32_t>& faces, const RasterDesc& d, size_t priorFloats) {
  ARM_CHECK(d.width >= 1 && d.height >= 1 && d.width <= 8192 && d.height <= 8192,
            "rasterize: image size %ux%u outside 1..8192", d.width, d.height);
  ARM_CHECK(positionFloats % 4 == 0, "rasterize: positions must be (N,4), got %zu floats", positionFloats);
  ARM_CHECK(faces.size() % 3 == 0, "rasterize: faces must be (M,3), got %zu values", faces.size());
  size_t n = positionFloats / 4;
  for (size_t i = 0; i < faces.size(); ++i)
    ARM_CHECK(faces[i] >= 0 && size_t(faces[i]) < n, "rasterize: faces[%zu][%zu] = %d outside [0, %zu)", i / 3, i % 3,
              faces[i], n);
  ARM_CHECK(!d.useDepthPrior || priorFloats == size_t(d.width) * d.height,
            "rasterize: depth prior must be (H,W) = %u x %u, got %zu values", d.height, d.width, priorFloats);
}

namespace {
// Calls visit(pixel, depthLevel) for every pixel centre the triangle covers under the fill rule.
template <typename Visit>
void walkTriangle(const std::vector<float>& pos, const std::vector<int32_t>& faces, size_t f, uint32_t W, uint32_t H,
                  Visit visit) {
  int X[3], Y[3];
  int64_t D[3];
  for (int k = 0; k < 3; ++k) {
    const float* v = &pos[size_t(faces[f * 3 + size_t(k)]) * 4];
    if (!(v[3] > 0)) return;  // w <= 0 or NaN: rejected (documented)
    X[k] = rasterFixed(rasterScreen(rasterDivide(v[0], v[3]), W));
    Y[k] = rasterFixed(rasterScreen(rasterDivide(v[1], v[3]), H));
    D[k] = rasterDepthLevel(rasterDepth(rasterDivide(v[2], v[3])));
  }
  int64_t area = rasterEdge(X[0], Y[0], X[1], Y[1], X[2], Y[2]);
  if (area == 0) return;
  int s = area > 0 ? 1 : -1;
  int minX = std::max(0, (std::min({X[0], X[1], X[2]}) - 8) / 16 - 1), maxX = std::min(int(W) - 1, (std::max({X[0], X[1], X[2]}) - 8) / 16 + 1);
  int minY = std::max(0, (std::min({Y[0], Y[1], Y[2]}) - 8) / 16 - 1), maxY = std::min(int(H) - 1, (std::max({Y[0], Y[1], Y[2]}) - 8) / 16 + 1);
  for (int py = minY; py <= maxY; ++py)
    for (int px = minX; px <= maxX; ++px) {
      int cx = rasterCentre(px), cy = rasterCentre(py);
      int64_t w0 = s * rasterEdge(X[1], Y[1], X[2], Y[2], cx, cy);
      int64_t w1 = s * rasterEdge(X[2], Y[2], X[0], Y[0], cx, cy);
      int64_t w2 = s * rasterEdge(X[0], Y[0], X[1], Y[1], cx, cy);
      if (w0 < 0 || w1 < 0 || w2 < 0) continue;
      if ((w0 == 0 && !rasterOwnsEdge(s * (X[2] - X[1]), s * (Y[2] - Y[1]))) ||
          (w1 == 0 && !rasterOwnsEdge(s * (X[0] - X[2]), s * (Y[0] - Y[2]))) ||
          (w2 == 0 && !rasterOwnsEdge(s * (X[1] - X[0]), s * (Y[1] - Y[0]))))
        continue;
      visit(size_t(py) * W + size_t(px), (w0 * D[0] + w1 * D[1] + w2 * D[2]) / (s * area));
    }
}
}  // namespace

std::vector<uint32_t> rasterCoverageRef(const std::vector<float>& pos, const std::vector<int32_t>& faces, const RasterDesc& d) {
  validateRasterInputs(pos.size(), faces, d, 0);
  std::vector<uint32_t> count(size_t(d.width) * d.height, 0);
  for (size_t f = 0; f < faces.size() / 3; ++f)
    walkTriangle(pos, faces, f, d.width, d.height, [&](size_t pix, int64_t) { count[pix]++; });
  return count;
}

RasterResult rasterizeRef(const std::vector<float>& pos, const std::vector<int32_t>& faces, const RasterDesc& d,
                          const std::vector<float>& prior) {
  validateRasterInputs(pos.size(), faces, d, prior.size());
  const uint32_t W = d.width, H = d.height;
  const uint64_t kEmpty = ~uint64_t(0);  // above every token: (2^32 + 1)(2^31 - 1) + 2^31 < 2^64 - 1
  std::vector<uint64_t> z(size_t(W) * H, kEmpty);
  size_t M = faces.size() / 3;
  for (size_t f = 0; f < M; ++f)
    walkTriangle(pos, faces, f, W, H, [&](size_t pix, int64_t level) {
      int64_t threshold = 0;
      if (d.useDepthPrior) threshold = rasterDepthLevel(rasterDepth(prior[pix]) + d.occlusionTruncation);
      if (level < threshold) return;
      uint64_t token = uint64_t(rasterTokenLevel(level)) * RASTER_FACE_MULT + uint64_t(f + 1);
      z[pix] = std::min(z[pix], token);
    });
  RasterResult r;
  r.findices.assign(size_t(W) * H, 0);
  r.barycentrics.assign(size_t(W) * H * 3, 0.f);
  for (uint32_t py = 0; py < H; ++py)
    for (uint32_t px = 0; px < W; ++px) {
      size_t pix = size_t(py) * W + px;
      if (z[pix] == kEmpty) continue;
      uint64_t face1 = z[pix] % RASTER_FACE_MULT;
      r.findices[pix] = int32_t(face1);
      size_t f = size_t(face1 - 1);
      double sx[3], sy[3], w[3];
      for (int k = 0; k < 3; ++k) {
        const float* v = &pos[size_t(faces[f * 3 + size_t(k)]) * 4];
        sx[k] = rasterScreen(rasterDivide(v[0], v[3]), W);
        sy[k] = rasterScreen(rasterDivide(v[1], v[3]), H);
        w[k] = v[3];
      }
      double cx = px + 0.5, cy = py + 0.5;
      for (int k = 0; k < 3; ++k)
        r.barycentrics[pix * 3 + size_t(k)] = float(rasterBary(sx[0], sy[0], sx[1], sy[1], sx[2], sy[2], w[0], w[1], w[2], cx, cy, k));
    }
  return r;
}

}  // namespace armature
