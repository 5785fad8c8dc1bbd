#pragma once
// A block-wide exclusive scan of one value per thread, for kernels of THREADS threads (blockDim.x).
#include <cstdint>

namespace armature::cuda {

// The exclusive prefix of v over the block, and its total. Every thread of the block calls it.
template <uint32_t THREADS>
__device__ uint32_t blockExclusiveScan(uint32_t v, uint32_t& total) {
  __shared__ uint32_t sScan[THREADS];
  const uint32_t lid = threadIdx.x;
  sScan[lid] = v;
  __syncthreads();
  for (uint32_t step = 1; step < THREADS; step <<= 1) {
    const uint32_t add = lid >= step ? sScan[lid - step] : 0u;
    __syncthreads();
    sScan[lid] += add;
    __syncthreads();
  }
  total = sScan[THREADS - 1];
  const uint32_t inclusive = sScan[lid];
  __syncthreads();
  return inclusive - v;
}

}  // namespace armature::cuda
