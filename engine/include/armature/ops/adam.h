#pragma once
// One Adam step over a parameter vector on the GPU (shaders/shared/adam_io.h), for fitting on the device: CUDA and
// Vulkan (float), the CPU reference in double.
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

struct AdamSettings {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

// Step `step` (1 for the first) in place; the moments start at zero.
void adamStepRef(std::vector<double>& params, const std::vector<double>& grads, std::vector<double>& m,
                 std::vector<double>& v, const AdamSettings& settings, uint32_t step);

struct AdamArgs {
  DeviceView params;  // n floats, updated
  DeviceView grads;   // n floats
  DeviceView m, v;    // n floats each, the moments (zero before the first step), updated
  AdamSettings settings;
  uint32_t step = 1;
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void adamStep(const Exec& exec, const AdamArgs& args);

}  // namespace armature
