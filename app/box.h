#pragma once
// The axis-aligned box of a set of points.
#include <algorithm>
#include <vector>

namespace armature::app {

// The box of (V,3) coordinates; no points give the box of the origin.
template <typename T>
void boxOf(const std::vector<T>& xyz, float lo[3], float hi[3]) {
  for (int k = 0; k < 3; ++k) lo[k] = xyz.size() >= 3 ? float(xyz[size_t(k)]) : 0.f, hi[k] = lo[k];
  for (size_t i = 0; i + 2 < xyz.size(); i += 3)
    for (size_t k = 0; k < 3; ++k)
      lo[k] = std::min(lo[k], float(xyz[i + k])), hi[k] = std::max(hi[k], float(xyz[i + k]));
}

}  // namespace armature::app
