#pragma once
// Body skinning (smplx lbs()) on the GPU: forward and exact backward on CUDA and on Vulkan, meaning exactly
// bodyForwardRef / bodyBackwardRef (the double CPU reference, armature/body/body_model.h) up to fp32 rounding.
#include <cstdint>
#include <memory>
#include <vector>

#include "armature/body/body_model.h"
#include "armature/device.h"

namespace armature {

// The sizes a skinning backend works with; what a backend keeps once its tables are on the device.
struct SkinningDims {
  uint32_t vertexCount = 0, jointCount = 0, featureCount = 0, shapeCount = 0, exprCount = 0;
  uint32_t coefCount() const { return shapeCount + exprCount; }
};

// Host-side tables shared by every GPU backend (see shaders/shared/skinning_io.h for the layouts); built for the
// upload and dropped after it (the blend matrix alone is 64 MB for SMPL-X).
struct SkinningTables : SkinningDims {
  std::vector<float> vTemplate;       // (V,3)
  std::vector<float> blendMatrix;     // (P+K, V*3)
  std::vector<float> jointTemplate;   // (J,3)
  std::vector<float> jointDirs;       // (K,J,3)
  std::vector<uint32_t> weightStart;  // (V+1)
  std::vector<uint32_t> weightJoint;  // (nnz)
  std::vector<float> weightValue;     // (nnz)
  // CSC of the weights, for the backward's per-joint reductions: joint j uses jointStart[j]..jointStart[j+1).
  std::vector<uint32_t> jointStart, jointVertex;
  std::vector<float> jointWeight;
  std::vector<int32_t> parents, order;
  size_t deviceBytes() const;
};

// Throws armature::Error when the model does not fit the GPU kernels (more than 64 joints) or the component
// counts exceed the model's.
SkinningTables buildSkinningTables(const BodyModel& model, uint32_t shapeComponents, uint32_t exprComponents);

// One forward: pose (B,J,3) axis-angle, betas (B,S), expression (B,E), transl (B,3) in; vertices (B,V,3) — the
// renderer's vertex layout, tightly packed xyz — and joints (B,J,3) out (overwritten). float32 views throughout.
struct SkinningForwardArgs {
  uint32_t batch = 1;  // B, at most the object's maxBatch
  DeviceView pose, betas, expression, transl;
  DeviceView vertices, joints;
};
// The exact backward of the last forward recorded or enqueued on this object: dL/dpose, dL/dbetas, dL/dexpression,
// dL/dtransl (overwritten) from dL/dvertices (B,V,3) and, optionally, dL/djoints (B,J,3) (empty: zero). It reads what
// that forward kept (v_posed, the transforms, the chain's rotations and rest joints: no recomputation), so it must
// follow it in the same stream (command buffer) with the same batch and pose, and no forward between them.
// Deterministic: every sum runs in a fixed order (no float atomics).
struct SkinningBackwardArgs {
  uint32_t batch = 1;
  DeviceView pose;  // the forward's
  DeviceView gradVertices, gradJoints;
  DeviceView gradPose, gradBetas, gradExpression, gradTransl;
};

// CUDA's choices (other backends ignore them); each keeps the results bit for bit except tensorCores, which keeps
// fp32 accuracy. docs/skinning.md weighs them.
struct SkinningTuning {
  // Few items: one fused kernel whose blocks publish the joint chain to the others through device-side flags; more
  // items and the backward run the chain on a second stream beside the blend product (event fork and join). Off: the
  // same kernels one after another on the caller's stream (cheaper where the caller's stream waits on external
  // semaphores, since the fork waits behind them).
  bool chainOverlap = true;
  // Mark part of the blend matrix as persisting in L2 across calls (raises the process's persisting-L2 limit). Good
  // for back-to-back skinning calls; work between calls gets less L2 (the viewer's rasteriser, image fitting).
  bool l2Residency = true;
  // The blend products of a forward of more than 64 items and a backward of 1,024 or more on the tensor cores at fp32
  // accuracy (3xTF32, compute capability ≥ 8.0).
  bool tensorCores = true;
};

class SkinningBackend;  // engine/src/ops/skinning_backend.h

// Body skinning on one backend of a Device: uploads the model's tables once, then forward() and backward() record
// (Vulkan) or enqueue (CUDA) with no host synchronisation. Each call checks every argument against the model and the
// batch before any work. Calls on one object share its work buffers: on Vulkan record exec.barrier() between two
// forwards, as between any ops whose buffers overlap (a backward begins with its own). Vulkan stage zones
// (exec.stages()): "skin: features", "skin: chain, blend", "skin: vertices" and the backward's five.
class Skinning {
 public:
  Skinning(Device& device, Backend backend, const BodyModel& model, uint32_t shapeComponents, uint32_t exprComponents,
           uint32_t maxBatch, const SkinningTuning& tuning = {});
  ~Skinning();
  Skinning(const Skinning&) = delete;
  Skinning& operator=(const Skinning&) = delete;

  void forward(const Exec& exec, const SkinningForwardArgs& args);
  void backward(const Exec& exec, const SkinningBackwardArgs& args);

  Backend backend() const { return m_backend; }
  const SkinningDims& dims() const { return m_dims; }
  uint32_t maxBatch() const { return m_maxBatch; }
  // What the backend granted of the tuning (e.g. no tensor cores before compute capability 8.0), and changes to it.
  const SkinningTuning& tuning() const { return m_tuning; }
  const SkinningTuning& setTuning(const SkinningTuning& tuning);
  size_t deviceBytes() const;      // the model's tables on the device
  size_t l2ResidentBytes() const;  // CUDA: the blend matrix's bytes marked persisting in L2 (0 when off or elsewhere)

 private:
  Backend m_backend;
  SkinningDims m_dims;
  uint32_t m_maxBatch;
  std::unique_ptr<SkinningBackend> m_impl;
  SkinningTuning m_tuning;
  uint32_t m_lastBatch = 0;  // the last forward's batch (0: none yet)
};

}  // namespace armature
