// Bucket lists on CUDA: shaders/buckets.comp's passes (shared/buckets_io.h), a thread per invocation.
#include "block_scan.h"
#include "check.h"
#include "ops/buckets.h"

namespace armature::cuda {
namespace {

// The sort's shared words: the threads' small buckets, element k of thread i at k · BUCKET_THREADS + i (no bank
// conflicts), then a larger bucket's entries. 32 KiB: the shaders keep their sort in global memory, as lavapipe allows
// 32 KiB in all and a workgroup holding that much ran the Vulkan sort slower.
constexpr uint32_t kSortWords = BUCKET_SORT_SMALL * BUCKET_THREADS;
static_assert(BUCKET_SORT_SHARED <= kSortWords);

// The thread's own bucket of n ≤ BUCKET_SORT_SMALL entries, ascending: copied into its slots of `sList`
// (kSortWords), insertion-sorted there and copied back.
__device__ void sortSmall(uint32_t* sList, uint32_t* list, uint32_t n) {
  uint32_t* own = sList + threadIdx.x;
  for (uint32_t k = 0; k < n; ++k) own[k * BUCKET_THREADS] = list[k];
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t v = own[k * BUCKET_THREADS];
    uint32_t j = k;
    for (; j > 0 && own[(j - 1) * BUCKET_THREADS] > v; --j) own[j * BUCKET_THREADS] = own[(j - 1) * BUCKET_THREADS];
    own[j * BUCKET_THREADS] = v;
  }
  for (uint32_t k = 0; k < n; ++k) list[k] = own[k * BUCKET_THREADS];
}

// A larger bucket's n entries, ascending, by the whole block: a bitonic network in shared memory, or in place in the
// list beyond BUCKET_SORT_SHARED entries (every comparator ascending, bucket_io.h). The same order as any sort
// (entries are distinct).
__device__ void sortLarge(uint32_t* sList, uint32_t* list, uint32_t n) {
  if (n > BUCKET_SORT_SHARED) {
    uint32_t size = 1;
    while (size < n) size <<= 1;
    for (uint32_t k = 2; k <= size; k <<= 1)
      for (uint32_t j = k >> 1; j > 0; j >>= 1) {
        for (uint32_t i = threadIdx.x; i < size; i += BUCKET_THREADS) {
          const uint32_t partner = j == k >> 1 ? i ^ (k - 1) : i ^ j;
          if (partner > i && partner < n) {
            const uint32_t a = list[i], c = list[partner];
            if (a > c) list[i] = c, list[partner] = a;
          }
        }
        __syncthreads();
      }
    return;
  }
  uint32_t size = 64;
  while (size < n) size <<= 1;
  for (uint32_t i = threadIdx.x; i < size; i += BUCKET_THREADS) sList[i] = i < n ? list[i] : 0xFFFFFFFFu;
  __syncthreads();
  for (uint32_t k = 2; k <= size; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      for (uint32_t i = threadIdx.x; i < size; i += BUCKET_THREADS) {
        const uint32_t partner = i ^ j;
        if (partner > i) {
          const uint32_t a = sList[i], c = sList[partner];
          if ((a > c) == ((i & k) == 0)) sList[i] = c, sList[partner] = a;
        }
      }
      __syncthreads();
    }
  for (uint32_t i = threadIdx.x; i < n; i += BUCKET_THREADS) list[i] = sList[i];
  __syncthreads();  // before the next bucket's loads
}

__global__ void __launch_bounds__(BUCKET_THREADS) bucketKernel(uint32_t* __restrict__ words, BucketPush p) {
  const uint32_t lid = threadIdx.x, group = blockIdx.x;
  if (p.mode == BUCKET_CLEAR) {
    const uint32_t b = group * BUCKET_THREADS + lid;
    if (b < p.buckets) words[p.counts + b] = 0;
  } else if (p.mode == BUCKET_SORT) {
    __shared__ uint32_t sList[kSortWords], sQueue[BUCKET_THREADS], sQueued;
    if (lid == 0) sQueued = 0;
    __syncthreads();
    // Bucket lid · blocks + block: a run of crowded buckets (a grid's occupied cells) spreads over the blocks.
    const uint32_t b = lid * gridDim.x + group;
    const uint32_t n = b < p.buckets ? words[p.starts + b + 1] - words[p.starts + b] : 0u;
    if (n > BUCKET_SORT_SMALL)
      sQueue[atomicAdd(&sQueued, 1u)] = b;  // each bucket's sort is its own: the queue's order does not matter
    else if (n >= 2)
      sortSmall(sList, words + p.entries + words[p.starts + b], n);
    __syncthreads();
    const uint32_t queued = sQueued;
    for (uint32_t q = 0; q < queued; ++q) {
      const uint32_t large = sQueue[q];
      sortLarge(sList, words + p.entries + words[p.starts + large],
                words[p.starts + large + 1] - words[p.starts + large]);
    }
  } else if (p.mode == BUCKET_SCAN_REDUCE) {
    const uint32_t base = group * BUCKET_SCAN_BLOCK + lid * 4;
    uint32_t sum = 0, total;
    for (uint32_t k = 0; k < 4; ++k) sum += base + k < p.buckets ? words[p.counts + base + k] : 0u;
    blockExclusiveScan<BUCKET_THREADS>(sum, total);
    if (lid == 0) words[p.blockSums + group] = total;
  } else if (p.mode == BUCKET_SCAN_BLOCKS) {
    const uint32_t blocks = bucketBlockSums(p.buckets);
    uint32_t carry = 0;
    for (uint32_t chunk = 0; chunk < blocks; chunk += BUCKET_SCAN_BLOCK) {
      const uint32_t base = chunk + lid * 4;
      uint32_t v[4], sum = 0, total;
      for (uint32_t k = 0; k < 4; ++k) v[k] = base + k < blocks ? words[p.blockSums + base + k] : 0u, sum += v[k];
      uint32_t running = carry + blockExclusiveScan<BUCKET_THREADS>(sum, total);
      for (uint32_t k = 0; k < 4; ++k) {
        if (base + k < blocks) words[p.blockSums + base + k] = running;
        running += v[k];
      }
      carry += total;
    }
    if (lid == 0) words[p.starts + p.buckets] = carry;
  } else if (p.mode == BUCKET_SCAN_APPLY) {
    const uint32_t base = group * BUCKET_SCAN_BLOCK + lid * 4;
    uint32_t v[4], sum = 0, total;
    for (uint32_t k = 0; k < 4; ++k) v[k] = base + k < p.buckets ? words[p.counts + base + k] : 0u, sum += v[k];
    uint32_t running = blockExclusiveScan<BUCKET_THREADS>(sum, total) + words[p.blockSums + group];
    for (uint32_t k = 0; k < 4; ++k) {
      if (base + k < p.buckets) words[p.starts + base + k] = running, words[p.counts + base + k] = running;
      running += v[k];
    }
  }
}

}  // namespace

void bucketPass(const Exec& exec, const BucketPass& p) {
  if (p.push.mode == BUCKET_SORT_LARGE) return;  // BUCKET_SORT sorted them (buckets_io.h)
  bucketKernel<<<p.groups, BUCKET_THREADS, 0, stream(exec)>>>(p.words.cuda<uint32_t>(), p.push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
