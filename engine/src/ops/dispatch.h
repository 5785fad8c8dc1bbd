#pragma once
// How an op's entry point reaches its backends. Each backend defines `void vk::op(const Exec&, const OpArgs&)` and
// `void cuda::op(const Exec&, const OpArgs&)` (engine/src/ops/<op>_vk.cpp, cuda/src/<op>.cu); the entry point checks
// the arguments, then calls dispatch(). A build without nvcc has no CUDA functions: ARM_CUDA_BACKEND names none, and
// the exec gets the one "no CUDA backend" error from throwMissingBackend.
#include <type_traits>

#include "armature/device.h"

#if ARMATURE_HAS_CUDA
#define ARM_CUDA_BACKEND(function) (&::armature::cuda::function)
#else
#define ARM_CUDA_BACKEND(function) nullptr
#endif

namespace armature {

template <typename Args>
using BackendFunction = void (*)(const Exec&, const Args&);

// The backends' functions do not take part in deduction: a build without CUDA passes nullptr for them.
template <typename Args>
void dispatch(const char* op, const Exec& exec, const Args& args, std::type_identity_t<BackendFunction<Args>> vulkan,
              std::type_identity_t<BackendFunction<Args>> cuda) {
  const BackendFunction<Args> run = exec.backend() == Backend::Vulkan ? vulkan
                                    : exec.backend() == Backend::Cuda ? cuda
                                                                      : nullptr;
  if (!run) throwMissingBackend(op, exec.backend());
  run(exec, args);
}

}  // namespace armature
