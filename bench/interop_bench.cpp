// armature-bench interop: what the hops between Vulkan and CUDA cost, and what the frame protocol
// (interop/include/armature/interop/interop.h) achieves with frames in flight.
#include <chrono>
#include <volk.h>  // the library's own Vulkan function table
#include <functional>
#include <memory>
#include <cstdio>

#include "armature/cuda/diagnostics.h"
#include "armature/vk/buffer.h"
#include "armature/ops/skinning.h"
#include "armature/interop/interop.h"
#include "armature/shaders.h"
#include "bench/bench.h"
#include "shared/pattern_io.h"

namespace armature::bench {

namespace {
using Clock = std::chrono::steady_clock;
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A command buffer recorded once and submitted every frame.
struct Recorded {
  vk::Context& ctx;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  Recorded(vk::Context& c, const std::function<void(VkCommandBuffer)>& record) : ctx(c) {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = ctx.queueFamily();
    VK_CHECK(vkCreateCommandPool(ctx.device(), &pci, nullptr, &pool));
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.commandBufferCount = 1;
    VK_CHECK(vkAllocateCommandBuffers(ctx.device(), &ai, &cmd));
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
    record(cmd);
    VK_CHECK(vkEndCommandBuffer(cmd));
  }
  ~Recorded() { vkDestroyCommandPool(ctx.device(), pool, nullptr); }
};
}  // namespace

void runInterop(std::vector<Row>& rows, int iters) {
  vk::Context ctx;
  auto support = interop::probe(ctx);
  std::printf("interop: %s\n", interop::describe(support).c_str());
  cuda::Stream stream;
  for (interop::Path path : {interop::Path::ZeroCopy, interop::Path::Staging}) {
    if (path == interop::Path::ZeroCopy && !support.zeroCopy) continue;
    const char* name = path == interop::Path::ZeroCopy ? "zero-copy" : "staging";
    interop::SharedTimeline timeline(ctx, path);
    uint64_t t = timeline.value();

    // 1. Round trip with nothing to do: Vulkan signals, CUDA waits + empty kernel + signals, the host waits.
    {
      std::vector<double> samples;
      for (int i = 0; i < iters + 10; ++i) {
        auto t0 = Clock::now();
        ctx.submit(VK_NULL_HANDLE, {}, {{timeline.semaphore(), ++t}});
        timeline.cudaWait(t, stream);
        cuda::emptyKernel(stream);
        timeline.cudaSignal(++t, stream);
        timeline.hostWait(t);
        if (i >= 10) samples.push_back(ms(Clock::now() - t0));
      }
      rows.push_back({"interop", name, "round trip (empty)", 1, median(samples), minOf(samples), 0, 0});
    }

    // 2. Delivering skinning-sized vertex buffers: CUDA writes N avatars' vertices, Vulkan reads them all.
    for (uint32_t avatars : {1u, 1000u}) {
      size_t bytes = size_t(avatars) * 10475 * 3 * 4;
      interop::SharedBuffer buf(ctx, bytes, path);
      vk::Buffer bad(ctx, 4, vk::kStorageUsage);
      const auto& check = ctx.program(shaders::pattern_check, PATTERN_CHECK_BINDINGS, sizeof(PatternPush));
      Recorded consume(ctx, [&](VkCommandBuffer cmd) {
        vk::dispatch(cmd, check, vk::groupCount((bytes + 3) / 4, PATTERN_GROUP, 4096), {buf.view(), bad.view()},
                     PatternPush{uint32_t(bytes), 7});
      });
      std::vector<double> samples;
      for (int i = 0; i < iters + 5; ++i) {
        auto t0 = Clock::now();
        ctx.submit(VK_NULL_HANDLE, {}, {{timeline.semaphore(), ++t}});
        timeline.cudaWait(t, stream);
        cuda::fillPattern(buf.cudaPointer(), bytes, 7, stream);
        buf.toVulkan(stream);
        timeline.cudaSignal(++t, stream);
        ctx.submit(consume.cmd, {{timeline.semaphore(), t}}, {{timeline.semaphore(), t + 1}});
        timeline.hostWait(++t);
        if (i >= 5) samples.push_back(ms(Clock::now() - t0));
      }
      rows.push_back({"interop", name, "deliver " + std::to_string(avatars) + " avatar(s)", avatars, median(samples),
                      minOf(samples), double(bytes) * 2, 0});
    }

    // 3. The frame protocol (interop::FrameRing, K = 3): one avatar skinned by CUDA into the frame's slot and
    //    read by a Vulkan dispatch; the host never waits per hop, only when 2K frames ahead.
    {
      BodyModel model = loadDefaultModel("");
      Device cudaDevice(nullptr);
      Skinning skin(cudaDevice, Backend::Cuda, model, 10, 10, 1);
      std::vector<float> zeros(55 * 3, 0.f), coefs(10, 0.f), transl(3, 0.f);
      auto pose = cuda::DeviceMemory::from(zeros), betas = cuda::DeviceMemory::from(coefs),
           expr = cuda::DeviceMemory::from(coefs), tr = cuda::DeviceMemory::from(transl);
      cuda::DeviceMemory joints(55 * 12);
      size_t bytes = size_t(model.vertexCount) * 12;
      interop::FrameRing ring(ctx, bytes, 3, path);
      vk::Buffer bad(ctx, 4, vk::kStorageUsage);
      const auto& check = ctx.program(shaders::pattern_check, PATTERN_CHECK_BINDINGS, sizeof(PatternPush));
      std::vector<std::unique_ptr<Recorded>> consumers;
      for (uint32_t k = 0; k < ring.slotCount(); ++k)
        consumers.push_back(std::make_unique<Recorded>(ctx, [&](VkCommandBuffer cmd) {
          vk::dispatch(cmd, check, vk::groupCount(bytes / 4, PATTERN_GROUP), {ring.slot(k).view(), bad.view()},
                       PatternPush{uint32_t(bytes), 1});
        }));
      const int frames = path == interop::Path::ZeroCopy ? 4000 : 500;
      double apiMs = 0;
      auto t0 = Clock::now();
      for (int f = 0; f < frames; ++f) {
        uint32_t slot = ring.beginFrame();
        auto a0 = Clock::now();
        ring.cudaAcquire(stream);
        auto f32 = [](void* p, size_t n) { return DeviceView::ofCuda(p, ElementType::Float32, n); };
        skin.forward(Exec::cuda(stream.handle()),
                     {1, f32(pose.data(), 55 * 3), f32(betas.data(), 10), f32(expr.data(), 10), f32(tr.data(), 3),
                      f32(ring.slot(slot).cudaPointer(), size_t(model.vertexCount) * 3), f32(joints.data(), 55 * 3)});
        ring.cudaRelease(stream);
        ctx.submit(consumers[slot]->cmd, {ring.vulkanWait()}, {ring.vulkanSignal()});
        apiMs += ms(Clock::now() - a0);
      }
      ring.drain(60'000'000'000ull);
      double total = ms(Clock::now() - t0);
      Row r{"interop", name, "frame ring K=3, 1 avatar", 1, total / frames, ring.hostBlockedMs() / frames, 0, 0};
      rows.push_back(r);
      std::printf(
          "interop %s: %d frames in %.1f ms = %.0f frames/s; per frame: host blocked by backpressure %.4f ms, "
          "in CUDA/Vulkan calls %.4f ms\n",
          name, frames, total, frames / (total * 1e-3), ring.hostBlockedMs() / frames, apiMs / frames);
      stream.synchronize();
      vkDeviceWaitIdle(ctx.device());
    }
  }
}

}  // namespace armature::bench
