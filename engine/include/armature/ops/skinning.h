#pragma once
// Body skinning (smplx lbs()) on the GPU: forward and exact backward on CUDA and on Vulkan.
//
// Contract (both backends): inputs are fp32 device buffers
//   pose (B,J,3) axis-angle, betas (B,S), expression (B,E), transl (B,3)
// outputs  vertices (B,V,3) — the viewer's vertex layout: tightly packed xyz floats — and joints (B,J,3),
// meaning exactly bodyForwardRef (the double CPU reference) up to fp32 rounding.
// The CPU reference lives in armature/body/body_model.h.
#include <cstdint>
#include <vector>

#include "armature/body/body_model.h"
#include "armature/vk/buffer.h"
#include "armature/vk/timer.h"

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

// The gradients the Vulkan backward writes: float storage buffers pose (B,J,3), betas (B,S), expression (B,E),
// transl (B,3).
struct SkinningGradBuffers {
  vk::Buffer& pose;
  vk::Buffer& betas;
  vk::Buffer& expression;
  vk::Buffer& transl;
};

// Vulkan forward and backward. Holds the tables in device-local buffers; forward() records into a command buffer,
// writing into caller-provided buffers (e.g. the renderer's vertex buffer, created with kStorageUsage |
// VERTEX_BUFFER).
class SkinningVk {
 public:
  SkinningVk(vk::Context& ctx, const BodyModel& model, uint32_t shapeComponents, uint32_t exprComponents,
             uint32_t maxBatch);
  // pose (B,J,3), betas (B,S), expression (B,E), transl (B,3): float storage buffers. With `stages`, timer zones
  // "skin: features" (two or more items), "skin: chain, blend" (the joint chain runs beside the blend product) and
  // "skin: vertices".
  void forward(VkCommandBuffer cmd, uint32_t batch, const vk::Buffer& pose, const vk::Buffer& betas,
               const vk::Buffer& expression, const vk::Buffer& transl, vk::Buffer& vertices, vk::Buffer& joints,
               vk::GpuTimer* stages = nullptr);
  // The exact backward of the last forward() recorded: dL/dpose, dL/dbetas, dL/dexpression, dL/dtransl from
  // dL/dvertices (B,V,3) and, optionally, dL/djoints (B,J,3) (null: zero). It reads what that forward kept (v_posed,
  // the transforms and the chain's rotations and rest joints: no recomputation), so it must be recorded after it,
  // with the same batch and pose buffer and no forward() between them; it begins with the barrier it needs.
  // Deterministic: every sum runs in a fixed order (no float atomics). Five dispatches (timer zones with `stages`):
  // dL/dv_posed, the per-joint sums dL/dA_j (CSC weights) and dL/dtransl, the reverse chain, dL/dfeatures (the blend
  // product's transpose, a split-K GEMM), and Rodrigues' backward with the shape/expression gradients. Its work
  // buffers (dL/dv_posed is the size of v_posed) are allocated on the first call.
  void backward(VkCommandBuffer cmd, uint32_t batch, const vk::Buffer& pose, const vk::Buffer& gradVertices,
                const vk::Buffer* gradJoints, const SkinningGradBuffers& out, vk::GpuTimer* stages = nullptr);
  const SkinningDims& dims() const { return m_dims; }

 private:
  vk::Context& m_ctx;
  SkinningDims m_dims;
  uint32_t m_maxBatch;
  vk::Buffer m_vTemplate, m_blend, m_jointTemplate, m_jointDirs, m_weightStart, m_weightJoint, m_weightValue, m_parents,
      m_jointVertex, m_jointWeight;
  // The backward's per-joint sums by parts (layouts: shared/skinning_io.h): a part per joint, or for fewer than
  // SKIN_SUM_PART_BELOW items parts of at most SKIN_SUM_PART entries.
  struct SumParts {
    vk::Buffer range, joint, jointStart;
    uint32_t count = 0;
  };
  static SumParts makeSumParts(vk::Context& ctx, const SkinningTables& t, uint32_t entries, uint32_t vertices);
  const SumParts& sumParts(uint32_t batch) const;  // the parts `batch` items sum by
  SumParts m_wholeParts, m_splitParts;
  vk::Buffer m_features, m_transforms, m_vPosed, m_saved;
  vk::Buffer m_gradVPosed, m_gradParts, m_chainGrads, m_gradPartials;  // backward(), allocated on its first call
  uint32_t m_lastBatch = 0;                                            // the last forward's batch (0: none yet)
};

}  // namespace armature
