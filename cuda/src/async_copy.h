#pragma once
// cp.async (compute capability 8.0+): global → shared copies that complete in the background, zero-filled where
// `valid` is false. The caller commits (cp.async.commit_group) and waits (cp.async.wait_group / wait_all).
namespace armature::cuda {

__device__ inline void copyAsync16(float* smem, const float* gmem, bool valid) {
  unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "r"(valid ? 16 : 0) : "memory");
}
__device__ inline void copyAsync4(float* smem, const float* gmem, bool valid) {
  unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(gmem), "r"(valid ? 4 : 0) : "memory");
}

}  // namespace armature::cuda
