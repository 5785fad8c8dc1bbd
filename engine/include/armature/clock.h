#pragma once
// The host clock every profile and timer places its spans on: std::chrono::steady_clock (CLOCK_MONOTONIC on Linux,
// the domain VK_EXT_calibrated_timestamps pairs with the device's), as nanoseconds since its epoch.
#include <chrono>
#include <cstdint>

namespace armature {

inline int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace armature
