#pragma once
// Body skinning on CUDA, behind armature::Skinning (armature/ops/skinning.h, the contract): fused forward and exact
// analytic backward. All pointers are device pointers to fp32 arrays; work runs on the caller's stream with no host
// synchronisation.
//
// forward() keeps what backward() needs (per item: joint transforms, local and global rotations, rest joints —
// about 3 KB — and v_posed, B·V·3 floats) in this object's workspace, so backward() must follow
// the forward() of the same parameters (the usual optimisation-loop order). Recomputing v_posed instead would
// cost a second pass over the 64 MB blend matrix per call; keeping it costs B·V·12 bytes.
// backward() is deterministic: every reduction runs in a fixed order (no floating-point atomics).
#include <memory>

#include "armature/ops/skinning.h"
#include <cuda_runtime.h>

#include "armature/cuda/runtime.h"

namespace armature::cuda {

struct SkinningInputs {
  const float* pose = nullptr;        // (B,J,3)
  const float* betas = nullptr;       // (B,S)
  const float* expression = nullptr;  // (B,E)
  const float* transl = nullptr;      // (B,3)
};
struct SkinningGrads {
  float* pose = nullptr;        // (B,J,3)
  float* betas = nullptr;       // (B,S)
  float* expression = nullptr;  // (B,E)
  float* transl = nullptr;      // (B,3)
};

class Skinning {
 public:
  // Uploads the model's tables (buildSkinningTables); throws armature::Error if they do not fit on the device.
  // l2Residency: the initial setL2Residency (false leaves the process's persisting-L2 limit untouched).
  Skinning(const SkinningTables& tables, uint32_t maxBatch, bool l2Residency = true);
  ~Skinning();
  Skinning(const Skinning&) = delete;
  Skinning& operator=(const Skinning&) = delete;

  // vertices (B,V,3) and joints (B,J,3) outputs; B ≤ maxBatch.
  void forward(uint32_t batch, const SkinningInputs& in, float* vertices, float* joints, cudaStream_t stream);
  // gradVertices (B,V,3) and gradJoints (B,J,3) (either may be null = zero).
  void backward(uint32_t batch, const float* gradVertices, const float* gradJoints, const SkinningGrads& out,
                cudaStream_t stream);

  // On (the default): for up to 8 items, forward() is one kernel in which some blocks run the joint chains and
  // publish their results (device-side flags) while the others stream the blend product and skin their own vertex
  // groups; for more items, and in backward(), the chain runs on a second stream beside the blend product (event
  // fork/join, no host wait). Off: the same kernels one after another on the caller's stream (the same bits). The
  // second stream's fork is expensive when the caller's stream waits on external semaphores (interop::FrameRing:
  // the fork waits behind the semaphore) — the few-item forward has no fork, so it is unaffected.
  void setChainOverlap(bool on);
  // On (the default, where the device supports it): the launches that stream the blend matrix mark part of it as
  // persisting in L2 — as much as the device sets aside (about half of the default avatar's matrix): the leading part
  // for more than 64 items, 3/4 of that spread over the whole matrix for up to 64 — so across
  // calls (frames, optimisation steps) that part comes from L2 instead of DRAM. This raises the process's
  // persisting-L2 limit (cudaLimitPersistingL2CacheSize) to the device's maximum; other work still uses that part
  // of L2 while no persisting line holds it. Off: every call streams the whole matrix from DRAM, and lines earlier
  // calls marked persisting go back to normal (cudaCtxResetPersistingL2Cache: every persisting line of the
  // context, as the destructor does). The results are the same bits either way. Returns whether residency is on.
  // The trade: back-to-back skinning calls (an optimisation loop, the benchmark) gain, but work that runs between
  // them gets less L2: the viewer's CUDA rasteriser runs from DRAM then, so the viewer builds it off. Turn it off
  // too when fitting to images (skinning, project, rasterize and the backward chain in a loop), for the same reason
  // (bench/RESULTS.md has both ways).
  bool setL2Residency(bool on);
  // On (the default, on compute capability ≥ 8.0): the blend products of forward() for more than 64 items and of
  // backward() from 1,024 items run on the tensor cores at fp32 accuracy: each operand is split into two TF32 parts
  // and each term takes three products ("3xTF32"), so the error is that of fp32 accumulation (the CUDA test
  // measures both). Off: fp32 FMAs, whose rate bounds those products from a few dozen items up. Returns whether it
  // is on.
  bool setTensorCores(bool on);
  size_t l2ResidentBytes() const;  // the leading window's bytes while residency is on, else 0

  size_t deviceBytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace armature::cuda
