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
  int ia = a.faces[f * 3], ib = a.faces[f * 3 + 1], ic = a.faces[f * 3 + 2];
  if (ia < 0 || ib < 0 || ic < 0 || uint32_t(max(ia, max(ib, ic))) >= p.vertexCount) return;
  float4 u = a.positions[ia], v = a.positions[ib], w = a.positions[ic];
  RasterTri t = rasterSetup(u.x, u.y, u.z, u.w, v.x, v.y, v.z, v.w, w.x, w.y, w.z, w.w, p.width, p.height);
  if (!t.valid) return;
  for (int py = t.minY; py <= t.maxY; ++py)
    for (int px = t.minX; px <= t.maxX; ++px) {
      int64_t level = rasterCover(t, px, py);
      if (level == RASTER_MISS) continue;
      size_t pix = size_t(py) * p.width + size_t(px);
      if (p.useDepthPrior && level < rasterDepthLevel(rasterDepth(a.prior[pix]) + p.occlusionTruncation)) continue;
      if (level < 0) continue;  // in front of the near plane (the original's depth threshold 0)
      atomicMin(a.zbuffer + pix, (unsigned long long)rasterToken(level, f));
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
    int face1 = int(token & 0xffffffffull);
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

// The vertex of corner k of pixel pix's face, or -1 for background or invalid ids (never read out of bounds).
__device__ int cornerVertex(const int32_t* ids, const int32_t* faces, uint32_t faceCount, uint32_t vertexCount, size_t pix, int k) {
  int id = ids[pix];
  if (id <= 0 || uint32_t(id) > faceCount) return -1;
  int v = faces[(id - 1) * 3 + k];
  return v >= 0 && uint32_t(v) < vertexCount ? v : -1;
}

__global__ void interpolateKernel(uint32_t pixels, uint32_t C, uint32_t N, const float* attr, const int32_t* ids,
                                  const float* bary, const int32_t* faces, uint32_t M, float* out) {
  size_t total = size_t(pixels) * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    size_t pix = i / C, c = i % C;
    float v = 0;
    for (int k = 0; k < 3; ++k) {
      int vi = cornerVertex(ids, faces, M, N, pix, k);
      if (vi >= 0) v += bary[pix * 3 + k] * attr[size_t(vi) * C + c];
    }
    out[i] = v;
  }
}

__global__ void interpolateBackwardKernel(uint32_t pixels, uint32_t C, uint32_t N, const float* attr, const int32_t* ids,
                                          const float* bary, const int32_t* faces, uint32_t M, const float* gradOut,
                                          float* gradAttr, float* gradBary) {
  for (size_t pix = blockIdx.x * size_t(blockDim.x) + threadIdx.x; pix < pixels; pix += size_t(gridDim.x) * blockDim.x)
    for (int k = 0; k < 3; ++k) {
      int vi = cornerVertex(ids, faces, M, N, pix, k);
      float gb = 0;
      if (vi >= 0)
        for (uint32_t c = 0; c < C; ++c) {
          float g = gradOut[pix * C + c];
          gb += attr[size_t(vi) * C + c] * g;
          atomicAdd(gradAttr + size_t(vi) * C + c, bary[pix * 3 + k] * g);
        }
      gradBary[pix * 3 + k] = gb;
    }
}

}  // namespace

void rasterize(const RasterDesc& d, const float* positions, uint32_t vertexCount, const int32_t* faces, uint32_t faceCount,
               const float* depthPrior, uint64_t* zbuffer, int32_t* findices, float* barycentrics, const Stream& stream) {
  ARM_CHECK(d.width >= 1 && d.height >= 1 && d.width <= 8192 && d.height <= 8192, "rasterize: image size %ux%u outside 1..8192",
            d.width, d.height);
  ARM_CHECK(positions && faces && zbuffer && findices && barycentrics, "cuda::rasterize: null pointer");
  ARM_CHECK(!d.useDepthPrior || depthPrior, "cuda::rasterize: useDepthPrior without a depth prior");
  size_t pixels = size_t(d.width) * d.height;
  cudaStream_t s = raw(stream);
  Params a{{d.width, d.height, vertexCount, faceCount, d.useDepthPrior ? 1u : 0u, d.occlusionTruncation, 1, 0},
           reinterpret_cast<const float4*>(positions), faces, depthPrior, reinterpret_cast<unsigned long long*>(zbuffer)};
  CUDA_CHECK(cudaMemsetAsync(zbuffer, 0xff, pixels * 8, s));  // the empty token: above every fragment
  if (faceCount) {
    trianglesKernel<<<grid(faceCount), 256, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
  }
  resolveKernel<<<grid(pixels), 256, 0, s>>>(a, findices, barycentrics);
  CUDA_CHECK_LAUNCH();
}

void interpolate(uint32_t pixels, uint32_t C, uint32_t N, const float* attr, const int32_t* ids, const float* bary,
                 const int32_t* faces, uint32_t M, float* out, const Stream& stream) {
  ARM_CHECK(C >= 1 && attr && ids && bary && faces && out, "cuda::interpolate: channels must be >= 1 and pointers set");
  if (!pixels) return;
  interpolateKernel<<<grid(size_t(pixels) * C), 256, 0, raw(stream)>>>(pixels, C, N, attr, ids, bary, faces, M, out);
  CUDA_CHECK_LAUNCH();
}

void interpolateBackward(uint32_t pixels, uint32_t C, uint32_t N, const float* attr, const int32_t* ids, const float* bary,
                         const int32_t* faces, uint32_t M, const float* gradOut, float* gradAttr, float* gradBary,
                         const Stream& stream) {
  ARM_CHECK(C >= 1 && attr && ids && bary && faces && gradOut && gradAttr && gradBary,
            "cuda::interpolateBackward: channels must be >= 1 and pointers set");
  if (!pixels) return;
  interpolateBackwardKernel<<<grid(pixels), 256, 0, raw(stream)>>>(pixels, C, N, attr, ids, bary, faces, M, gradOut,
                                                                    gradAttr, gradBary);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
