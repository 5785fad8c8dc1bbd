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

// The backend's function of an op, or the one error where the backend has none (nullptr: the op lacks it there, or
// this build lacks CUDA). Ops whose backends are not Exec functions (a factory, a host-side builder with a CPU path)
// pick with it too.
template <typename Function>
Function backendFunction(const char* op, Backend backend, std::type_identity_t<Function> vulkan,
                         std::type_identity_t<Function> cuda, std::type_identity_t<Function> cpu = nullptr) {
  const Function chosen = backend == Backend::Vulkan ? vulkan : backend == Backend::Cuda ? cuda : cpu;
  if (!chosen) throwMissingBackend(op, backend);
  return chosen;
}

template <typename Args>
using BackendFunction = void (*)(const Exec&, const Args&);

// The backends' functions do not take part in deduction: a build without CUDA passes nullptr for them.
template <typename Args>
void dispatch(const char* op, const Exec& exec, const Args& args, std::type_identity_t<BackendFunction<Args>> vulkan,
              std::type_identity_t<BackendFunction<Args>> cuda) {
  backendFunction<BackendFunction<Args>>(op, exec.backend(), vulkan, cuda)(exec, args);
}

}  // namespace armature
