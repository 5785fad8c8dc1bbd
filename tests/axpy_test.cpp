// axpy on every GPU backend from one body: the pattern every op's tests follow (docs/adding_an_op.md).
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

#include "armature/ops/axpy.h"
#include "support/compare.h"
#include "support/vk_test_env.h"

#if ARMATURE_HAS_CUDA
#include <cuda_runtime.h>

#include "armature/cuda/runtime.h"
#endif

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

// y in `y` (poisoned past n: it must stay NaN), updated on the backend, against the reference.
void expectAxpy(Device& device, Backend backend, const Case& c, DeviceBuffer& y) {
  const size_t n = c.x.size();
  auto x = device.upload(cast<float>(c.x));
  y.fill(nanBits());
  y.upload(std::span<const float>(cast<float>(c.y)));
  device.run(backend, [&](const Exec& exec) { axpy(exec, {.a = float(c.a), .x = x, .y = y}); });
  auto got = y.download<float>();
  EXPECT_TRUE(allClose(std::span<const float>(got.data(), n), std::span<const double>(c.want), kAxpyTol)) << "n=" << n;
  for (size_t i = n; i < got.size(); ++i) EXPECT_TRUE(std::isnan(got[i])) << "wrote past the end at " << i;
}

class AxpyOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(AxpyOp);
}  // namespace

TEST(AxpyReference, IsExact) {
  std::vector<double> x{1, 2, 3}, y{10, 20, 30};
  axpyRef(2, x, y);
  EXPECT_EQ(y, (std::vector<double>{12, 24, 36}));
  std::vector<double> shorter{1};
  EXPECT_THROW(axpyRef(1, x, shorter), Error);
}

TEST_P(AxpyOp, MatchesReference) {
  for (size_t n : {size_t(0), size_t(1), size_t(255), size_t(257), size_t(1'000'003)}) {
    Case c = makeCase(n);
    DeviceBuffer y = device().allocate(ElementType::Float32, n + 7);
    expectAxpy(device(), backend(), c, y);
  }
}

// The CUDA compressible memory the rasteriser's scratch uses (mapped with the driver's virtual-memory calls where the
// device grants it, else plain): the same results, nothing past the end, the mapping released.
TEST(AxpyCuda, CompressibleMemory) {
  std::string why;
  Device* device = testDevice(Backend::Cuda, &why);
  if (!device) GTEST_SKIP() << "cuda: " << why;
  for (size_t n : {size_t(1), size_t(257), size_t(1'000'003)}) {
    Case c = makeCase(n);
    DeviceBuffer y = device->allocateCompressible(ElementType::Float32, n + 7);
    if (n == 1) std::cout << "compressible memory granted: " << (y.compressed() ? "yes" : "no") << "\n";
    expectAxpy(*device, Backend::Cuda, c, y);
  }
}

// The gate Device::time enqueues each CUDA call behind: work waits until it opens, and a caller that waits on the
// held stream is released by its timeout, not hung, and told so.
TEST(AxpyCuda, LaunchGateHoldsWorkUntilOpened) {
  std::string why;
  Device* device = testDevice(Backend::Cuda, &why);
  if (!device) GTEST_SKIP() << "cuda: " << why;
#if ARMATURE_HAS_CUDA
  using namespace std::chrono;
  const Case c = makeCase(1001);
  auto x = device->upload(cast<float>(c.x));
  DeviceBuffer y = device->allocate(ElementType::Float32, c.y.size());
  y.upload(std::span<const float>(cast<float>(c.y)));
  cuda::Stream stream;
  const auto held = static_cast<cudaStream_t>(stream.handle());
  // Loads axpy's kernel first: a module's load at a kernel's first launch waits for the gate's kernel.
  device->run(Backend::Cuda, [&](const Exec& exec) { axpy(exec, {.a = 0.0f, .x = x, .y = y}); });
  {
    cuda::LaunchGate gate;
    gate.hold(stream);
    axpy(Exec::cuda(stream.handle()), {float(c.a), x, y});
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(cudaStreamQuery(held), cudaErrorNotReady) << "the work ran before the gate opened";
    EXPECT_TRUE(gate.open());
    stream.synchronize();
    EXPECT_TRUE(allClose(y.download<float>(), c.want, kAxpyTol));
  }
  {
    cuda::LaunchGate gate(milliseconds(100));
    gate.hold(stream);
    const auto start = steady_clock::now();
    stream.synchronize();  // waits on the held stream: only the timeout releases it
    const double waited = duration<double>(steady_clock::now() - start).count();
    EXPECT_GE(waited, 0.09);
    EXPECT_LT(waited, 10.0);
    EXPECT_FALSE(gate.open()) << "the gate did not report that it gave up";
  }
  // Device::time through the gate: finite, positive times; a call that waits on its stream (a download) still
  // returns, timed as launched.
  for (const bool waits : {false, true}) {
    const Device::Timings t = device->time(
        Backend::Cuda,
        [&](const Exec& exec) {
          axpy(exec, {.a = 1.0f, .x = x, .y = y});
          if (waits) (void)y.download<float>();
        },
        3);
    ASSERT_EQ(t.ms.size(), 3u) << "waits=" << waits;
    for (double ms : t.ms) EXPECT_TRUE(std::isfinite(ms) && ms > 0.0) << "waits=" << waits << ": " << ms;
  }
#endif
}

// Per-frame parameters (the viewer's): a copy recorded into the command buffer or enqueued on the stream, in order
// with the ops around it. 70,001 floats take several of Vulkan's 64 KiB updates; the second copy overwrites part of
// the first, and an axpy between them must read the first.
TEST_P(AxpyOp, UploadsOrderedWithTheWork) {
  const size_t n = 70'001;
  std::vector<float> first(n), second(1000, -1.0f);
  for (size_t i = 0; i < n; ++i) first[i] = float(i % 977) * 0.5f;
  DeviceBuffer x = poisoned(device(), n), y = device().allocate(ElementType::Float32, n);
  y.upload(std::span<const float>(std::vector<float>(n, 1.0f)));
  run([&](const Exec& e) {
    x.upload(e, first.data(), n * 4);
    axpy(e, {.a = 2.0f, .x = x, .y = y});
    e.barrier();
    x.upload(e, second.data(), second.size() * 4, 4 * 100);
  });
  const std::vector<float> xs = x.download<float>(), ys = y.download<float>();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(ys[i], 1.0f + 2.0f * first[i]) << i;
    ASSERT_EQ(xs[i], i >= 100 && i < 1100 ? -1.0f : first[i]) << i;
  }
  expectRejected([&](const Exec& e) { x.upload(e, first.data(), (n + 1) * 4); }, "upload of");
  if (backend() == Backend::Vulkan)
    expectRejected([&](const Exec& e) { x.upload(e, first.data(), 6); }, "multiples of 4");
}

TEST_P(AxpyOp, RejectsBadArguments) {
  DeviceBuffer x = device().allocate(ElementType::Float32, 5), y = device().allocate(ElementType::Float32, 4);
  DeviceBuffer ints = device().allocate(ElementType::Int32, 8);
  expectRejected([&](const Exec& e) { axpy(e, {.a = 1, .x = x, .y = y}); },
                 "axpy: y holds 4 elements, its shape needs 5");
  expectRejected([&](const Exec& e) { axpy(e, {.a = 1, .x = y, .y = ints}); }, "axpy: y holds int32, expected float32");
  expectRejected([&](const Exec& e) { axpy(e, {.a = 1, .y = y}); }, "axpy: x is missing");
}
