// CUDA↔Vulkan interop: both directions through shared memory, the timeline ping-pong, leaks, and the staging
// fallback giving identical results. Runs where CUDA is present (the GPU machine); elsewhere the CUDA-dependent
// tests skip with the reason, and the probe test checks the reason is reported.
//
// These tests use their own Vulkan context without the validation layer: the layer cannot see CUDA's signals
// on a shared timeline semaphore and reports waits on them as errors that are not (../shared/DEVICE.md).
#include <dirent.h>
#include <volk.h>  // the library's own Vulkan function table

#include <memory>

#include "armature/cuda/diagnostics.h"
#include "armature/ops/skinning.h"
#include "support/body_fixtures.h"
#include "armature/interop/interop.h"
#include "armature/shaders.h"
#include "shared/pattern_io.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {

vk::Context* interopContext(std::string* why) {
  static std::unique_ptr<vk::Context> ctx;
  static std::string error;
  static bool tried = false;
  struct Release : ::testing::Environment {
    void TearDown() override { ctx.reset(); }
  };
  if (!tried) {
    tried = true;
    ::testing::AddGlobalTestEnvironment(new Release);
    try {
      ctx = std::make_unique<vk::Context>();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  *why = error;
  return ctx.get();
}

size_t openFds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

class Interop : public ::testing::TestWithParam<interop::Path> {
 protected:
  void SetUp() override {
    std::string why;
    m_ctx = interopContext(&why);
    if (!m_ctx) {
      if (vulkanRequired()) FAIL() << "Vulkan required: " << why;
      GTEST_SKIP() << "no Vulkan device: " << why;
    }
    if (auto reason = cuda::unavailableReason()) GTEST_SKIP() << "CUDA: " << *reason;
    auto support = interop::probe(*m_ctx);
    if (GetParam() == interop::Path::ZeroCopy && !support.zeroCopy)
      GTEST_SKIP() << "zero-copy unavailable: " << support.reason;
  }
  std::unique_ptr<vk::Buffer> counter() {
    auto c = std::make_unique<vk::Buffer>(*m_ctx, 4, vk::kStorageUsage, vk::MemoryKind::HostVisible);
    *static_cast<uint32_t*>(c->mapped()) = 0;
    return c;
  }
  vk::Context* m_ctx = nullptr;
};

// `count` command buffers from a pool of their own, each resettable.
struct CommandBuffers {
  VkDevice device;
  VkCommandPool pool = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> buffers;
  CommandBuffers(const vk::Context& ctx, uint32_t count) : device(ctx.device()), buffers(count) {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = ctx.queueFamily();
    VK_CHECK(vkCreateCommandPool(device, &pci, nullptr, &pool));
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.commandBufferCount = count;
    VK_CHECK(vkAllocateCommandBuffers(device, &ai, buffers.data()));
  }
  ~CommandBuffers() { vkDestroyCommandPool(device, pool, nullptr); }
  CommandBuffers(const CommandBuffers&) = delete;
  CommandBuffers& operator=(const CommandBuffers&) = delete;
};

// Frames through a FrameRing: CUDA writes frame f's pattern into the frame's slot, Vulkan checks it there and counts
// wrong bytes in `bad`. Without the ring's waits, CUDA would overwrite slots Vulkan has not read yet.
struct PatternFrames {
  static constexpr size_t kBytes = 10475 * 12 + 3;  // one avatar's vertices, and a ragged tail
  vk::Context& ctx;
  cuda::Stream stream;
  interop::FrameRing ring;
  vk::Buffer bad;
  const vk::ComputeProgram& check;
  PatternFrames(vk::Context& c, interop::Path path)
      : ctx(c),
        ring(c, kBytes, 3, path),
        bad(c, 4, vk::kStorageUsage, vk::MemoryKind::HostVisible),
        check(c.program(shaders::pattern_check, PATTERN_CHECK_BINDINGS, sizeof(PatternPush))) {
    *static_cast<uint32_t*>(bad.mapped()) = 0;
  }
  // Runs frame f, recording Vulkan's check into `cmd` (ready to be recorded) and submitting it with `fence`.
  void run(uint32_t f, VkCommandBuffer cmd, VkFence fence = VK_NULL_HANDLE) {
    uint32_t slot = ring.beginFrame();
    ring.cudaAcquire(stream);
    cuda::fillPattern(ring.slot(slot).cudaPointer(), kBytes, f * 7919u, stream);
    ring.cudaRelease(stream);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
    vk::dispatch(cmd, check, vk::groupCount((kBytes + 3) / 4, PATTERN_GROUP), {ring.slot(slot).view(), bad.view()},
                 PatternPush{uint32_t(kBytes), f * 7919u});
    vk::computeBarrier(cmd);
    VK_CHECK(vkEndCommandBuffer(cmd));
    ctx.submit(cmd, {ring.vulkanWait()}, {ring.vulkanSignal()}, fence);
  }
  uint32_t wrongBytes() {
    ring.drain(60'000'000'000ull);
    vkDeviceWaitIdle(ctx.device());
    return *static_cast<uint32_t*>(bad.mapped());
  }
};

std::string pathName(const ::testing::TestParamInfo<interop::Path>& info) {
  return info.param == interop::Path::ZeroCopy ? "ZeroCopy" : "Staging";
}

const std::vector<size_t> kSizes = {1, 3, 4, 5, 4093, (size_t(1) << 20) + 7, size_t(256) << 20};

}  // namespace

TEST(InteropProbe, ReportsThePathAndWhy) {
  std::string why;
  vk::Context* ctx = interopContext(&why);
  if (!ctx) GTEST_SKIP() << "no Vulkan device: " << why;
  auto s = interop::probe(*ctx);
  if (!s.zeroCopy) {
    EXPECT_FALSE(s.reason.empty());
  }
  EXPECT_FALSE(interop::describe(s).empty());
  std::printf("[interop] %s\n", interop::describe(s).c_str());
  if (!s.zeroCopy) {
    EXPECT_THROW(interop::SharedTimeline(*ctx, interop::Path::ZeroCopy), Error);
  }
}

TEST_P(Interop, CudaWritesVulkanReads) {
  cuda::Stream stream;
  interop::SharedTimeline timeline(*m_ctx, GetParam());
  uint64_t value = 0;
  for (size_t bytes : kSizes) {
    SCOPED_TRACE("bytes=" + std::to_string(bytes));
    interop::SharedBuffer buf(*m_ctx, bytes, GetParam());
    uint32_t seed = uint32_t(rng()());
    cuda::fillPattern(buf.cudaPointer(), bytes, seed, stream);
    buf.toVulkan(stream);
    timeline.cudaSignal(++value, stream);
    auto bad = counter();
    const auto& check = m_ctx->program(shaders::pattern_check, PATTERN_CHECK_BINDINGS, sizeof(PatternPush));
    m_ctx->submitAndWait(
        [&](VkCommandBuffer cmd) {
          vk::dispatch(cmd, check, vk::groupCount((bytes + 3) / 4, PATTERN_GROUP, 4096), {buf.view(), bad->view()},
                       PatternPush{uint32_t(bytes), seed});
          vk::computeBarrier(cmd);
        },
        60'000'000'000ull, {{timeline.semaphore(), value}});
    EXPECT_EQ(*static_cast<uint32_t*>(bad->mapped()), 0u);
  }
}

TEST_P(Interop, VulkanWritesCudaReads) {
  cuda::Stream stream;
  interop::SharedTimeline timeline(*m_ctx, GetParam());
  uint64_t value = 0;
  auto bad = cuda::DeviceMemory(4);
  for (size_t bytes : kSizes) {
    SCOPED_TRACE("bytes=" + std::to_string(bytes));
    interop::SharedBuffer buf(*m_ctx, bytes, GetParam());
    uint32_t seed = uint32_t(rng()());
    const auto& fill = m_ctx->program(shaders::pattern_fill, PATTERN_FILL_BINDINGS, sizeof(PatternPush));
    m_ctx->submitAndWait(
        [&](VkCommandBuffer cmd) {
          vkCmdFillBuffer(cmd, buf.buffer(), 0, VK_WHOLE_SIZE, 0xa5a5a5a5u);  // stale data a missed write would leave
          vk::computeBarrier(cmd);
          vk::dispatch(cmd, fill, vk::groupCount((bytes + 3) / 4, PATTERN_GROUP, 4096), {buf.view(), buf.view()},
                       PatternPush{uint32_t(bytes), seed});
          vk::computeBarrier(cmd);
        },
        60'000'000'000ull, {}, {{timeline.semaphore(), ++value}});
    timeline.cudaWait(value, stream);
    buf.toCuda(stream);
    bad.fill32(0);
    cuda::countPatternMismatches(buf.cudaPointer(), bytes, seed, bad.as<uint32_t>(), stream);
    stream.synchronize();
    EXPECT_EQ(bad.download<uint32_t>(1)[0], 0u);
  }
}

TEST_P(Interop, TimelinePingPongCountsExactly) {
  const uint32_t rounds =
      GetParam() == interop::Path::ZeroCopy ? 10'000 : 1'000;  // staging blocks the host twice per round
  cuda::Stream stream;
  interop::SharedTimeline timeline(*m_ctx, GetParam());
  interop::SharedBuffer counterBuf(*m_ctx, 4, GetParam());
  // One recorded command buffer, submitted every round: counter += 1 on Vulkan.
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = m_ctx->queueFamily();
  VkCommandPool pool;
  VK_CHECK(vkCreateCommandPool(m_ctx->device(), &pci, nullptr, &pool));
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  VK_CHECK(vkAllocateCommandBuffers(m_ctx->device(), &ai, &cmd));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;  // pending in many submissions at once
  VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
  vkCmdFillBuffer(cmd, counterBuf.buffer(), 0, 4, 0);
  VK_CHECK(vkEndCommandBuffer(cmd));
  m_ctx->submitAndWait([&](VkCommandBuffer c) {
    vkCmdFillBuffer(c, counterBuf.buffer(), 0, 4, 0);
    vk::computeBarrier(c);
  });
  VK_CHECK(vkResetCommandBuffer(cmd, 0));
  VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
  const auto& inc = m_ctx->program(shaders::counter_increment, 2, 4);
  uint32_t one = 1;
  vk::dispatch(cmd, inc, 1, {counterBuf.view(), counterBuf.view()}, one);
  vk::computeBarrier(cmd);
  VK_CHECK(vkEndCommandBuffer(cmd));
  counterBuf.toCuda(stream);
  for (uint32_t k = 0; k < rounds; ++k) {
    uint64_t base = 2ull * k;
    m_ctx->submit(cmd, {{timeline.semaphore(), base}}, {{timeline.semaphore(), base + 1}});
    timeline.cudaWait(base + 1, stream);
    counterBuf.toCuda(stream);
    cuda::incrementCounter(static_cast<uint32_t*>(counterBuf.cudaPointer()), 1, stream);
    counterBuf.toVulkan(stream);
    timeline.cudaSignal(base + 2, stream);
  }
  timeline.hostWait(2ull * rounds, 60'000'000'000ull);
  stream.synchronize();
  vkDeviceWaitIdle(m_ctx->device());
  // Read the counter through Vulkan (in the staging path the last round's toVulkan put it there).
  auto host = counter();
  m_ctx->submitAndWait([&](VkCommandBuffer c) {
    VkBufferCopy copy{0, 0, 4};
    vkCmdCopyBuffer(c, counterBuf.buffer(), host->handle(), 1, &copy);
    vk::computeBarrier(c);
  });
  uint32_t got = *static_cast<uint32_t*>(host->mapped());
  EXPECT_EQ(got, 2 * rounds);
  vkDestroyCommandPool(m_ctx->device(), pool, nullptr);
}

TEST_P(Interop, CreateDestroyLeaksNothing) {
  {
    interop::SharedBuffer warm(*m_ctx, 1000, GetParam());  // first-use allocations of the runtime
  }
  size_t fdsBefore = openFds();
  size_t freeBefore = cuda::memoryInfo().first;
  for (int i = 0; i < 1000; ++i) {
    interop::SharedBuffer b(*m_ctx, 65536 + size_t(i) * 4 + 1, GetParam());
    ASSERT_NE(b.cudaPointer(), nullptr);
  }
  EXPECT_EQ(openFds(), fdsBefore) << "file descriptors leaked";
  size_t freeAfter = cuda::memoryInfo().first;
  // 1,000 buffers of ~64 KiB: a leak would show as >= 64 MiB; allow 4 MiB of allocator slack.
  EXPECT_LE(freeBefore > freeAfter ? freeBefore - freeAfter : 0, size_t(4) << 20) << "GPU memory grew";
}

// The frame protocol orders CUDA's writes and Vulkan's reads of each slot: every frame writes its own pattern
// into the slot it reuses every K frames, and Vulkan checks that frame's pattern. Without the waits, CUDA would
// overwrite slots Vulkan has not read yet and the count of wrong bytes would not be zero.
TEST_P(Interop, FrameRingOrdersWritesAndReads) {
  const uint32_t frames = GetParam() == interop::Path::ZeroCopy ? 600 : 120;
  PatternFrames run(*m_ctx, GetParam());
  CommandBuffers commands(*m_ctx, frames);
  for (uint32_t f = 0; f < frames; ++f) run.run(f, commands.buffers[f]);
  EXPECT_EQ(run.wrongBytes(), 0u);
  EXPECT_EQ(run.ring.frame(), frames - 1);
}

// Soak: 1,000 shared buffers and timelines created and destroyed, then 10,000 frames through a FrameRing, with
// open file descriptors, CUDA memory and Vulkan device-local memory sampled after warm-up and at the end. Every
// import hands CUDA a file descriptor, so a missed close or destroy grows one of the three.
TEST_P(Interop, SoakBuffersTimelinesAndFramesLeaveNothingBehind) {
  constexpr size_t kSlack = size_t(4) << 20;  // allocator granularity; a leak of 1,000 objects is >= 64 MiB
  auto grew = [](size_t before, size_t after) -> size_t { return after > before ? after - before : 0; };
  auto vkUsed = [&] { return m_ctx->deviceLocalUsage().first; };
  {
    interop::SharedBuffer warmBuffer(*m_ctx, 1000, GetParam());
    interop::SharedTimeline warmTimeline(*m_ctx, GetParam());
  }
  const size_t fds0 = openFds(), cudaFree0 = cuda::memoryInfo().first, vk0 = vkUsed();
  for (int i = 0; i < 1000; ++i) {
    interop::SharedBuffer b(*m_ctx, 65536 + size_t(i) * 4 + 1, GetParam());
    interop::SharedTimeline t(*m_ctx, GetParam());
    ASSERT_NE(b.cudaPointer(), nullptr);
  }
  EXPECT_EQ(openFds(), fds0) << "buffers and timelines leaked file descriptors";
  EXPECT_LE(grew(cuda::memoryInfo().first, cudaFree0), kSlack) << "CUDA memory grew";  // less free = grown
  EXPECT_LE(grew(vk0, vkUsed()), kSlack) << "Vulkan memory grew";

  // Frames: CUDA writes each frame's pattern into its slot, Vulkan checks it; command buffers reused through fences.
  constexpr uint32_t kFrames = 10000, kWarmUp = 1000, kCommandBuffers = 16;
  PatternFrames run(*m_ctx, GetParam());
  CommandBuffers commands(*m_ctx, kCommandBuffers);
  std::vector<VkFence> fences(kCommandBuffers);
  for (auto& fence : fences) {
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
    VK_CHECK(vkCreateFence(m_ctx->device(), &fi, nullptr, &fence));
  }
  size_t fds1 = 0, cudaFree1 = 0, vk1 = 0;
  for (uint32_t f = 0; f < kFrames; ++f) {
    if (f == kWarmUp) fds1 = openFds(), cudaFree1 = cuda::memoryInfo().first, vk1 = vkUsed();
    VkCommandBuffer cmd = commands.buffers[f % kCommandBuffers];
    VkFence fence = fences[f % kCommandBuffers];
    ASSERT_EQ(vkWaitForFences(m_ctx->device(), 1, &fence, VK_TRUE, 10'000'000'000ull), VK_SUCCESS);
    VK_CHECK(vkResetFences(m_ctx->device(), 1, &fence));
    VK_CHECK(vkResetCommandBuffer(cmd, 0));
    run.run(f, cmd, fence);
  }
  EXPECT_EQ(run.wrongBytes(), 0u);
  EXPECT_EQ(openFds(), fds1) << "frames leaked file descriptors";
  EXPECT_LE(grew(cuda::memoryInfo().first, cudaFree1), kSlack) << "CUDA memory grew over the frames";
  EXPECT_LE(grew(vk1, vkUsed()), kSlack) << "Vulkan memory grew over the frames";
  std::printf("soak (%s): %u frames, host blocked %.1f ms in all; fds %zu, CUDA free %.1f MiB, Vulkan used %.1f MiB\n",
              GetParam() == interop::Path::ZeroCopy ? "zero-copy" : "staging", kFrames, run.ring.hostBlockedMs(),
              openFds(), cuda::memoryInfo().first / 1048576.0, vkUsed() / 1048576.0);
  for (auto fence : fences) vkDestroyFence(m_ctx->device(), fence, nullptr);
}

// The skinning forward writes the renderer's vertex buffer directly: CUDA into the shared buffer, Vulkan reads it
// as a vertex/storage buffer after the timeline says so.
TEST_P(Interop, SkinningWritesStraightIntoASharedVertexBuffer) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(517, 55, 10, 10, rng);
  const uint32_t B = 3;
  BodyParams p = randomBodyParams(m, B, 10, 10, rng);
  for (auto* v : {&p.pose, &p.betas, &p.expression, &p.transl})
    for (auto& x : *v) x = double(float(x));
  auto ref = bodyForwardRef(m, p);
  cuda::Stream stream;
  Device cudaDevice(nullptr);
  Skinning skin(cudaDevice, Backend::Cuda, m, 10, 10, B);
  auto pose = cuda::DeviceMemory::from(cast<float>(p.pose)), betas = cuda::DeviceMemory::from(cast<float>(p.betas));
  auto expr = cuda::DeviceMemory::from(cast<float>(p.expression)),
       transl = cuda::DeviceMemory::from(cast<float>(p.transl));
  cuda::DeviceMemory joints(ref.joints.size() * 4);
  interop::SharedBuffer verts(*m_ctx, ref.vertices.size() * 4, GetParam());
  interop::SharedTimeline timeline(*m_ctx, GetParam());
  m_ctx->submitAndWait(
      [&](VkCommandBuffer cmd) {
        vkCmdFillBuffer(cmd, verts.buffer(), 0, VK_WHOLE_SIZE, nanBits());
        vk::computeBarrier(cmd);
      },
      60'000'000'000ull, {}, {{timeline.semaphore(), 1}});
  timeline.cudaWait(1, stream);
  verts.toCuda(stream);
  auto f32 = [](void* pointer, size_t n) { return DeviceView::ofCuda(pointer, ElementType::Float32, n); };
  skin.forward(Exec::cuda(stream.handle()),
               {B, f32(pose.data(), p.pose.size()), f32(betas.data(), p.betas.size()),
                f32(expr.data(), p.expression.size()), f32(transl.data(), p.transl.size()),
                f32(verts.cudaPointer(), ref.vertices.size()), f32(joints.data(), ref.joints.size())});
  verts.toVulkan(stream);
  timeline.cudaSignal(2, stream);
  vk::Buffer host(*m_ctx, ref.vertices.size() * 4, vk::kStorageUsage, vk::MemoryKind::HostVisible);
  m_ctx->submitAndWait(
      [&](VkCommandBuffer cmd) {
        VkBufferCopy copy{0, 0, ref.vertices.size() * 4};
        vkCmdCopyBuffer(cmd, verts.buffer(), host.handle(), 1, &copy);
        vk::computeBarrier(cmd);
      },
      60'000'000'000ull, {{timeline.semaphore(), 2}});
  EXPECT_TRUE(allClose(host.download<float>(ref.vertices.size()), ref.vertices, Tol{5e-5, 0}));
}

INSTANTIATE_TEST_SUITE_P(Paths, Interop, ::testing::Values(interop::Path::ZeroCopy, interop::Path::Staging), pathName);
