#pragma once
// The Vulkan context and devices the tests share (validation layer on: any validation message fails the running
// test), and the fixture that runs one test body on every GPU backend an op has.
#include <gtest/gtest.h>

#include "armature/device.h"
#include "armature/vk/buffer.h"
#include "compare.h"

namespace armature::test {

// The shared context, created on first use; null (with `why` set) when no Vulkan device exists.
vk::Context* vulkanContext(std::string* why = nullptr);

// ARMATURE_REQUIRE_VULKAN=1 (CI, the GPU bundle): no Vulkan device is a failure, not a skip.
bool vulkanRequired();

// A device that runs `backend`: the shared Vulkan context's (whose allocations CUDA shares where it drives the same
// GPU), or a CUDA-only one where CUDA drives another GPU. Null, with `why`, when the backend cannot run here.
Device* testDevice(Backend backend, std::string* why = nullptr);

// A Vulkan-only device on the shared physical device whose context hides `hide` (vk::ContextOptions::hide): the
// paths of a device without those features. Created on first use, validated like the shared one.
Device& vulkanDeviceHiding(const vk::ContextOptions::Hidden& hide);

// A device and the name of the path it takes (empty for the backend's default).
struct BackendPath {
  std::string name;
  Device* device;
};

// A test body for every GPU backend: TEST_P(Suite, Name) on `class Suite : public OnBackend {}`, instantiated with
// ARM_ON_GPU_BACKENDS(Suite). A backend that cannot run here skips with the reason (Vulkan fails instead under
// ARMATURE_REQUIRE_VULKAN).
class OnBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  Backend backend() const { return GetParam(); }
  Device& device() { return *m_device; }
  // Runs `work` on this test's backend to completion.
  void run(const std::function<void(const Exec&)>& work) { m_device->run(GetParam(), work); }
  // The devices whose paths a test runs: for Vulkan, one per subset of the features in `vary` that the device has,
  // each also hiding those in `always` (a path a device without them takes); for CUDA, its device (or, with
  // anything in `always`, a null device: the caller skips).
  std::vector<BackendPath> paths(const vk::ContextOptions::Hidden& vary, const vk::ContextOptions::Hidden& always = {});
  // `work` must throw armature::Error whose message contains `message` (an op's argument checks).
  void expectRejected(const std::function<void(const Exec&)>& work, const std::string& message);

 private:
  Device* m_device = nullptr;
};
std::string backendParamName(const ::testing::TestParamInfo<Backend>& info);

// `floats` floats (at least one) filled with NaN, so that a value the GPU leaves unwritten fails the comparison.
inline DeviceBuffer poisoned(Device& device, size_t floats) {
  DeviceBuffer b = device.allocate(ElementType::Float32, floats > 0 ? floats : 1);
  b.fill(nanBits());
  return b;
}

}  // namespace armature::test

#define ARM_ON_GPU_BACKENDS(Suite)                                                                                \
  INSTANTIATE_TEST_SUITE_P(Gpu, Suite, ::testing::Values(::armature::Backend::Vulkan, ::armature::Backend::Cuda), \
                           ::armature::test::backendParamName)

// Skips the test with the reason when there is no Vulkan device; otherwise binds `ctx`.
#define ARM_REQUIRE_VULKAN(ctx)                                                  \
  std::string vkWhy_;                                                            \
  ::armature::vk::Context* ctx##_ptr = ::armature::test::vulkanContext(&vkWhy_); \
  if (!ctx##_ptr && ::armature::test::vulkanRequired())                          \
    FAIL() << "Vulkan required (ARMATURE_REQUIRE_VULKAN): " << vkWhy_;           \
  if (!ctx##_ptr) GTEST_SKIP() << "no Vulkan device: " << vkWhy_;                \
  ::armature::vk::Context& ctx = *ctx##_ptr

// Skips the test with the reason when CUDA cannot run here (no driver, no device, or not built).
#define ARM_REQUIRE_CUDA()                                                          \
  do {                                                                              \
    if (auto why = ::armature::cudaUnavailable()) GTEST_SKIP() << "CUDA: " << *why; \
  } while (0)
