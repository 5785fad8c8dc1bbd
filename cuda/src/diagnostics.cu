#include "armature/cuda/diagnostics.h"
#include "check.h"
#include "shared/pattern_io.h"

namespace armature::cuda {
namespace {
__global__ void fillKernel(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = uint8_t(patternByte(uint32_t(i), seed));
}
__global__ void checkKernel(const uint8_t* p, size_t n, uint32_t seed, uint32_t* bad) {
  uint32_t count = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    count += p[i] != uint8_t(patternByte(uint32_t(i), seed));
  if (count) atomicAdd(bad, count);
}
__global__ void incrementKernel(uint32_t* c, uint32_t add) { *c += add; }
__global__ void nothingKernel() {}
unsigned grid(size_t n) { return unsigned(std::min<size_t>((n + 255) / 256, 4096)); }
}  // namespace

void fillPattern(void* data, size_t bytes, uint32_t seed, const Stream& s) {
  if (!bytes) return;
  fillKernel<<<grid(bytes), 256, 0, raw(s)>>>(static_cast<uint8_t*>(data), bytes, seed);
  CUDA_CHECK_LAUNCH();
}
void countPatternMismatches(const void* data, size_t bytes, uint32_t seed, uint32_t* bad, const Stream& s) {
  if (!bytes) return;
  checkKernel<<<grid(bytes), 256, 0, raw(s)>>>(static_cast<const uint8_t*>(data), bytes, seed, bad);
  CUDA_CHECK_LAUNCH();
}
void incrementCounter(uint32_t* c, uint32_t add, const Stream& s) {
  incrementKernel<<<1, 1, 0, raw(s)>>>(c, add);
  CUDA_CHECK_LAUNCH();
}
void emptyKernel(const Stream& s) {
  nothingKernel<<<1, 1, 0, raw(s)>>>();
  CUDA_CHECK_LAUNCH();
}
}  // namespace armature::cuda
