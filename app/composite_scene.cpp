#include "app/composite_scene.h"

#include <algorithm>

#include "armature/error.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "shared/render_io.h"

namespace armature::app {

CompositeScene::CompositeScene(vk::Context& ctx, std::vector<std::unique_ptr<Scene>> parts)
    : m_ctx(ctx), m_parts(std::move(parts)) {
  ARM_CHECK(!m_parts.empty(), "CompositeScene: no parts");
  m_vertexStart = {0}, m_jointStart = {0};
  for (const auto& part : m_parts) {
    ARM_CHECK(part->backend() == m_parts[0]->backend(), "CompositeScene: the parts run on different backends");
    ARM_CHECK(part->avatars() == m_parts[0]->avatars(), "CompositeScene: the parts' crowds differ in size");
    const int32_t vertex0 = int32_t(m_vertexStart.back()), joint0 = int32_t(m_jointStart.back());
    for (int32_t v : part->faces()) m_faces.push_back(vertex0 + v);
    for (int32_t p : part->parents()) m_parents.push_back(p < 0 ? -1 : joint0 + p);
    m_vertexStart.push_back(m_vertexStart.back() + part->vertexCount());
    m_jointStart.push_back(m_jointStart.back() + part->jointCount());
  }
  const size_t members = maxAvatars();
  ARM_CHECK(members * std::max(vertexCount(), jointCount()) * 3 < (size_t(1) << 32),
            "CompositeScene: %zu members of %u vertices are too many to gather", members, vertexCount());
  m_positions = vk::Buffer(ctx, members * vertexCount() * 12, vk::kStorageUsage | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT);
  m_joints = vk::Buffer(ctx, std::max<size_t>(members * jointCount() * 12, 4), vk::kStorageUsage);
  arrange();
}

CompositeScene::~CompositeScene() = default;

uint32_t CompositeScene::maxAvatars() const {
  uint32_t most = m_parts[0]->maxAvatars();
  for (size_t p = 1; p < m_parts.size(); ++p) most = std::min(most, m_parts[p]->maxAvatars());
  return most;
}

void CompositeScene::setBackend(Backend backend) {
  const Backend before = this->backend();
  try {
    for (auto& part : m_parts) part->setBackend(backend);
  } catch (...) {
    for (auto& part : m_parts) part->setBackend(before);  // worked before, works again
    throw;
  }
}

std::string CompositeScene::backendStatus() const {
  std::string status;
  for (const auto& part : m_parts) status += (status.empty() ? "" : " | ") + part->backendStatus();
  return status;
}

void CompositeScene::setAvatars(uint32_t count) {
  ARM_CHECK(count >= 1 && count <= maxAvatars(), "avatars must be in [1, %u], got %u", maxAvatars(), count);
  const uint32_t before = avatars();
  try {
    for (auto& part : m_parts) part->setAvatars(count);
  } catch (...) {
    for (auto& part : m_parts) part->setAvatars(before);
    throw;
  }
  arrange();
}

void CompositeScene::arrange() {
  float lo[3], hi[3];
  m_parts[0]->crowdBounds(lo, hi);
  const double gap = 0.3 * std::max(hi[1] - lo[1], 1e-3f);  // a third of the first part's height
  double right = hi[0];
  for (size_t p = 1; p < m_parts.size(); ++p) {
    Scene& part = *m_parts[p];
    part.setCrowdOrigin(0, 0);
    part.update(m_time);
    part.crowdBounds(lo, hi);
    part.setCrowdOrigin(right + gap - lo[0], 0);
    part.update(m_time);
    part.crowdBounds(lo, hi);
    right = hi[0];
  }
}

void CompositeScene::update(double seconds) {
  m_time = seconds;
  for (auto& part : m_parts) {
    part->animate = animate;
    part->update(seconds);
  }
}

void CompositeScene::skin(VkCommandBuffer cmd, vk::GpuTimer* timer) {
  m_ownTimes.clear();
  for (auto& part : m_parts) {
    part->skin(cmd, timer);
    m_ownTimes.insert(m_ownTimes.end(), part->ownTimes().begin(), part->ownTimes().end());
  }
  // Member i's vertices (joints) of part p go to member i's slice of the gathered buffer, at p's start: a dispatch
  // per part and buffer (a buffer copy of one region per member was far slower: the driver copies them one by one).
  const uint32_t members = avatars();
  m_stage.begin(m_ctx, cmd, timer, "gather");
  const auto& program = m_ctx.program(shaders::gather_rows, GATHER_ROWS_BINDINGS, sizeof(GatherRowsPush));
  auto gather = [&](VkBuffer from, VkBuffer to, uint32_t start, uint32_t count, uint32_t total) {
    if (!count) return;
    const GatherRowsPush push{members, count * 3, total * 3, start * 3};
    vk::dispatch(cmd, program, vk::groupCount(uint64_t(members) * count * 3, GATHER_ROWS_GROUP),
                 {{from, 0, VK_WHOLE_SIZE}, {to, 0, VK_WHOLE_SIZE}}, push);
  };
  for (size_t p = 0; p < m_parts.size(); ++p) {
    gather(m_parts[p]->positions(), m_positions.handle(), m_vertexStart[p], m_parts[p]->vertexCount(), vertexCount());
    gather(m_parts[p]->joints(), m_joints.handle(), m_jointStart[p], m_parts[p]->jointCount(), jointCount());
  }
  m_stage.end(cmd, timer);
}

VisibilityBuffers CompositeScene::rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer,
                                            const std::array<float, 16>& viewProj, VkExtent2D extent) {
  if (!m_raster) m_raster = std::make_unique<VisibilityRaster>(m_ctx, m_faces, vertexCount());
  m_stage.begin(m_ctx, cmd, timer, "raster");
  VisibilityBuffers out = m_raster->recordVulkan(cmd, m_positions.handle(), avatars(), viewProj, extent);
  m_stage.end(cmd, timer);
  return out;
}

void CompositeScene::crowdBounds(float lo[3], float hi[3]) const {
  m_parts[0]->crowdBounds(lo, hi);
  for (size_t p = 1; p < m_parts.size(); ++p) {
    float partLo[3], partHi[3];
    m_parts[p]->crowdBounds(partLo, partHi);
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], partLo[k]), hi[k] = std::max(hi[k], partHi[k]);
  }
}

float CompositeScene::floorY() const {
  float lowest = m_parts[0]->floorY();
  for (size_t p = 1; p < m_parts.size(); ++p) lowest = std::min(lowest, m_parts[p]->floorY());
  return lowest;
}

std::vector<float> CompositeScene::readPositions() const {
  return m_positions.download<float>(size_t(avatars()) * vertexCount() * 3);
}

}  // namespace armature::app
