// Bucket lists on CUDA: shaders/buckets.comp's passes (shared/buckets_io.h), a thread per invocation.
#include "check.h"
#include "ops/buckets.h"

namespace armature::cuda {
namespace {

// The exclusive prefix of v over the block, and its total.
__device__ uint32_t blockExclusiveScan(uint32_t v, uint32_t& total) {
  __shared__ uint32_t sScan[BUCKET_THREADS];
  const uint32_t lid = threadIdx.x;
  sScan[lid] = v;
  __syncthreads();
  for (uint32_t step = 1; step < BUCKET_THREADS; step <<= 1) {
    const uint32_t add = lid >= step ? sScan[lid - step] : 0u;
    __syncthreads();
    sScan[lid] += add;
    __syncthreads();
  }
  total = sScan[BUCKET_THREADS - 1];
  const uint32_t inclusive = sScan[lid];
  __syncthreads();
  return inclusive - v;
}

__device__ void siftDown(uint32_t* list, uint32_t root, uint32_t end) {
  for (uint32_t child = 2 * root + 1; child < end; child = 2 * root + 1) {
    if (child + 1 < end && list[child + 1] > list[child]) ++child;
    if (list[root] >= list[child]) break;
    const uint32_t t = list[root];
    list[root] = list[child], list[child] = t;
    root = child;
  }
}

// A bucket's n entries, ascending.
__device__ void heapSort(uint32_t* list, uint32_t n) {
  for (uint32_t start = n / 2; start-- > 0;) siftDown(list, start, n);
  for (uint32_t end = n - 1; end > 0; --end) {
    const uint32_t t = list[0];
    list[0] = list[end], list[end] = t;
    siftDown(list, 0, end);
  }
}

__global__ void __launch_bounds__(BUCKET_THREADS) bucketKernel(uint32_t* __restrict__ words, BucketPush p) {
  const uint32_t lid = threadIdx.x, group = blockIdx.x;
  if (p.mode == BUCKET_CLEAR) {
    const uint32_t b = group * BUCKET_THREADS + lid;
    if (b < p.buckets) words[p.counts + b] = 0;
  } else if (p.mode == BUCKET_SORT) {
    const uint32_t b = group * BUCKET_THREADS + lid;
    if (b >= p.buckets) return;
    uint32_t* list = words + p.entries + words[p.starts + b];
    const uint32_t n = words[p.starts + b + 1] - words[p.starts + b];
    if (n < 2 || n > BUCKET_SORT_SMALL) return;
    heapSort(list, n);
  } else if (p.mode == BUCKET_SCAN_REDUCE) {
    const uint32_t base = group * BUCKET_SCAN_BLOCK + lid * 4;
    uint32_t sum = 0, total;
    for (uint32_t k = 0; k < 4; ++k) sum += base + k < p.buckets ? words[p.counts + base + k] : 0u;
    blockExclusiveScan(sum, total);
    if (lid == 0) words[p.blockSums + group] = total;
  } else if (p.mode == BUCKET_SCAN_BLOCKS) {
    const uint32_t blocks = bucketBlockSums(p.buckets);
    uint32_t carry = 0;
    for (uint32_t chunk = 0; chunk < blocks; chunk += BUCKET_SCAN_BLOCK) {
      const uint32_t base = chunk + lid * 4;
      uint32_t v[4], sum = 0, total;
      for (uint32_t k = 0; k < 4; ++k) v[k] = base + k < blocks ? words[p.blockSums + base + k] : 0u, sum += v[k];
      uint32_t running = carry + blockExclusiveScan(sum, total);
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
    uint32_t running = blockExclusiveScan(sum, total) + words[p.blockSums + group];
    for (uint32_t k = 0; k < 4; ++k) {
      if (base + k < p.buckets) words[p.starts + base + k] = running, words[p.counts + base + k] = running;
      running += v[k];
    }
  }
}

// SORT_LARGE: a block per bucket of more than BUCKET_SORT_SMALL entries (grid-stride; the others are skipped at once),
// its entries padded to a power of two in shared memory and sorted by a bitonic network, the same order as the heap
// sort (entries are distinct).
__global__ void __launch_bounds__(BUCKET_THREADS) sortLargeBuckets(uint32_t* __restrict__ words, BucketPush p) {
  __shared__ uint32_t sList[BUCKET_SORT_SHARED];
  for (uint32_t b = blockIdx.x; b < p.buckets; b += gridDim.x) {
    uint32_t* list = words + p.entries + words[p.starts + b];
    const uint32_t n = words[p.starts + b + 1] - words[p.starts + b];
    if (n <= BUCKET_SORT_SMALL) continue;  // the same for the whole block
    if (n > BUCKET_SORT_SHARED) {          // the same network in place, every comparator ascending (bucket_io.h)
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
      continue;
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
}

}  // namespace

void bucketPass(const Exec& exec, const BucketPass& p) {
  if (p.push.mode == BUCKET_SORT_LARGE)
    sortLargeBuckets<<<p.groups, BUCKET_THREADS, 0, stream(exec)>>>(p.words.cuda<uint32_t>(), p.push);
  else
    bucketKernel<<<p.groups, BUCKET_THREADS, 0, stream(exec)>>>(p.words.cuda<uint32_t>(), p.push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
