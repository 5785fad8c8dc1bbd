#pragma once
// Blocks of one launch that hand results to one another through device memory, without a cooperative launch: a
// block publishes with a release store of a flag, and the blocks that need the results spin on acquire loads.
// That terminates only if no publishing block waits for a block that is not yet resident, which takeRole's
// roles guarantee.
namespace armature::cuda {

__device__ inline unsigned loadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Called by the whole block: every thread's writes so far become visible before the flag (a release store of epoch).
__device__ inline void publish(unsigned* flag, unsigned epoch) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(epoch) : "memory");
}
// Called by the whole block: returns once flags[0 … count) all hold epoch (count ≤ blockDim.x); null flags: a
// barrier only.
__device__ inline void waitFor(const unsigned* flags, int count, unsigned epoch) {
  if (flags && int(threadIdx.x) < count)
    while (loadAcquire(flags + threadIdx.x) != epoch) __nanosleep(32);
  __syncthreads();
}

// A fused kernel's block takes its role from a ticket (the order blocks start in), not from blockIdx: roles
// [0, chainBlocks) run the items' chains, the rest the product. The chains then run on blocks that are already
// resident and wait for nothing, so the product blocks' waits always end, whatever the GPU's block scheduling
// (no cooperative launch needed, any grid size). Every launch on one counter has the same grid (one counter per
// item count), and the counter cycles through a whole number of grids, so launch n takes tickets [n·grid,
// (n+1)·grid): the ticket gives the role and the launch's epoch, n + 1 (≥ 1, never the previous launch's), and
// nothing is reset when a launch ends (a reset by the launch's last block would need a fence and an atomic on
// every block's critical path).
struct Role {
  int index;
  unsigned epoch;  // what this launch's chain blocks publish
};
__device__ inline Role takeRole(unsigned* tickets) {
  if (!tickets) return {int(blockIdx.x), 0u};
  __shared__ unsigned ticket;
  if (threadIdx.x == 0) ticket = atomicInc(tickets, gridDim.x * (~0u / gridDim.x) - 1u);  // then back to 0
  __syncthreads();
  return {int(ticket % gridDim.x), ticket / gridDim.x + 1u};
}

}  // namespace armature::cuda
