#pragma once
// GPU timer on timestamp queries. A ring of `framesInFlight` slots, each with room for `zonesPerFrame`
// begin/end pairs: a frame writes its slot; collect() reads the oldest slot's results only when the GPU has
// made them available (VK_QUERY_RESULT_WITH_AVAILABILITY_BIT), so the frame never stalls on the timer.
// Zones are also placed on the host's clock (std::chrono::steady_clock, CLOCK_MONOTONIC on Linux), so profiles show
// device work where it happened: through VK_EXT_calibrated_timestamps where the device has it (recalibrated every
// second), else from one timestamp whose submission the host waited for (late by at most that wait).
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "armature/vk/context.h"

namespace armature::vk {

struct ZoneTime {
  std::string name;
  double milliseconds = 0;
  int64_t beginHostNs = 0, endHostNs = 0;  // the zone on the host's steady clock (ns since its epoch)
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
  // A device timestamp on the host's steady clock (ns), from the latest calibration.
  int64_t ticksToHostNs(uint64_t ticks) const;

 private:
  std::optional<std::vector<ZoneTime>> read(uint32_t slot, bool wait);
  void calibrate();
  static constexpr int64_t kRecalibrateNs = 1'000'000'000;
  bool m_calibrated = false;   // through VK_EXT_calibrated_timestamps (else the one waited-for timestamp)
  uint64_t m_anchorTicks = 0;  // a device timestamp ...
  int64_t m_anchorHostNs = 0;  // ... and the host time it corresponds to
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

// Zones over an op's dispatches, on the timer a caller lends (Exec::stages(); none: nothing is recorded): next("name")
// ends the open zone and opens the next (the open one goes on where it has that name), next(nullptr) or the end of
// the scope ends it.
class StageZones {
 public:
  StageZones(GpuTimer* timer, VkCommandBuffer cmd) : m_timer(timer), m_cmd(cmd) {}
  StageZones(const StageZones&) = delete;
  StageZones& operator=(const StageZones&) = delete;
  ~StageZones() { next(nullptr); }
  void next(const char* name) {
    if (!m_timer || (m_open && name && std::strcmp(name, m_open) == 0)) return;
    if (m_open) m_timer->endZone(m_cmd, m_zone);
    m_open = name;
    if (m_open) m_zone = m_timer->beginZone(m_cmd, name);
  }

 private:
  GpuTimer* m_timer;
  VkCommandBuffer m_cmd;
  uint32_t m_zone = 0;
  const char* m_open = nullptr;  // the open zone's name
};

}  // namespace armature::vk
