#pragma once
// axpy: y ← a·x + y over n floats. The smallest op that exercises every backend's plumbing (views, programs, push
// constants, launches, checks); docs/adding_an_op.md walks through its files as the pattern for every op.
#include <span>

#include "armature/device.h"

namespace armature {

struct AxpyArgs {
  float a = 1;
  DeviceView x;  // n floats (n = x.count)
  DeviceView y;  // at least n floats, updated in place
};

// Records (Vulkan) or enqueues (CUDA) the update; throws armature::Error for a bad argument, before any work.
void axpy(const Exec& exec, const AxpyArgs& args);

// CPU reference in double.
void axpyRef(double a, std::span<const double> x, std::span<double> y);

}  // namespace armature
