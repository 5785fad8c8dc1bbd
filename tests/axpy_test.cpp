#include <iostream>

#include "armature/cuda/runtime.h"
#include "armature/ops/axpy.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {
// fp32 inputs rounded from the double ones; one fused multiply-add (or a multiply and an add) per element:
// at most 2 roundings of values below 4 in magnitude, so 1e-6 absolute covers it with margin.
constexpr Tol kAxpyTol{1e-6, 1e-6};

struct Case {
  double a;
  std::vector<double> x, y, want;
};
Case makeCase(size_t n) {
  Case c{uniform(1, -2, 2)[0], uniform(n, -1, 1), uniform(n, -1, 1), {}};
  // Reference from the values the GPU sees (rounded to float), so the tolerance only covers GPU rounding.
  for (auto* v : {&c.x, &c.y})
    for (auto& e : *v) e = double(float(e));
  c.a = double(float(c.a));
  c.want = c.y;
  axpyRef(c.a, c.x, c.want);
  return c;
}
}  // namespace

TEST(Axpy, ReferenceIsExact) {
  std::vector<double> x{1, 2, 3}, y{10, 20, 30};
  axpyRef(2, x, y);
  EXPECT_EQ(y, (std::vector<double>{12, 24, 36}));
  std::vector<double> shorter{1};
  EXPECT_THROW(axpyRef(1, x, shorter), Error);
}

TEST(Axpy, VulkanMatchesReference) {
  ARM_REQUIRE_VULKAN(ctx);
  for (size_t n : {size_t(1), size_t(255), size_t(257), size_t(1'000'003)}) {
    Case c = makeCase(n);
    auto x = vk::makeStorageBuffer<float>(ctx, cast<float>(c.x));
    auto y = vk::makeStorageBuffer<float>(ctx, cast<float>(c.y));
    vk::Buffer out(ctx, (n + 7) * 4, vk::kStorageUsage);  // poisoned past the end too: must stay NaN
    out.fill(nanBits());
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      VkBufferCopy copy{0, 0, n * 4};
      vkCmdCopyBuffer(cmd, y.handle(), out.handle(), 1, &copy);
      vk::computeBarrier(cmd);
      axpyVk(ctx, cmd, float(c.a), x, out, uint32_t(n));
      vk::computeBarrier(cmd);
    });
    auto got = out.download<float>(n + 7);
    EXPECT_TRUE(allClose(std::span<const float>(got.data(), n), std::span<const double>(c.want), kAxpyTol))
        << "n=" << n;
    for (size_t i = n; i < n + 7; ++i) EXPECT_TRUE(std::isnan(got[i])) << "wrote past the end at " << i;
  }
}

TEST(Axpy, VulkanRejectsShortBuffers) {
  ARM_REQUIRE_VULKAN(ctx);
  vk::Buffer x(ctx, 16, vk::kStorageUsage), y(ctx, 16, vk::kStorageUsage);
  EXPECT_THROW(ctx.submitAndWait([&](VkCommandBuffer cmd) { axpyVk(ctx, cmd, 1, x, y, 5); }), Error);
}

// In plain and in compressible memory (mapped with the driver's virtual-memory calls where the device grants it, a
// cudaMalloc otherwise): the same results, nothing written past the end, and the mapping released.
TEST(Axpy, CudaMatchesReference) {
  ARM_REQUIRE_CUDA();
  cuda::Stream stream;
  for (cuda::MemoryKind kind : {cuda::MemoryKind::Plain, cuda::MemoryKind::Compressible})
    for (size_t n : {size_t(1), size_t(255), size_t(257), size_t(1'000'003)}) {
      SCOPED_TRACE(kind == cuda::MemoryKind::Plain ? "plain memory" : "compressible memory");
      Case c = makeCase(n);
      auto x = cuda::DeviceMemory::from(cast<float>(c.x));
      cuda::DeviceMemory y((n + 7) * 4, kind);
      if (kind == cuda::MemoryKind::Plain) {
        EXPECT_FALSE(y.compressed());
      }
      if (n == 1) std::cout << "compressible memory granted: " << (y.compressed() ? "yes" : "no") << "\n";
      y.fill32(nanBits());
      y.upload(cast<float>(c.y).data(), n * 4);
      cuda::axpy(float(c.a), x.as<float>(), y.as<float>(), n, stream);
      stream.synchronize();
      auto got = y.download<float>(n + 7);
      EXPECT_TRUE(allClose(std::span<const float>(got.data(), n), std::span<const double>(c.want), kAxpyTol))
          << "n=" << n;
      for (size_t i = n; i < n + 7; ++i) EXPECT_TRUE(std::isnan(got[i])) << "wrote past the end at " << i;
    }
}
