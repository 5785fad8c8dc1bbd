#pragma once
// Launch helpers the CUDA ops share: programmatic dependent launches (compute capability 9.0+) and the device's
// traits that size grids.
#include <vector>

#include "check.h"

namespace armature::cuda {

// Programmatic dependent launch (compute capability 9.0+, launchAfterPrevious): a kernel's blocks start while the
// previous kernel of the call drains and wait here for its completion and its writes before touching them; each
// kernel lets the next one launch as soon as all of its own blocks are running, so launch latency stays off the
// call's critical path.
__device__ __forceinline__ void waitForPrevious() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void releaseNext() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

struct DeviceTraits {
  bool dependentLaunches;
  bool cooperativeLaunches;  // grid-wide barriers (cudaLaunchCooperativeKernel)
  int multiprocessors;
};
inline DeviceTraits deviceTraits() {
  static const std::vector<DeviceTraits> all = [] {
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    std::vector<DeviceTraits> traits(static_cast<size_t>(count));
    for (int device = 0; device < count; ++device) {
      int major = 0, cooperative = 0, multiprocessors = 0;
      CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
      CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
      CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
      traits[size_t(device)] = {major >= 9, cooperative != 0, multiprocessors};
    }
    return traits;
  }();
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return all.at(size_t(device));
}
// Launches a kernel that calls waitForPrevious before reading what earlier work in the stream wrote: with
// `dependent`, as a programmatic dependent of that work; else as an ordinary launch.
template <typename... Params, typename... Args>
inline void launchAfterPrevious(bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t s,
                                Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{grid, block, 0, s, &attribute, dependent ? 1u : 0u};
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
}

// Blocks of 256 threads for n items, capped: kernels loop over the rest.
inline unsigned grid(size_t n) { return unsigned(std::min<size_t>((n + 255) / 256, 65535 * 4)); }

}  // namespace armature::cuda
