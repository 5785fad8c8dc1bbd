// The rasteriser's two passes on CUDA: the same arithmetic as shaders/raster_*.comp, from the shared header.
// Built with -fmad=false so no multiply-add is fused differently from the CPU and GLSL paths.
#include "armature/cuda/raster.h"
#include "check.h"
#include "shared/raster_io.h"

namespace armature::cuda {
namespace {

struct Params {
  RasterPush p;
  const float4* positions;
  const int32_t* faces;
  const float* prior;
  unsigned long long* zbuffer;
};

__device__ void rasterTriangle(const Params& a, uint32_t f) {
  const RasterPush& p = a.p;
  int X[3], Y[3];
  int64_t D[3];
  for (int k = 0; k < 3; ++k) {
    int vi = a.faces[f * 3 + k];
    if (vi < 0 || uint32_t(vi) >= p.vertexCount) return;
    float4 v = a.positions[vi];
    if (!(v.w > 0.f)) return;
    X[k] = rasterFixed(rasterScreen(rasterDivide(v.x, v.w), p.width));
    Y[k] = rasterFixed(rasterScreen(rasterDivide(v.y, v.w), p.height));
    D[k] = rasterDepthLevel(rasterDepth(rasterDivide(v.z, v.w)));
  }
  int64_t area = rasterEdge(X[0], Y[0], X[1], Y[1], X[2], Y[2]);
  if (area == 0) return;
  int s = area > 0 ? 1 : -1;
  int minX = max(0, (min(X[0], min(X[1], X[2])) - 8) / 16 - 1), maxX = min(int(p.width) - 1, (max(X[0], max(X[1], X[2])) - 8) / 16 + 1);
  int minY = max(0, (min(Y[0], min(Y[1], Y[2])) - 8) / 16 - 1), maxY = min(int(p.height) - 1, (max(Y[0], max(Y[1], Y[2])) - 8) / 16 + 1);
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
      int64_t level = (w0 * D[0] + w1 * D[1] + w2 * D[2]) / (s * area);
      size_t pix = size_t(py) * p.width + size_t(px);
      int64_t threshold = 0;
      if (p.useDepthPrior) threshold = rasterDepthLevel(rasterDepth(a.prior[pix]) + p.occlusionTruncation);
      if (level < threshold) continue;
      unsigned long long token = (unsigned long long)rasterTokenLevel(level) * RASTER_FACE_MULT + (f + 1);
      atomicMin(a.zbuffer + pix, token);
    }
}

__global__ void trianglesKernel(Params a) {
  for (uint32_t f = blockIdx.x * blockDim.x + threadIdx.x; f < a.p.triangleCount; f += gridDim.x * blockDim.x)
    rasterTriangle(a, f);
}

__global__ void resolveKernel(Params a, int32_t* findices, float* bary) {
  size_t total = size_t(a.p.width) * a.p.height;
  for (size_t pix = blockIdx.x * size_t(blockDim.x) + threadIdx.x; pix < total; pix += size_t(gridDim.x) * blockDim.x) {
    unsigned long long token = a.zbuffer[pix];
    if (token == ~0ull) {
      findices[pix] = 0;
      bary[pix * 3] = bary[pix * 3 + 1] = bary[pix * 3 + 2] = 0;
      continue;
    }
    int face1 = int(token % RASTER_FACE_MULT);
    findices[pix] = face1;
    double sx[3], sy[3], w[3];
    for (int k = 0; k < 3; ++k) {
      float4 v = a.positions[a.faces[(face1 - 1) * 3 + k]];
      sx[k] = rasterScreen(rasterDivide(v.x, v.w), a.p.width);
      sy[k] = rasterScreen(rasterDivide(v.y, v.w), a.p.height);
      w[k] = v.w;
    }
    double cx = double(pix % a.p.width) + 0.5, cy = double(pix / a.p.width) + 0.5;
    for (int k = 0; k < 3; ++k)
      bary[pix * 3 + k] = float(rasterBary(sx[0], sy[0], sx[1], sy[1], sx[2], sy[2], w[0], w[1], w[2], cx, cy, k));
  }
}

unsigned grid(size_t n) { return unsigned(std::min<size_t>((n + 255) / 256, 65535 * 4)); }

}  // namespace

void rasterize(const RasterDesc& d, const float* positions, uint32_t vertexCount, const int32_t* faces, uint32_t faceCount,
               const float* depthPrior, uint64_t* zbuffer, int32_t* findices, float* barycentrics, const Stream& stream) {
  ARM_CHECK(d.width >= 1 && d.height >= 1 && d.width <= 8192 && d.height <= 8192, "rasterize: image size %ux%u outside 1..8192",
            d.width, d.height);
  ARM_CHECK(positions && faces && zbuffer && findices && barycentrics, "cuda::rasterize: null pointer");
  ARM_CHECK(!d.useDepthPrior || depthPrior, "cuda::rasterize: useDepthPrior without a depth prior");
  size_t pixels = size_t(d.width) * d.height;
  cudaStream_t s = raw(stream);
  Params a{{d.width, d.height, vertexCount, faceCount, d.useDepthPrior ? 1u : 0u, d.occlusionTruncation, 0, 0},
           reinterpret_cast<const float4*>(positions), faces, depthPrior, reinterpret_cast<unsigned long long*>(zbuffer)};
  CUDA_CHECK(cudaMemsetAsync(zbuffer, 0xff, pixels * 8, s));  // the empty token: above every fragment
  if (faceCount) {
    trianglesKernel<<<grid(faceCount), 256, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
  }
  resolveKernel<<<grid(pixels), 256, 0, s>>>(a, findices, barycentrics);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
