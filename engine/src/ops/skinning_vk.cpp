#include "armature/ops/skinning.h"

#include <algorithm>

#include "armature/shaders.h"
#include "shared/skinning_io.h"

namespace armature {

namespace {
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

SkinningVk::SkinningVk(vk::Context& ctx, const BodyModel& model, uint32_t S, uint32_t E, uint32_t maxBatch)
    : m_ctx(ctx), m_maxBatch(maxBatch) {
  ARM_CHECK(maxBatch >= 1 && maxBatch <= 65535, "SkinningVk: maxBatch must be in [1, 65535] (one workgroup per item)");
  const SkinningTables t = buildSkinningTables(model, S, E);
  m_dims = t;
  ARM_CHECK(t.coefCount() <= SKIN_MAX_COEFS,
            "SkinningVk: %u shape + expression components; the Vulkan path holds at most %d", t.coefCount(),
            SKIN_MAX_COEFS);
  size_t F = t.featureCount + t.coefCount();
  size_t vposedBytes = size_t(maxBatch) * t.vertexCount * 3 * 4;
  // Every table and work buffer is bound whole, so each must fit the device's storage-buffer range.
  uint64_t limit = ctx.info().maxStorageBufferRange;
  ARM_CHECK(vposedBytes <= limit && t.blendMatrix.size() * 4 <= limit,
            "SkinningVk: a batch of %u needs a %.0f MiB buffer; '%s' binds at most %.0f MiB", maxBatch,
            vposedBytes / 1048576.0, ctx.info().name.c_str(), limit / 1048576.0);
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

namespace {
// A buffer's size against what a call needs: a clear error naming the argument.
void needFloats(const char* call, const vk::Buffer& b, size_t floats, const char* name) {
  ARM_CHECK(b.size() >= std::max<size_t>(floats, 1) * 4, "%s: %s holds %llu bytes, needs %zu", call, name,
            (unsigned long long)b.size(), floats * 4);
}
// Timer zones over a call's dispatches: next("name") ends the open zone and opens the next; next(nullptr) ends it.
struct StageZones {
  vk::GpuTimer* timer;
  VkCommandBuffer cmd;
  uint32_t zone = 0;
  bool open = false;
  void next(const char* name) {
    if (!timer) return;
    if (open) timer->endZone(cmd, zone);
    open = name != nullptr;
    if (open) zone = timer->beginZone(cmd, name);
  }
};
}  // namespace

void SkinningVk::forward(VkCommandBuffer cmd, uint32_t batch, const vk::Buffer& pose, const vk::Buffer& betas,
                         const vk::Buffer& expression, const vk::Buffer& transl, vk::Buffer& vertices,
                         vk::Buffer& joints, vk::GpuTimer* stages) {
  const SkinningDims& t = m_dims;
  const char* call = "SkinningVk::forward";
  ARM_CHECK(batch >= 1 && batch <= m_maxBatch, "%s: batch %u outside [1, %u]", call, batch, m_maxBatch);
  const size_t B = batch;
  needFloats(call, pose, B * t.jointCount * 3, "pose (B,J,3)");
  needFloats(call, betas, B * t.shapeCount, "betas (B,S)");
  needFloats(call, expression, B * t.exprCount, "expression (B,E)");
  needFloats(call, transl, B * 3, "transl (B,3)");
  needFloats(call, vertices, B * t.vertexCount * 3, "vertices (B,V,3)");
  needFloats(call, joints, B * t.jointCount * 3, "joints (B,J,3)");
  SkinningPush push{batch, t.vertexCount, t.jointCount, t.featureCount, t.coefCount(), t.shapeCount, 0, 0, 0};
  StageZones zones{stages, cmd};
  // The blend product's input, the pose features and coefficients: one item's stream computes them itself, more
  // items' tiled GEMM reads them from a dispatch before it.
  if (batch > 1) {
    zones.next("skin: features");
    vk::dispatch(cmd, m_ctx.program(shaders::skin_features, 4, sizeof push),
                 vk::groupCount(B * (t.jointCount - 1 + t.coefCount()), SKIN_FEATURE_GROUP),  // skinFeatureUnits
                 {pose.view(), betas.view(), expression.view(), m_features.view()}, push);
    vk::computeBarrier(cmd);
  }
  // The joint chain and the blend product do not read each other's results: no barrier between them, so the chain
  // (one workgroup per item) runs beside the product instead of before it.
  zones.next("skin: chain, blend");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_joints, 10, sizeof push), batch,  // one workgroup per item
               {pose.view(), betas.view(), expression.view(), transl.view(), m_jointTemplate.view(), m_jointDirs.view(),
                m_parents.view(), m_transforms.view(), joints.view(), m_saved.view()},
               push);
  // The blend product: one item streams the matrix (skin_blend), more use a register-tiled GEMM whose tile height
  // (32 or 128 items) wastes little of the tile.
  const size_t columns = size_t(t.vertexCount) * 3;
  if (batch == 1) {
    vk::dispatch(cmd, m_ctx.program(shaders::skin_blend, 6, sizeof push), vk::groupCount(columns, SKIN_BLEND_COLUMNS),
                 {pose.view(), betas.view(), expression.view(), m_blend.view(), m_vTemplate.view(), m_vPosed.view()},
                 push);
  } else {
    const bool mid = batch <= SKIN_TILE_MID_MAX;
    const uint32_t rows = mid ? SKIN_TILE_ROWS_MID : SKIN_TILE_ROWS_MANY;
    vk::dispatch(cmd, m_ctx.program(mid ? shaders::skin_blend_mid : shaders::skin_blend_tiled, 4, sizeof push),
                 vk::groupCount(columns, SKIN_TILE_COLUMNS),
                 {m_features.view(), m_blend.view(), m_vTemplate.view(), m_vPosed.view()}, push,
                 (batch + rows - 1) / rows);
  }
  vk::computeBarrier(cmd);
  zones.next("skin: vertices");
  const auto& skin = m_ctx.program(shaders::skin_vertices, 7, sizeof push);
  vk::dispatch(cmd, skin, vk::groupCount(size_t(batch) * t.vertexCount, SKIN_VERTEX_GROUP),
               {m_vPosed.view(), m_transforms.view(), m_weightStart.view(), m_weightJoint.view(), m_weightValue.view(),
                transl.view(), vertices.view()},
               push);
  zones.next(nullptr);
  m_lastBatch = batch;
}

void SkinningVk::backward(VkCommandBuffer cmd, uint32_t batch, const vk::Buffer& pose, const vk::Buffer& gradVertices,
                          const vk::Buffer* gradJoints, const SkinningGradBuffers& out, vk::GpuTimer* stages) {
  const SkinningDims& t = m_dims;
  const char* call = "SkinningVk::backward";
  ARM_CHECK(m_lastBatch != 0, "%s: no forward() recorded before it (it reads what the forward kept)", call);
  ARM_CHECK(batch == m_lastBatch, "%s: batch %u, but the last forward() had %u", call, batch, m_lastBatch);
  const size_t B = batch, F = size_t(t.featureCount) + t.coefCount();
  needFloats(call, pose, B * t.jointCount * 3, "pose (B,J,3)");
  needFloats(call, gradVertices, B * t.vertexCount * 3, "gradVertices (B,V,3)");
  if (gradJoints) needFloats(call, *gradJoints, B * t.jointCount * 3, "gradJoints (B,J,3)");
  needFloats(call, out.pose, B * t.jointCount * 3, "gradPose (B,J,3)");
  needFloats(call, out.betas, B * t.shapeCount, "gradBetas (B,S)");
  needFloats(call, out.expression, B * t.exprCount, "gradExpression (B,E)");
  needFloats(call, out.transl, B * 3, "gradTransl (B,3)");
  const uint32_t columns = t.vertexCount * 3;
  if (!m_gradPartials) {
    size_t partials = 1;  // the most any batch up to maxBatch needs: slices × items × features
    for (uint32_t b = 1; b <= m_maxBatch; ++b)
      partials = std::max(partials, size_t(skinGradSlices(b, uint32_t(F), columns)) * b * F);
    ARM_CHECK(partials * 4 <= m_ctx.info().maxStorageBufferRange,
              "%s: dL/dfeatures of up to %u items needs a %.0f MiB buffer; '%s' binds at most %.0f MiB", call,
              m_maxBatch, partials * 4 / 1048576.0, m_ctx.info().name.c_str(),
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
  SkinningPush push{batch,        t.vertexCount,        t.jointCount, t.featureCount, t.coefCount(),
                    t.shapeCount, gradJoints ? 1u : 0u, slices,       sumItems};
  const vk::BufferView jointGrads = gradJoints ? gradJoints->view() : m_saved.view();  // unread without them
  const SumParts& parts = sumParts(batch);
  StageZones zones{stages, cmd};
  vk::computeBarrier(cmd);  // the forward's v_posed, transforms and saved chain
  zones.next("skin backward: vertices");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_vertices, 6, sizeof push),
               vk::groupCount(B * t.vertexCount, SKIN_VERTEX_GROUP),
               {gradVertices.view(), m_transforms.view(), m_weightStart.view(), m_weightJoint.view(),
                m_weightValue.view(), m_gradVPosed.view()},
               push);
  // The per-joint sums read dL/dv and v_posed only: no barrier before them.
  zones.next("skin backward: joint sums");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_joints, 7, sizeof push), parts.count,
               {gradVertices.view(), m_vPosed.view(), parts.range.view(), parts.joint.view(), m_jointVertex.view(),
                m_jointWeight.view(), m_gradParts.view()},
               push, (batch + sumItems - 1) / sumItems);
  vk::computeBarrier(cmd);
  zones.next("skin backward: chain, features");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_chain, 7, sizeof push), batch,
               {m_saved.view(), m_gradParts.view(), parts.jointStart.view(), jointGrads, m_parents.view(),
                m_chainGrads.view(), out.transl.view()},
               push);
  const auto& features =
      batch <= SKIN_GRAD_FEW_MAX ? shaders::skin_backward_features_few : shaders::skin_backward_features_many;
  vk::dispatch(cmd, m_ctx.program(features, 3, sizeof push),
               uint32_t((F + SKIN_GRAD_FEATURES - 1) / SKIN_GRAD_FEATURES) * slices,
               {m_gradVPosed.view(), m_blend.view(), m_gradPartials.view()}, push,
               uint32_t((B + tileItems - 1) / tileItems));
  vk::computeBarrier(cmd);
  zones.next("skin backward: parameters");
  vk::dispatch(cmd, m_ctx.program(shaders::skin_backward_params, 7, sizeof push), batch,
               {pose.view(), m_chainGrads.view(), m_gradPartials.view(), m_jointDirs.view(), out.pose.view(),
                out.betas.view(), out.expression.view()},
               push);
  zones.next(nullptr);
}

}  // namespace armature
