#pragma once
// GPU timer on timestamp queries. A ring of `framesInFlight` slots, each with room for `zonesPerFrame`
// begin/end pairs: a frame writes its slot; collect() reads the oldest slot's results only when the GPU has
// made them available (VK_QUERY_RESULT_WITH_AVAILABILITY_BIT), so the frame never stalls on the timer.
#include <optional>
#include <string>
#include <vector>

#include "armature/vk/context.h"

namespace armature::vk {

struct ZoneTime {
  std::string name;
  double milliseconds = 0;
};

class GpuTimer {
 public:
  GpuTimer(Context& ctx, uint32_t framesInFlight = 3, uint32_t zonesPerFrame = 32);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  // Starts frame `frameIndex` (monotonic): returns the finished results of the frame that last used this
  // slot if the GPU has them (else nothing, and they are dropped), then resets the slot on `cmd`.
  std::optional<std::vector<ZoneTime>> beginFrame(VkCommandBuffer cmd, uint64_t frameIndex);
  // Zones nest or follow each other; each begin needs an end in the same frame.
  uint32_t beginZone(VkCommandBuffer cmd, const char* name);
  void endZone(VkCommandBuffer cmd, uint32_t zone);
  // Blocks until the given frame's results are available (for tests and benchmarks, not the frame loop).
  std::vector<ZoneTime> waitFrame(uint64_t frameIndex);

  double ticksToMs(uint64_t ticks) const { return double(ticks) * m_periodNs * 1e-6; }

 private:
  std::optional<std::vector<ZoneTime>> read(uint32_t slot, bool wait);
  Context& m_ctx;
  VkQueryPool m_pool = VK_NULL_HANDLE;
  uint32_t m_frames, m_zones;
  double m_periodNs;
  uint64_t m_validMask;
  struct Slot {
    uint64_t frame = UINT64_MAX;
    std::vector<std::string> names;
  };
  std::vector<Slot> m_slots;
  uint32_t m_current = 0;
};

}  // namespace armature::vk
