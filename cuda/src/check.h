#pragma once
// CUDA_CHECK: always on; throws armature::Error naming file:line, the call and CUDA's message.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "armature/error.h"

namespace armature::cuda::detail {
[[noreturn]] inline void throwCuda(cudaError_t e, const char* call, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + cudaGetErrorName(e) + ": " +
              cudaGetErrorString(e));
}
}  // namespace armature::cuda::detail

#define CUDA_CHECK(expr)                                                               \
  do {                                                                                 \
    cudaError_t cudaCheckError_ = (expr);                                              \
    if (cudaCheckError_ != cudaSuccess)                                                \
      ::armature::cuda::detail::throwCuda(cudaCheckError_, #expr, __FILE__, __LINE__); \
  } while (0)

// After every launch: configuration errors surface here, not at the next unrelated call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#include "armature/cuda/runtime.h"
#include "armature/device.h"
namespace armature::cuda {
inline cudaStream_t raw(const Stream& s) { return static_cast<cudaStream_t>(s.handle()); }
inline cudaStream_t stream(const Exec& exec) { return static_cast<cudaStream_t>(exec.stream()); }
// Whether a device pointer is aligned for loads of `bytes` (float4: 16).
inline bool alignedTo(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
}  // namespace armature::cuda
