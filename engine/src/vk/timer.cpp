#include "armature/vk/timer.h"
#include <volk.h>  // the library's own Vulkan function table

#include <cmath>

#include "armature/clock.h"

namespace armature::vk {

GpuTimer::GpuTimer(Context& ctx, uint32_t framesInFlight, uint32_t zonesPerFrame)
    : m_ctx(ctx), m_frames(framesInFlight), m_zones(zonesPerFrame), m_periodNs(ctx.info().timestampPeriodNs) {
  uint32_t bits = ctx.info().timestampValidBits;
  ARM_CHECK(bits > 0, "device '%s' cannot write timestamps on its compute queue", ctx.info().name.c_str());
  m_validMask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = m_frames * m_zones * 2;
  VK_CHECK(vkCreateQueryPool(ctx.device(), &qi, ctx.allocator(), &m_pool));
  m_slots.resize(m_frames);
  m_calibrated = ctx.info().calibratedTimestamps && vkGetCalibratedTimestampsEXT;
  if (m_calibrated) {
    calibrate();
  } else {
    // One timestamp the host waits for: its host time is taken after the wait, so zones read late by at most the
    // wait's latency (tens of µs to a few hundred on a virtual machine).
    VkQueryPoolCreateInfo one{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    one.queryType = VK_QUERY_TYPE_TIMESTAMP;
    one.queryCount = 1;
    VkQueryPool pool;
    VK_CHECK(vkCreateQueryPool(ctx.device(), &one, ctx.allocator(), &pool));
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      vkCmdResetQueryPool(cmd, pool, 0, 1);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 0);
    });
    m_anchorHostNs = steadyNowNs();
    VkResult r = vkGetQueryPoolResults(ctx.device(), pool, 0, 1, sizeof m_anchorTicks, &m_anchorTicks,
                                       sizeof m_anchorTicks, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    vkDestroyQueryPool(ctx.device(), pool, ctx.allocator());
    VK_CHECK(r);
  }
}

void GpuTimer::calibrate() {
  VkCalibratedTimestampInfoEXT infos[2] = {
      {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, VK_TIME_DOMAIN_DEVICE_EXT},
      {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT}};
  uint64_t values[2], deviation = 0;
  VK_CHECK(vkGetCalibratedTimestampsEXT(m_ctx.device(), 2, infos, values, &deviation));
  m_anchorTicks = values[0];
  m_anchorHostNs = int64_t(values[1]);  // CLOCK_MONOTONIC: std::chrono::steady_clock's clock on Linux
}

int64_t GpuTimer::ticksToHostNs(uint64_t ticks) const {
  uint64_t delta = (ticks - m_anchorTicks) & m_validMask;
  int64_t signedDelta =
      delta > (m_validMask >> 1) ? -int64_t((m_validMask - delta) + 1) : int64_t(delta);  // before the anchor
  return m_anchorHostNs + int64_t(std::llround(double(signedDelta) * m_periodNs));
}

GpuTimer::~GpuTimer() { vkDestroyQueryPool(m_ctx.device(), m_pool, m_ctx.allocator()); }

std::optional<std::vector<ZoneTime>> GpuTimer::beginFrame(VkCommandBuffer cmd, uint64_t frameIndex) {
  // The two clocks drift apart by parts per million: a fresh pair every second keeps zones within a µs or so.
  if (m_calibrated && steadyNowNs() - m_anchorHostNs > kRecalibrateNs) calibrate();
  m_current = uint32_t(frameIndex % m_frames);
  std::optional<std::vector<ZoneTime>> previous;
  if (m_slots[m_current].frame != UINT64_MAX) previous = read(m_current, false);
  vkCmdResetQueryPool(cmd, m_pool, m_current * m_zones * 2, m_zones * 2);
  m_slots[m_current].frame = frameIndex;
  m_slots[m_current].names.clear();
  return previous;
}

uint32_t GpuTimer::beginZone(VkCommandBuffer cmd, const char* name) {
  auto& slot = m_slots[m_current];
  ARM_CHECK(slot.names.size() < m_zones, "more than %u GPU timer zones in one frame", m_zones);
  uint32_t zone = uint32_t(slot.names.size());
  slot.names.emplace_back(name);
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, m_pool, (m_current * m_zones + zone) * 2);
  return zone;
}

void GpuTimer::endZone(VkCommandBuffer cmd, uint32_t zone) {
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m_pool, (m_current * m_zones + zone) * 2 + 1);
}

std::vector<ZoneTime> GpuTimer::waitFrame(uint64_t frameIndex) {
  uint32_t slot = uint32_t(frameIndex % m_frames);
  ARM_CHECK(m_slots[slot].frame == frameIndex, "GPU timer frame %llu is no longer in the ring",
            (unsigned long long)frameIndex);
  return *read(slot, true);
}

std::optional<std::vector<ZoneTime>> GpuTimer::read(uint32_t slot, bool wait) {
  auto& s = m_slots[slot];
  uint32_t n = uint32_t(s.names.size());
  std::vector<ZoneTime> out;
  if (n == 0) return out;
  std::vector<uint64_t> data(n * 2 * 2);  // (value, availability) per query
  VkQueryResultFlags flags =
      VK_QUERY_RESULT_64_BIT | (wait ? VK_QUERY_RESULT_WAIT_BIT : VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
  VkDeviceSize stride = wait ? sizeof(uint64_t) : 2 * sizeof(uint64_t);
  VkResult r = vkGetQueryPoolResults(m_ctx.device(), m_pool, slot * m_zones * 2, n * 2, data.size() * sizeof(uint64_t),
                                     data.data(), stride, flags);
  if (r == VK_NOT_READY) return std::nullopt;
  VK_CHECK(r);
  for (uint32_t z = 0; z < n; ++z) {
    uint64_t begin, end;
    if (wait) {
      begin = data[2 * z];
      end = data[2 * z + 1];
    } else {
      if (!data[4 * z + 1] || !data[4 * z + 3]) return std::nullopt;
      begin = data[4 * z];
      end = data[4 * z + 2];
    }
    uint64_t ticks = (end - begin) & m_validMask;  // masked difference survives a counter wrap
    out.push_back({s.names[z], ticksToMs(ticks), ticksToHostNs(begin), ticksToHostNs(end)});
  }
  return out;
}

}  // namespace armature::vk
