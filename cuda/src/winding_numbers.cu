// Winding numbers on CUDA: shaders/winding_numbers.comp's invocation per point, the same sum in the same order.
#include "armature/ops/winding_numbers.h"
#include "check.h"
#include "shared/winding_io.h"

namespace armature::cuda {
namespace {

__global__ void __launch_bounds__(WINDING_WORKGROUP_SIZE)
    windingKernel(const float* __restrict__ points, const float* __restrict__ vertices,
                  const int32_t* __restrict__ faces, float* __restrict__ out, float* __restrict__ distances,
                  WindingPush p) {
  __shared__ float sCorner[WINDING_TILE * 9];
  const uint32_t lid = threadIdx.x, q = blockIdx.x * WINDING_WORKGROUP_SIZE + lid;
  const bool inRange = q < p.points;
  const float x = inRange ? points[q * 3] : 0.0f, y = inRange ? points[q * 3 + 1] : 0.0f,
              z = inRange ? points[q * 3 + 2] : 0.0f;
  float sum = 0.0f, nearest2 = 3.4e38f;
  for (uint32_t base = 0; base < p.faces; base += WINDING_TILE) {
    __syncthreads();
    const uint32_t f = base + lid;
    if (f < p.faces)
      for (int k = 0; k < 3; ++k)
        for (int c = 0; c < 3; ++c) sCorner[lid * 9 + k * 3 + c] = vertices[uint32_t(faces[f * 3 + k]) * 3 + c];
    __syncthreads();
    const uint32_t count = min(uint32_t(WINDING_TILE), p.faces - base);
    for (uint32_t t = 0; t < count; ++t) {
      const float* o = &sCorner[t * 9];
      sum +=
          windingSolidAngle(o[0] - x, o[1] - y, o[2] - z, o[3] - x, o[4] - y, o[5] - z, o[6] - x, o[7] - y, o[8] - z);
      if (p.distances)
        nearest2 = min(nearest2, windingTriangleDistance2(o[0] - x, o[1] - y, o[2] - z, o[3] - x, o[4] - y, o[5] - z,
                                                          o[6] - x, o[7] - y, o[8] - z));
    }
  }
  if (!inRange) return;
  out[q] = sum * 0.07957747154594767f;  // 1/4π
  if (p.distances) distances[q] = sqrtf(nearest2);
}

}  // namespace

void windingNumbers(const Exec& exec, const WindingNumbersArgs& a) {
  const WindingPush push{a.points, a.mesh->faceCount(), a.distances.empty() ? 0u : 1u, 0};
  windingKernel<<<(a.points + WINDING_WORKGROUP_SIZE - 1) / WINDING_WORKGROUP_SIZE, WINDING_WORKGROUP_SIZE, 0,
                  stream(exec)>>>(a.x.cuda<float>(), a.mesh->vertices().cuda<float>(), a.mesh->faces().cuda<int32_t>(),
                                  a.windings.cuda<float>(), a.distances.empty() ? nullptr : a.distances.cuda<float>(),
                                  push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
