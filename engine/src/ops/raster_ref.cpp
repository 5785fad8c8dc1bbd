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
  const float* a = &pos[size_t(faces[f * 3]) * 4];
  const float* b = &pos[size_t(faces[f * 3 + 1]) * 4];
  const float* c = &pos[size_t(faces[f * 3 + 2]) * 4];
  RasterTri t = rasterSetup(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], c[0], c[1], c[2], c[3], W, H);
  if (!t.valid) return;
  for (int py = t.minY; py <= t.maxY; ++py)
    for (int px = t.minX; px <= t.maxX; ++px) {
      int64_t level = rasterCover(t, px, py);
      if (level != RASTER_MISS) visit(size_t(py) * W + size_t(px), level);
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
  const uint64_t kEmpty = ~uint64_t(0);  // above every token: levels stop at 2^32 - 2
  std::vector<uint64_t> z(size_t(W) * H, kEmpty);
  size_t M = faces.size() / 3;
  for (size_t f = 0; f < M; ++f)
    walkTriangle(pos, faces, f, W, H, [&](size_t pix, int64_t level) {
      if (d.useDepthPrior && level < rasterDepthLevel(rasterDepth(prior[pix]) + d.occlusionTruncation)) return;
      if (level < 0) return;  // in front of the near plane (the original's depth threshold 0)
      z[pix] = std::min(z[pix], rasterToken(level, uint32_t(f)));
    });
  RasterResult r;
  r.findices.assign(size_t(W) * H, 0);
  r.barycentrics.assign(size_t(W) * H * 3, 0.f);
  for (uint32_t py = 0; py < H; ++py)
    for (uint32_t px = 0; px < W; ++px) {
      size_t pix = size_t(py) * W + px;
      if (z[pix] == kEmpty) continue;
      uint64_t face1 = z[pix] & 0xffffffffu;
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

namespace {
void checkInterpolate(size_t attrSize, uint32_t C, const std::vector<int32_t>& ids, size_t barySize,
                      const std::vector<int32_t>& faces) {
  ARM_CHECK(C >= 1 && attrSize % C == 0, "interpolate: attr must be (N,C) with C >= 1, got %zu values, C=%u", attrSize, C);
  ARM_CHECK(barySize == ids.size() * 3, "interpolate: barycentrics must be (H,W,3) for %zu pixels", ids.size());
  ARM_CHECK(faces.size() % 3 == 0, "interpolate: faces must be (M,3)");
  size_t N = attrSize / C, M = faces.size() / 3;
  for (size_t i = 0; i < ids.size(); ++i)
    ARM_CHECK(ids[i] >= 0 && size_t(ids[i]) <= M, "interpolate: findices[%zu] = %d outside [0, %zu]", i, ids[i], M);
  for (size_t i = 0; i < faces.size(); ++i)
    ARM_CHECK(faces[i] >= 0 && size_t(faces[i]) < N, "interpolate: faces[%zu][%zu] = %d outside [0, %zu)", i / 3, i % 3, faces[i], N);
}
}  // namespace

std::vector<double> interpolateRef(const std::vector<double>& attr, uint32_t C, const std::vector<int32_t>& ids,
                                   const std::vector<double>& bary, const std::vector<int32_t>& faces) {
  checkInterpolate(attr.size(), C, ids, bary.size(), faces);
  std::vector<double> out(ids.size() * C, 0.0);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (!ids[p]) continue;
    size_t f = size_t(ids[p] - 1);
    for (int k = 0; k < 3; ++k)
      for (uint32_t c = 0; c < C; ++c) out[p * C + c] += bary[p * 3 + size_t(k)] * attr[size_t(faces[f * 3 + size_t(k)]) * C + c];
  }
  return out;
}

void interpolateBackwardRef(const std::vector<double>& attr, uint32_t C, const std::vector<int32_t>& ids,
                            const std::vector<double>& bary, const std::vector<int32_t>& faces,
                            const std::vector<double>& gradOut, std::vector<double>& gradAttr, std::vector<double>& gradBary) {
  checkInterpolate(attr.size(), C, ids, bary.size(), faces);
  ARM_CHECK(gradOut.size() == ids.size() * C, "interpolate backward: gradOut must be (H,W,C)");
  gradAttr.assign(attr.size(), 0.0);
  gradBary.assign(bary.size(), 0.0);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (!ids[p]) continue;
    size_t f = size_t(ids[p] - 1);
    for (int k = 0; k < 3; ++k) {
      size_t v = size_t(faces[f * 3 + size_t(k)]);
      double gb = 0;
      for (uint32_t c = 0; c < C; ++c) {
        gradAttr[v * C + c] += bary[p * 3 + size_t(k)] * gradOut[p * C + c];
        gb += attr[v * C + c] * gradOut[p * C + c];
      }
      gradBary[p * 3 + size_t(k)] = gb;
    }
  }
}

}  // namespace armature
