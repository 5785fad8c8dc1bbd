#include <algorithm>

#include "armature/shaders.h"
#include "armature/vk/timer.h"
#include "shared/skinning_io.h"
#include "skinning_backend.h"

namespace armature::vk {

namespace {

// Holds the tables in device-local buffers; forward() and backward() record into the exec's command buffer.
class SkinningVk : public SkinningBackend {
 public:
  SkinningVk(vk::Context& ctx, const SkinningTables& tables, uint32_t maxBatch);
  void forward(const Exec& exec, const SkinningForwardArgs& args) override;
  void backward(const Exec& exec, const SkinningBackwardArgs& args) override;
  SkinningTuning setTuning(const SkinningTuning&) override { return {false, false, false}; }  // none are Vulkan's
  size_t deviceBytes() const override { return m_deviceBytes; }

 private:
  vk::Context& m_ctx;
  SkinningDims m_dims;
  uint32_t m_maxBatch;
  size_t m_deviceBytes = 0;
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
};

template <typename T>
vk::Buffer table(vk::Context& ctx, const std::vector<T>& v) {
  return vk::makeStorageBuffer<T>(ctx, std::span<const T>(v));
}
}  // namespace

// Parts of at most `entries` CSC entries per joint, then parts of at most `vertices` vertices for the translation
// (joint J), each joint's parts in order.
SkinningVk::SumParts SkinningVk::makeSumParts(vk::Context& ctx, const SkinningTables& t, uint32_t entries,
                                              uint32_t vertices) {
  std::vector<uint32_t> range, joint, jointStart{0};
  auto split = [&](uint32_t j, uint32_t first, uint32_t end, uint32_t most) {
    for (uint32_t q = first; q < end; q += std::min(most, end - q))
      range.insert(range.end(), {q, q + std::min(most, end - q)}), joint.push_back(j);
    if (first == end) range.insert(range.end(), {first, end}), joint.push_back(j);  // an empty joint: one empty part
    jointStart.push_back(uint32_t(joint.size()));
  };
  for (uint32_t j = 0; j < t.jointCount; ++j) split(j, t.jointStart[j], t.jointStart[j + 1], entries);
  split(t.jointCount, 0, t.vertexCount, vertices);
  return SumParts{table(ctx, range), table(ctx, joint), table(ctx, jointStart), uint32_t(joint.size())};
}

const SkinningVk::SumParts& SkinningVk::sumParts(uint32_t batch) const {
  return batch < SKIN_SUM_PART_BELOW ? m_splitParts : m_wholeParts;
}

SkinningVk::SkinningVk(vk::Context& ctx, const SkinningTables& t, uint32_t maxBatch)
    : m_ctx(ctx), m_maxBatch(maxBatch) {
  m_dims = t;
  m_deviceBytes = t.deviceBytes();
  ARM_CHECK(t.coefCount() <= SKIN_MAX_COEFS,
            "skinning (Vulkan): %u shape + expression components; the Vulkan path holds at most %d", t.coefCount(),
            SKIN_MAX_COEFS);
  size_t F = t.featureCount + t.coefCount();
  size_t vposedBytes = size_t(maxBatch) * t.vertexCount * 3 * 4;
  // Every table and work buffer is bound whole, so each must fit the device's storage-buffer range.
  uint64_t limit = ctx.info().maxStorageBufferRange;
  ARM_CHECK(
      vposedBytes <= limit && t.blendMatrix.size() * 4 <= limit,
      "skinning (Vulkan): a batch of %u needs a %.0f MiB buffer; '%s' binds at most %.0f MiB (maxStorageBufferRange)",
      maxBatch, vposedBytes / 1048576.0, ctx.info().name.c_str(), limit / 1048576.0);
  m_vTemplate = table(ctx, t.vTemplate);
  m_blend = table(ctx, t.blendMatrix);
  m_jointTemplate = table(ctx, t.jointTemplate);
  m_jointDirs = table(ctx, t.jointDirs);  // empty without components: a 4-byte buffer, never read
  m_weightStart = table(ctx, t.weightStart);
  m_weightJoint = table(ctx, t.weightJoint);
  m_weightValue = table(ctx, t.weightValue);
  m_parents = table(ctx, t.parents);
  m_wholeParts = makeSumParts(ctx, t, UINT32_MAX, UINT32_MAX);
  m_splitParts = makeSumParts(ctx, t, SKIN_SUM_PART, SKIN_SUM_PART_VERTICES);
  m_jointVertex = table(ctx, t.jointVertex);
  m_jointWeight = table(ctx, t.jointWeight);
  m_features = vk::Buffer(ctx, std::max<size_t>(maxBatch * F * 4, 4), vk::kStorageUsage);
  m_transforms = vk::Buffer(ctx, size_t(maxBatch) * t.jointCount * 12 * 4, vk::kStorageUsage);
  m_vPosed = vk::Buffer(ctx, vposedBytes, vk::kStorageUsage);
  m_saved = vk::Buffer(ctx, size_t(maxBatch) * t.jointCount * SKIN_SAVED * 4, vk::kStorageUsage);
}

void SkinningVk::forward(const Exec& exec, const SkinningForwardArgs& a) {
  const SkinningDims& t = m_dims;
  const VkCommandBuffer cmd = exec.commandBuffer();
  const uint32_t batch = a.batch;
  const size_t B = batch;
  // Absent coefficients (none used) bind the pose in their place: a descriptor must name a buffer.
  const BufferView pose = a.pose.vulkan(), betas = a.betas.empty() ? pose : a.betas.vulkan(),
                   expression = a.expression.empty() ? pose : a.expression.vulkan(), transl = a.transl.vulkan(),
                   vertices = a.vertices.vulkan(), joints = a.joints.vulkan();
  SkinningPush push{batch, t.vertexCount, t.jointCount, t.featureCount, t.coefCount(), t.shapeCount, 0, 0, 0};
  vk::StageZones zones{exec.stages(), cmd};
  // The blend product's input, the pose features and coefficients: one item's stream computes them itself, more
  // items' tiled GEMM reads them from a dispatch before it.
  if (batch > 1) {
    zones.next("skin: features");
    vk::dispatch(cmd, m_ctx.program(shaders::skin_features, SKIN_FEATURES_BINDINGS, sizeof push),
                 vk::exactGroupCount(B * (t.jointCount - 1 + t.coefCount()), SKIN_FEATURE_GROUP),  // skinFeatureUnits
                 {pose, betas, expression, m_features.view()}, push);
    vk::computeBarrier(cmd);
  }
  // The joint chain and the blend product do not read each other's results: no barrier between them, so the chain
  // (one workgroup per item) runs beside the product instead of before it.
  zones.next("skin: chain, blend");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_joints, SKIN_JOINTS_BINDINGS, sizeof push),
               batch,  // one workgroup per item
               {pose, betas, expression, transl, m_jointTemplate.view(), m_jointDirs.view(), m_parents.view(),
                m_transforms.view(), joints, m_saved.view()},
               push);
  // The blend product: one item streams the matrix (skin_blend), more use a register-tiled GEMM whose tile height
  // (32 or 128 items) wastes little of the tile.
  const size_t columns = size_t(t.vertexCount) * 3;
  if (batch == 1) {
    vk::dispatch(cmd, m_ctx.program(shaders::skin_blend, SKIN_BLEND_BINDINGS, sizeof push),
                 vk::exactGroupCount(columns, SKIN_BLEND_COLUMNS),
                 {pose, betas, expression, m_blend.view(), m_vTemplate.view(), m_vPosed.view()}, push);
  } else {
    const bool mid = batch <= SKIN_TILE_MID_MAX;
    const uint32_t rows = mid ? SKIN_TILE_ROWS_MID : SKIN_TILE_ROWS_MANY;
    vk::dispatch(cmd,
                 m_ctx.program(mid ? shaders::skin_blend_mid : shaders::skin_blend_tiled, SKIN_BLEND_TILED_BINDINGS,
                               sizeof push),
                 vk::exactGroupCount(columns, SKIN_TILE_COLUMNS),
                 {m_features.view(), m_blend.view(), m_vTemplate.view(), m_vPosed.view()}, push,
                 (batch + rows - 1) / rows);
  }
  vk::computeBarrier(cmd);
  zones.next("skin: vertices");
  const auto& skin = m_ctx.program(shaders::skin_vertices, SKIN_VERTICES_BINDINGS, sizeof push);
  vk::dispatch(cmd, skin, vk::groupCount(size_t(batch) * t.vertexCount, SKIN_VERTEX_GROUP),
               {m_vPosed.view(), m_transforms.view(), m_weightStart.view(), m_weightJoint.view(), m_weightValue.view(),
                transl, vertices},
               push);
  zones.next(nullptr);
}

