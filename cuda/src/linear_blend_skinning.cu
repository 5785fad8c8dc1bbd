// Linear blend skinning on CUDA: shaders/linear_blend_skinning.comp's invocation per (skeleton, vertex).
#include <algorithm>

#include "armature/ops/linear_blend_skinning.h"
#include "check.h"
#include "shared/lbs_io.h"

namespace armature::cuda {
namespace {

__global__ void lbsKernel(const float* __restrict__ rest, const uint32_t* __restrict__ joints,
                          const float* __restrict__ weights, const float* __restrict__ skinning,
                          float* __restrict__ positions, LbsPush p) {
  const size_t total = size_t(p.batch) * p.vertices;
  for (size_t item = blockIdx.x * size_t(blockDim.x) + threadIdx.x; item < total;
       item += size_t(gridDim.x) * blockDim.x) {
    const size_t b = item / p.vertices, v = item % p.vertices;
    const float x = rest[v * 3], y = rest[v * 3 + 1], z = rest[v * 3 + 2];
    float out[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t k = 0; k < p.influences; ++k) {
      const float w = weights[v * p.influences + k];
      const float* m = &skinning[(b * p.joints + joints[v * p.influences + k]) * 12];
#pragma unroll
      for (int r = 0; r < 3; ++r) out[r] += w * (m[r * 4] * x + m[r * 4 + 1] * y + m[r * 4 + 2] * z + m[r * 4 + 3]);
    }
#pragma unroll
    for (int r = 0; r < 3; ++r) positions[item * 3 + r] = out[r];
  }
}

}  // namespace

void linearBlendSkinning(const Exec& exec, const LinearBlendSkinningArgs& a) {
  const LbsPush push{a.batch, a.weights->vertices(), a.weights->jointCount(), a.weights->influences()};
  const size_t items = size_t(push.batch) * push.vertices;
  lbsKernel<<<unsigned(std::min<size_t>((items + LBS_WORKGROUP_SIZE - 1) / LBS_WORKGROUP_SIZE, 65535 * 8)),
              LBS_WORKGROUP_SIZE, 0, stream(exec)>>>(a.rest.cuda<float>(), a.weights->joints().cuda<uint32_t>(),
                                                     a.weights->weights().cuda<float>(), a.skinning.cuda<float>(),
                                                     a.positions.cuda<float>(), push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
