// The Vulkan core itself: validation hook, device selection, buffers, the GPU timer.
#include <cmath>
#include <cstdlib>
#include <volk.h>  // the library's own Vulkan function table

#include "armature/ops/axpy.h"
#include "armature/shaders.h"
#include "shared/axpy_io.h"
#include "armature/vk/timer.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

TEST(VulkanCore, ValidationMessagesReachTheHandler) {
  ARM_REQUIRE_VULKAN(shared);
  (void)shared;
  // A second context whose handler counts instead of failing; an invalid call must be reported.
  int messages = 0;
  vk::ContextOptions o;
  o.validation = true;
  o.onMessage = [&](vk::MessageSeverity, const char*) { ++messages; };
  vk::Context ctx(o);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 0;  // VUID-VkBufferCreateInfo-size-00912
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer b = VK_NULL_HANDLE;
  if (vkCreateBuffer(ctx.device(), &bi, nullptr, &b) == VK_SUCCESS && b) vkDestroyBuffer(ctx.device(), b, nullptr);
  EXPECT_GT(messages, 0);
  EXPECT_EQ(uint32_t(messages), ctx.validationMessageCount());
}

TEST(VulkanCore, DeviceOverrideSelectsOrRejects) {
  ARM_REQUIRE_VULKAN(shared);
  std::string name = shared.info().name;
  setenv("ARMATURE_VK_DEVICE", name.substr(0, 4).c_str(), 1);
  {
    vk::Context ctx;
    EXPECT_EQ(ctx.info().name.substr(0, 4), name.substr(0, 4));
  }
  setenv("ARMATURE_VK_DEVICE", "no-such-device-xyz", 1);
  EXPECT_THROW(vk::Context{}, Error);
  unsetenv("ARMATURE_VK_DEVICE");
}

TEST(VulkanCore, BuffersRoundTripThroughStaging) {
  ARM_REQUIRE_VULKAN(ctx);
  auto data = cast<float>(uniform(1001, -5, 5));
  auto b = vk::makeStorageBuffer<float>(ctx, data);
  EXPECT_EQ(b.download<float>(data.size()), data);
  vk::Buffer host(ctx, 64, vk::kStorageUsage, vk::MemoryKind::HostVisible);
  EXPECT_NE(host.mapped(), nullptr);
  EXPECT_THROW(b.upload(data.data(), data.size() * 4 + 4), Error);
  vk::Buffer moved = std::move(b);
  EXPECT_FALSE(b);
  EXPECT_TRUE(moved);
}

TEST(VulkanCore, GpuTimerMeasuresWithoutStalling) {
  ARM_REQUIRE_VULKAN(ctx);
  vk::GpuTimer timer(ctx, 3, 4);
  size_t n = 1 << 20;
  auto x = vk::makeStorageBuffer<float>(ctx, std::vector<float>(n, 1.f));
  auto y = vk::makeStorageBuffer<float>(ctx, std::vector<float>(n, 2.f));
  int delivered = 0;
  for (uint64_t frame = 0; frame < 7; ++frame) {
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      // A slot is reused every 3 frames; its previous results come back here, never by waiting.
      if (auto previous = timer.beginFrame(cmd, frame)) {
        ASSERT_EQ(previous->size(), 2u);
        EXPECT_EQ((*previous)[0].name, "outer");
        EXPECT_GT((*previous)[0].milliseconds, 0);
        EXPECT_GE((*previous)[0].milliseconds, (*previous)[1].milliseconds * 0.99);
        ++delivered;
      }
      uint32_t outer = timer.beginZone(cmd, "outer");
      uint32_t inner = timer.beginZone(cmd, "axpy");
      axpy(Exec::vulkan(ctx, cmd),
           {0.5f, DeviceView::of(x, ElementType::Float32), DeviceView::of(y, ElementType::Float32)});
      timer.endZone(cmd, inner);
      timer.endZone(cmd, outer);
    });
  }
  EXPECT_EQ(delivered, 4);  // frames 0..3 came back when their slots were reused by frames 3..6
  auto last = timer.waitFrame(6);
  EXPECT_GT(last[1].milliseconds, 0);
  EXPECT_THROW(timer.waitFrame(2), Error);  // no longer in the ring
}

// A program's binding count and push-constant size are checked against the shader's own SPIR-V: a caller that binds
// fewer buffers than the shader uses, or pushes a struct of another size, gets an error naming the shader instead of
// a layout the validation layer or the GPU trips over.
TEST(VulkanCore, ProgramsMustMatchTheirShadersInterface) {
  ARM_REQUIRE_VULKAN(ctx);
  EXPECT_NO_THROW(ctx.program(shaders::axpy, AXPY_BINDINGS, sizeof(AxpyPush)));
  auto expectRefused = [&](uint32_t bindings, uint32_t push, const char* what) {
    try {
      ctx.program(shaders::axpy, bindings, push);
      ADD_FAILURE() << "accepted " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("shader axpy"), std::string::npos) << e.what();
    }
  };
  expectRefused(1, sizeof(AxpyPush), "a binding too few");
  EXPECT_NO_THROW(ctx.program(shaders::axpy, 3, sizeof(AxpyPush)));  // more is allowed: a layout may cover unused ones
  expectRefused(2, sizeof(AxpyPush) - 4, "a push struct shorter than the block");
  expectRefused(2, sizeof(AxpyPush) + 16, "a push struct of another layout");
  EXPECT_NO_THROW(ctx.program(shaders::axpy, AXPY_BINDINGS, sizeof(AxpyPush)));  // the cached program is still served
}

// The sanitizer build's out-of-bounds check for shaders (ContextOptions::guardBuffers): a shader made to run past
// its buffers, by views that claim 10 more floats than were allocated, reads the guard band's NaNs, and its writes
// into the band are reported when the buffer is freed. Without the band lavapipe clamps both silently.
TEST(VulkanCore, GuardBandsCatchShadersPastTheirBuffers) {
  ARM_REQUIRE_VULKAN(shared);
  (void)shared;
  std::vector<std::string> messages;
  vk::ContextOptions o;
  o.guardBuffers = true;
  o.onMessage = [&](vk::MessageSeverity, const char* m) { messages.emplace_back(m); };
  vk::Context ctx(o);
  Device device(&ctx, Sharing::VulkanOnly);
  const auto overlong = [](const DeviceBuffer& b) {  // 10 floats past the allocation, into its band
    DeviceView v = b.view();
    v.count += 10, v.guardBytes -= 40;
    return v;
  };
  {  // a read past the end reads NaN
    DeviceBuffer x = device.upload(std::vector<float>(90, 1.0f));
    DeviceBuffer y = device.upload(std::vector<float>(100, 0.0f));
    device.run(Backend::Vulkan, [&](const Exec& e) { axpy(e, {.a = 2, .x = overlong(x), .y = y}); });
    const std::vector<float> out = y.download<float>();
    EXPECT_EQ(out[89], 2.0f);
    for (size_t i = 90; i < 100; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  }
  EXPECT_TRUE(messages.empty());  // reads leave the band as it was
  {                               // a write past the end is reported when the buffer is freed
    DeviceBuffer x = device.upload(std::vector<float>(100, 1.0f));
    DeviceBuffer y = device.upload(std::vector<float>(90, 0.0f));
    device.run(Backend::Vulkan, [&](const Exec& e) { axpy(e, {.a = 2, .x = x, .y = overlong(y)}); });
    EXPECT_EQ(y.download<float>()[89], 2.0f);
  }
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("10 words past the end of a 360-byte buffer were written, the first 0 bytes past it"),
            std::string::npos)
      << messages[0];
}