void SkinningVk::backward(const Exec& exec, const SkinningBackwardArgs& a) {
  const SkinningDims& t = m_dims;
  const char* call = "skinning backward (Vulkan)";
  const VkCommandBuffer cmd = exec.commandBuffer();
  const uint32_t batch = a.batch;
  const size_t B = batch, F = size_t(t.featureCount) + t.coefCount();
  const BufferView pose = a.pose.vulkan(), gradVertices = a.gradVertices.vulkan();
  struct {
    BufferView pose, betas, expression, transl;
  } out{a.gradPose.vulkan(), a.gradBetas.empty() ? a.gradPose.vulkan() : a.gradBetas.vulkan(),
        a.gradExpression.empty() ? a.gradPose.vulkan() : a.gradExpression.vulkan(), a.gradTransl.vulkan()};
  const uint32_t columns = t.vertexCount * 3;
  if (!m_gradPartials) {
    size_t partials = 1;  // the most any batch up to maxBatch needs: slices × items × features
    for (uint32_t b = 1; b <= m_maxBatch; ++b)
      partials = std::max(partials, size_t(skinGradSlices(b, uint32_t(F), columns)) * b * F);
    ARM_CHECK(partials * 4 <= m_ctx.info().maxStorageBufferRange,
              "%s: dL/dfeatures of up to %u items needs a %.0f MiB buffer; '%s' binds at most %.0f MiB "
              "(maxStorageBufferRange)",
              call, m_maxBatch, partials * 4 / 1048576.0, m_ctx.info().name.c_str(),
              m_ctx.info().maxStorageBufferRange / 1048576.0);
    m_gradVPosed = vk::Buffer(m_ctx, m_vPosed.size(), vk::kStorageUsage);
    // The most parts × items: the largest batch, or the largest that still splits joints into parts.
    size_t parts = 0;
    for (uint32_t b : {m_maxBatch, std::min<uint32_t>(m_maxBatch, SKIN_SUM_PART_BELOW - 1)})
      parts = std::max(parts, size_t(sumParts(b).count) * b);
    m_gradParts = vk::Buffer(m_ctx, parts * 12 * 4, vk::kStorageUsage);
    m_chainGrads = vk::Buffer(m_ctx, size_t(m_maxBatch) * t.jointCount * 12 * 4, vk::kStorageUsage);
    m_gradPartials = vk::Buffer(m_ctx, partials * 4, vk::kStorageUsage);  // last: it says all four exist
  }
  const uint32_t tileItems = skinGradTileItems(batch), slices = skinGradSlices(batch, uint32_t(F), columns);
  const uint32_t sumItems = skinJointSumItems(batch);
  SkinningPush push{
      batch,  t.vertexCount, t.jointCount, t.featureCount, t.coefCount(), t.shapeCount, a.gradJoints.empty() ? 0u : 1u,
      slices, sumItems};
  const vk::BufferView jointGrads = a.gradJoints.empty() ? m_saved.view() : a.gradJoints.vulkan();  // unread without
  const SumParts& parts = sumParts(batch);
  vk::StageZones zones{exec.stages(), cmd};
  vk::computeBarrier(cmd);  // the forward's v_posed, transforms and saved chain
  zones.next("skin backward: vertices");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_vertices, SKIN_BACKWARD_VERTICES_BINDINGS, sizeof push),
               vk::groupCount(B * t.vertexCount, SKIN_VERTEX_GROUP),
               {gradVertices, m_transforms.view(), m_weightStart.view(), m_weightJoint.view(), m_weightValue.view(),
                m_gradVPosed.view()},
               push);
  // The per-joint sums read dL/dv and v_posed only: no barrier before them.
  zones.next("skin backward: joint sums");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_joints, SKIN_BACKWARD_JOINTS_BINDINGS, sizeof push),
               parts.count,
               {gradVertices, m_vPosed.view(), parts.range.view(), parts.joint.view(), m_jointVertex.view(),
                m_jointWeight.view(), m_gradParts.view()},
               push, (batch + sumItems - 1) / sumItems);
  vk::computeBarrier(cmd);
  zones.next("skin backward: chain, features");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_chain, SKIN_BACKWARD_CHAIN_BINDINGS, sizeof push), batch,
               {m_saved.view(), m_gradParts.view(), parts.jointStart.view(), jointGrads, m_parents.view(),
                m_chainGrads.view(), out.transl},
               push);
  const auto& features =
      batch <= SKIN_GRAD_FEW_MAX ? shaders::skin_backward_features_few : shaders::skin_backward_features_many;
  vk::dispatch(cmd, m_ctx.program(features, SKIN_BACKWARD_FEATURES_BINDINGS, sizeof push),
               uint32_t((F + SKIN_GRAD_FEATURES - 1) / SKIN_GRAD_FEATURES) * slices,
               {m_gradVPosed.view(), m_blend.view(), m_gradPartials.view()}, push,
               uint32_t((B + tileItems - 1) / tileItems));
  vk::computeBarrier(cmd);
  zones.next("skin backward: parameters");
  vk::dispatch(
      cmd, m_ctx.program(shaders::skin_backward_params, SKIN_BACKWARD_PARAMS_BINDINGS, sizeof push), batch,
      {pose, m_chainGrads.view(), m_gradPartials.view(), m_jointDirs.view(), out.pose, out.betas, out.expression},
      push);
  zones.next(nullptr);
}

std::unique_ptr<SkinningBackend> makeSkinning(Device& device, const SkinningTables& tables, uint32_t maxBatch,
                                              const SkinningTuning&) {
  return std::make_unique<SkinningVk>(*device.vulkan(), tables, maxBatch);
}

}  // namespace armature::vk
