#pragma once
// The Vulkan context the tests share: validation layer on, and any validation message fails the running test.
#include <gtest/gtest.h>

#include "armature/vk/buffer.h"

namespace armature::test {

// The shared context, created on first use; null (with `why` set) when no Vulkan device exists.
vk::Context* vulkanContext(std::string* why = nullptr);

// ARMATURE_REQUIRE_VULKAN=1 (CI, the GPU bundle): no Vulkan device is a failure, not a skip.
bool vulkanRequired();

}  // namespace armature::test

// Skips the test with the reason when there is no Vulkan device; otherwise binds `ctx`.
#define ARM_REQUIRE_VULKAN(ctx)                                                  \
  std::string vkWhy_;                                                            \
  ::armature::vk::Context* ctx##_ptr = ::armature::test::vulkanContext(&vkWhy_); \
  if (!ctx##_ptr && ::armature::test::vulkanRequired())                          \
    FAIL() << "Vulkan required (ARMATURE_REQUIRE_VULKAN): " << vkWhy_;           \
  if (!ctx##_ptr) GTEST_SKIP() << "no Vulkan device: " << vkWhy_;                \
  ::armature::vk::Context& ctx = *ctx##_ptr

// Skips the test with the reason when CUDA cannot run here (no driver, no device, or not built).
#define ARM_REQUIRE_CUDA()                                                                  \
  do {                                                                                      \
    if (auto why = ::armature::cuda::unavailableReason()) GTEST_SKIP() << "CUDA: " << *why; \
  } while (0)
