// CPU reference of the rasteriser: the same fixed-point coverage and depth tokens as the GPU paths (one
// definition in shaders/shared/raster_cover.h and raster_depth.h), barycentrics in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "armature/error.h"
#include "armature/ops/raster.h"
#include "shared/raster_cover.h"
#include "shared/raster_weights.h"

namespace armature {

void checkRasterDesc(const RasterDesc& d) {
  ARM_CHECK(d.width >= 1 && d.height >= 1 && d.width <= 8192 && d.height <= 8192,
            "rasterize: image size %ux%u outside 1..8192", d.width, d.height);
  ARM_CHECK(d.images >= 1 && d.images <= 65535, "rasterize: %u images outside 1..65535", d.images);
  ARM_CHECK(d.pixels() <= (size_t(1) << 28), "rasterize: %u images of %ux%u exceed 2^28 pixels", d.images, d.width,
            d.height);
}

namespace {
// Positions (B,N,4) or (N,4) and faces (M,3) with every index inside N; returns N.
size_t validateMesh(size_t positionFloats, const std::vector<int32_t>& faces, const RasterDesc& d) {
  checkRasterDesc(d);
  bool instanced = d.batch == RasterBatch::Instanced;
  size_t rows = instanced ? size_t(d.images) * 4 : 4;
  ARM_CHECK(positionFloats % rows == 0, "rasterize: positions must be (%s,4), got %zu floats",
            instanced && d.images > 1 ? "B,N" : "N", positionFloats);
  ARM_CHECK(faces.size() % 3 == 0, "rasterize: faces must be (M,3), got %zu values", faces.size());
  size_t n = positionFloats / rows, m = faces.size() / 3;
  ARM_CHECK(n <= UINT32_MAX && m < UINT32_MAX, "rasterize: more than 2^32 vertices or faces");
  for (size_t i = 0; i < faces.size(); ++i)
    ARM_CHECK(faces[i] >= 0 && size_t(faces[i]) < n, "rasterize: faces[%zu][%zu] = %d outside [0, %zu)", i / 3, i % 3,
              faces[i], n);
  return n;
}
}  // namespace

RasterScratchLayout rasterScratchLayout(const RasterDesc& d, const RasterTuning& tuning) {
  checkRasterDesc(d);
  RasterScratchLayout l{};
  l.zbufferBytes = d.pixels() * 8;
  l.queueOffset = (l.zbufferBytes + 255) / 256 * 256;  // any storage-buffer offset alignment
  // Room for every pixel to be walked about four times by big triangles (depth complexity ~3 plus box waste).
  l.queueCapacity = tuning.queueCapacity
                        ? tuning.queueCapacity
                        : uint32_t(std::max<size_t>(size_t(1) << 16, d.pixels() / RASTER_CHUNK_PIXELS * 4));
  l.queueBytes = (RASTER_QUEUE_HEADER + size_t(l.queueCapacity) * RASTER_QUEUE_ENTRY) * 4;
  l.recordsOffset = (l.queueOffset + l.queueBytes + 255) / 256 * 256;
  l.recordsBytes = size_t(l.queueCapacity) * sizeof(RasterQueued);  // GLSL's float-only layout is no larger
  l.totalBytes = l.recordsOffset + l.recordsBytes;
  return l;
}

std::vector<double> rasterizeBackwardRef(const std::vector<float>& pos, const std::vector<int32_t>& faces,
                                         const RasterDesc& d, const std::vector<int32_t>& ids,
                                         const std::vector<double>& gradBary) {
  const size_t N = validateMesh(pos.size(), faces, d), M = faces.size() / 3;
  const bool instanced = d.batch == RasterBatch::Instanced;
  ARM_CHECK(ids.size() == d.pixels() && gradBary.size() == d.pixels() * 3,
            "rasterize backward: findices (B,H,W) and gradBarycentrics (B,H,W,3) for %u images of %ux%u", d.images,
            d.width, d.height);
  std::vector<double> grad(pos.size(), 0.0);
  for (size_t pix = 0; pix < ids.size(); ++pix) {
    if (ids[pix] <= 0 || size_t(ids[pix]) > M) continue;
    const size_t image = pix / d.imagePixels(), inImage = pix % d.imagePixels(), f = size_t(ids[pix] - 1);
    size_t v[3];
    double c[3][3];  // x, y, w per corner
    for (int k = 0; k < 3; ++k) {
      v[k] = ((instanced ? image * N : 0) + size_t(faces[f * 3 + size_t(k)])) * 4;
      c[k][0] = pos[v[k]], c[k][1] = pos[v[k] + 1], c[k][2] = pos[v[k] + 3];
    }
    const double* g = &gradBary[pix * 3];
    RasterCornerGrads r = rasterPerspectiveWeightsBackward(
        c[0][0], c[0][1], c[0][2], c[1][0], c[1][1], c[1][2], c[2][0], c[2][1], c[2][2], d.width, d.height,
        double(inImage % d.width) + 0.5, double(inImage / d.width) + 0.5, g[0], g[1], g[2]);
    const double corner[3][3] = {{r.x0, r.y0, r.w0}, {r.x1, r.y1, r.w1}, {r.x2, r.y2, r.w2}};
    for (int k = 0; k < 3; ++k)
      grad[v[k]] += corner[k][0], grad[v[k] + 1] += corner[k][1], grad[v[k] + 3] += corner[k][2];
  }
  return grad;
}

RasterPush rasterPush(const RasterDesc& d, uint32_t vertexCount, uint32_t faceCount, const RasterTuning& tuning) {
  return {d.width,
          d.height,
          vertexCount,
          faceCount,
          d.useDepthPrior ? 1u : 0u,
          d.occlusionTruncation,
          1,
          d.images,
          d.batch == RasterBatch::Instanced ? 1u : 0u,
          rasterSmallPixels(d, faceCount, tuning),
          rasterScratchLayout(d, tuning).queueCapacity,
          0,
          rasterTokenTag(d)};
}

uint32_t rasterTokenTag(const RasterDesc& d) { return RASTER_TOKEN_TAGS - 1 - d.scratchCall % RASTER_TOKEN_TAGS; }
bool rasterClearsZBuffer(const RasterDesc& d) { return rasterTokenTag(d) == RASTER_TOKEN_TAGS - 1; }

uint32_t rasterSmallPixels(const RasterDesc& d, uint32_t faceCount, const RasterTuning& tuning) {
  // 2^18 invocations fill a large GPU (132 SMs x 2048 threads). Well below that, the walk of one invocation is
  // latency on an idle machine, so small scenes send more triangles to the chunk queue, which spreads them; above
  // it, throughput counts and boxes of up to 64 pixels stay with one invocation. In between (the default avatar:
  // 21k triangles of a few pixels each), boxes of up to 32 pixels stay: with 8, most of its triangles would go to
  // the queue, a 512-pixel chunk (64 invocations) for a box of ~10 pixels.
  if (tuning.smallTrianglePixels) return std::min<uint32_t>(tuning.smallTrianglePixels, RASTER_SMALL_PIXELS);
  const size_t triangles = size_t(faceCount) * d.images;
  return triangles >= (size_t(1) << 18) ? RASTER_SMALL_PIXELS : triangles >= (size_t(1) << 14) ? 32u : 8u;
}

uint32_t validateRasterInputs(size_t positionFloats, const std::vector<int32_t>& faces, const RasterDesc& d,
                              size_t priorFloats, const std::vector<int32_t>* ranges) {
  const size_t n = validateMesh(positionFloats, faces, d), m = faces.size() / 3;
  const bool instanced = d.batch == RasterBatch::Instanced;
  ARM_CHECK(!d.useDepthPrior || priorFloats == d.pixels(),
            "rasterize: depth prior must be (B,H,W) = %u x %u x %u, got %zu values", d.images, d.height, d.width,
            priorFloats);
  if (!instanced) {
    ARM_CHECK(ranges && ranges->size() == size_t(d.images) * 2,
              "rasterize: Ranges mode needs ranges (B,2) = %u x 2, got %zu", d.images,
              ranges ? ranges->size() : size_t(0));
    for (size_t b = 0; b < d.images; ++b) {
      int64_t first = (*ranges)[b * 2], count = (*ranges)[b * 2 + 1];
      ARM_CHECK(first >= 0 && count >= 0 && first + count <= int64_t(m),
                "rasterize: range %zu = (%lld, %lld) outside the %zu faces", b, (long long)first, (long long)count, m);
    }
  }
  return uint32_t(n);
}

namespace {
// Calls visit(pixel, depthLevel) for every pixel centre the triangle covers under the fill rule; pos points at
// the image's vertices.
template <typename Visit>
void walkTriangle(const float* pos, const std::vector<int32_t>& faces, size_t f, uint32_t W, uint32_t H, Visit visit) {
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

// One image of the batch: its vertices and its faces [first, end).
struct ImageWork {
  const float* pos;
  size_t first, end;
};
ImageWork imageWork(const std::vector<float>& pos, size_t vertices, const std::vector<int32_t>& faces,
                    const RasterDesc& d, const std::vector<int32_t>& ranges, size_t image) {
  if (d.batch == RasterBatch::Instanced) return {pos.data() + image * vertices * 4, 0, faces.size() / 3};
  size_t first = size_t(ranges[image * 2]);
  return {pos.data(), first, first + size_t(ranges[image * 2 + 1])};
}
}  // namespace

std::vector<uint32_t> rasterCoverageRef(const std::vector<float>& pos, const std::vector<int32_t>& faces,
                                        const RasterDesc& d) {
  ARM_CHECK(d.images == 1, "rasterCoverageRef: one image");
  validateRasterInputs(pos.size(), faces, d, 0);
  std::vector<uint32_t> count(d.imagePixels(), 0);
  for (size_t f = 0; f < faces.size() / 3; ++f)
    walkTriangle(pos.data(), faces, f, d.width, d.height, [&](size_t pix, int64_t) { count[pix]++; });
  return count;
}

RasterResult rasterizeRef(const std::vector<float>& pos, const std::vector<int32_t>& faces, const RasterDesc& d,
                          const std::vector<float>& prior, const std::vector<int32_t>& ranges) {
  const size_t vertices = validateRasterInputs(pos.size(), faces, d, prior.size(), &ranges);
  const uint32_t W = d.width, H = d.height;
  const size_t imagePixels = d.imagePixels();
  const uint64_t kEmpty = ~uint64_t(0);  // above every token: tags stop at RASTER_TOKEN_TAGS - 1
  RasterResult r;
  r.findices.assign(d.pixels(), 0);
  r.barycentrics.assign(d.pixels() * 3, 0.f);
  std::vector<uint64_t> z(imagePixels);
  for (size_t image = 0; image < d.images; ++image) {
    ImageWork work = imageWork(pos, vertices, faces, d, ranges, image);
    const float* imagePrior = d.useDepthPrior ? &prior[image * imagePixels] : nullptr;
    std::fill(z.begin(), z.end(), kEmpty);
    for (size_t f = work.first; f < work.end; ++f)
      walkTriangle(work.pos, faces, f, W, H, [&](size_t pix, int64_t level) {
        if (imagePrior && level < rasterPriorLevel(imagePrior[pix], d.occlusionTruncation)) return;
        if (level < 0) return;  // in front of the near plane (the original's depth threshold 0)
        z[pix] = std::min(z[pix], rasterToken(level, uint32_t(f), 0));
      });
    for (uint32_t py = 0; py < H; ++py)
      for (uint32_t px = 0; px < W; ++px) {
        size_t pix = size_t(py) * W + px, out = image * imagePixels + pix;
        if (z[pix] == kEmpty) continue;
        uint64_t face1 = z[pix] & 0xffffffffu;
        r.findices[out] = int32_t(face1);
        size_t f = size_t(face1 - 1);
        double sx[3], sy[3], w[3];
        for (int k = 0; k < 3; ++k) {
          const float* v = &work.pos[size_t(faces[f * 3 + size_t(k)]) * 4];
          sx[k] = rasterScreen(rasterDivide(v[0], v[3]), W);
          sy[k] = rasterScreen(rasterDivide(v[1], v[3]), H);
          w[k] = v[3];
        }
        double cx = px + 0.5, cy = py + 0.5;
        for (int k = 0; k < 3; ++k)
          r.barycentrics[out * 3 + size_t(k)] =
              float(rasterBary(sx[0], sy[0], sx[1], sy[1], sx[2], sy[2], w[0], w[1], w[2], cx, cy, k));
      }
  }
  return r;
}

}  // namespace armature
