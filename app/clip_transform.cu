// The viewer's clip transform on CUDA (shaders/clip_transform.comp is the Vulkan one).
#include "app/clip_transform.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "armature/error.h"
#include "shared/render_io.h"

namespace armature::app {
namespace {
void check(cudaError_t e) {
  if (e != cudaSuccess)
    throw Error(std::string("transformToClip: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

struct Matrix {
  float m[16];
};
// As shaders/clip_transform.comp: the transform, and the pixel bounds reduced per block, then four global atomics.
__global__ void clipKernel(const float* positions, uint32_t count, Matrix a, float4* clip, uint32_t width,
                           uint32_t height, uint32_t* bounds) {
  __shared__ uint32_t block[4];
  if (threadIdx.x == 0) block[0] = block[1] = ~0u, block[2] = block[3] = 0;
  __syncthreads();
  uint32_t lo[2] = {~0u, ~0u}, hi[2] = {0, 0}, size[2] = {width, height};
  const float* m = a.m;
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < count; v += gridDim.x * blockDim.x) {
    float x = positions[v * 3], y = positions[v * 3 + 1], z = positions[v * 3 + 2];
    float4 c = make_float4(m[0] * x + m[4] * y + m[8] * z + m[12], m[1] * x + m[5] * y + m[9] * z + m[13],
                           m[2] * x + m[6] * y + m[10] * z + m[14], m[3] * x + m[7] * y + m[11] * z + m[15]);
    clip[v] = c;
    float p[2] = {c.x, c.y};
    for (int k = 0; k < 2; ++k) {
      bool front = c.w > 0.0f;
      lo[k] = min(lo[k], front ? clipBoundsLow(p[k] / c.w, size[k]) : 0u);
      hi[k] = max(hi[k], front ? clipBoundsHigh(p[k] / c.w, size[k]) : size[k] - 1u);
    }
  }
  atomicMin(&block[0], lo[0]), atomicMin(&block[1], lo[1]), atomicMax(&block[2], hi[0]), atomicMax(&block[3], hi[1]);
  __syncthreads();
  if (threadIdx.x == 0)
    atomicMin(&bounds[0], block[0]), atomicMin(&bounds[1], block[1]), atomicMax(&bounds[2], block[2]),
        atomicMax(&bounds[3], block[3]);
}
}  // namespace

void transformToClip(const float* positions, uint32_t count, const float viewProj[16], float* clip, uint32_t width,
                     uint32_t height, uint32_t* bounds, void* stream) {
  ARM_CHECK(positions && viewProj && clip && bounds && width && height, "transformToClip: null pointer or empty image");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  check(cudaMemsetAsync(bounds, 0xff, 8, s));   // min x, y
  check(cudaMemsetAsync(bounds + 2, 0, 8, s));  // max x, y
  if (!count) return;
  Matrix a;
  for (int i = 0; i < 16; ++i) a.m[i] = viewProj[i];
  unsigned blocks = unsigned(std::min<size_t>((count + CLIP_BOUNDS_GROUP - 1) / CLIP_BOUNDS_GROUP, CLIP_BOUNDS_GROUPS));
  clipKernel<<<blocks, CLIP_BOUNDS_GROUP, 0, s>>>(positions, count, a, reinterpret_cast<float4*>(clip), width, height,
                                                  bounds);
  check(cudaGetLastError());
}

}  // namespace armature::app
