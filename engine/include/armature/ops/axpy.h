#pragma once
// axpy: y ← a·x + y over n floats. The smallest op that exercises every backend's plumbing
// (buffers, pipelines, push constants, launches, checks); each later op follows the same shape.
#include <span>

#include "armature/vk/buffer.h"

namespace armature {

// CPU reference in double.
void axpyRef(double a, std::span<const double> x, std::span<double> y);

// Vulkan: records the dispatch on `cmd`; x and y hold at least `count` floats.
void axpyVk(vk::Context& ctx, VkCommandBuffer cmd, float a, const vk::Buffer& x, vk::Buffer& y, uint32_t count);

}  // namespace armature
