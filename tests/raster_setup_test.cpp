// The triangle setup (fixed-point vertices, depth levels, box): exact floors on the reference, and the Vulkan and
// CUDA setups equal to it bit for bit.
#include <array>
#include <cmath>
#include <limits>
#include <iomanip>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include "armature/body/synth.h"
#include "armature/cuda/raster.h"
#include "armature/ops/raster.h"
#include "armature/ops/raster_hardware.h"
#include "armature/shaders.h"
#include "support/compare.h"
#include "support/raster_fixtures.h"
#include "support/vk_test_env.h"
#include "shared/raster_cover.h"
#include "shared/raster_weights.h"

using namespace armature;
using namespace armature::test;

// The setup (fixed-point vertices, depth levels, box) decides every face id, so the GPU's must equal the CPU's bit
// for bit; face-id comparisons alone find a difference only where it happens to flip a pixel.
namespace {
// Triangles whose corners land on, or within float rounding of, the 1/16-pixel grid of a width × height image and on
// depth levels, so that the setup's quotients are integers or within 2^-12 of one: its integer path decides them
// (rasterFixedExact, rasterDepthLevelExact). With sizes of 2^k + 1 and w = 1 the grid is dyadic and the quotients
// exact integers.
Scene snappedScene(size_t triangles, uint32_t width, uint32_t height) {
  Scene s;
  auto u = uniform(triangles * 12, 0, 1);
  const double sx = 8.0 * (width - 1), sy = 8.0 * (height - 1);
  for (size_t t = 0; t < triangles; ++t) {
    const double* r = &u[t * 12];
    const double cx = std::floor(r[0] * 16 * width), cy = std::floor(r[1] * 16 * height);
    for (int k = 0; k < 3; ++k) {
      const double gx = cx + std::floor(r[2 + k] * 48), gy = cy + std::floor(r[5 + k] * 48),
                   level = std::floor(r[8 + k] * 6e7);
      const float w = t % 2 ? 1.0f : float(0.5 + 2 * r[11]);
      const double ndcX = (gx - sx - 8.5) / sx, ndcY = (gy - sy - 8.5) / sy, ndcZ = (level - 33554432.0) / 33553760.0;
      s.pos.insert(s.pos.end(), {float(ndcX * w), float(ndcY * w), float(ndcZ * w), w});
    }
    s.faces.insert(s.faces.end(), {int(3 * t), int(3 * t + 1), int(3 * t + 2)});
  }
  return s;
}
// The setup scenes: random triangles and snapped ones, as three float4 corners per triangle.
std::vector<float> setupCorners(uint32_t width, uint32_t height) {
  std::vector<float> corners;
  for (const Scene& scene : {randomScene(20000), snappedScene(20000, width, height)})
    for (int32_t v : scene.faces)
      corners.insert(corners.end(), &scene.pos[size_t(v) * 4], &scene.pos[size_t(v) * 4 + 4]);
  return corners;
}
constexpr std::pair<uint32_t, uint32_t> kSetupSizes[] = {{256, 128}, {257, 129}, {4097, 3}, {45, 31}};
// A device's setups against the CPU's, every field bit for bit.
void expectSetupsMatch(const std::vector<float>& corners, const std::vector<RasterTri>& gpu, uint32_t w, uint32_t h) {
  size_t differ = 0, valid = 0;
  for (size_t f = 0; f < gpu.size(); ++f) {
    const float* c = &corners[f * 12];
    RasterTri t = rasterSetup(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], w, h);
    valid += t.valid;
    const RasterTri& g = gpu[f];
    bool same =
        t.valid == g.valid &&
        (!t.valid || (t.inverseArea == g.inverseArea && t.x0 == g.x0 && t.y0 == g.y0 && t.x1 == g.x1 && t.y1 == g.y1 &&
                      t.x2 == g.x2 && t.y2 == g.y2 && t.d0 == g.d0 && t.d1 == g.d1 && t.d2 == g.d2 &&
                      t.area == g.area && t.minX == g.minX && t.maxX == g.maxX && t.minY == g.minY &&
                      t.maxY == g.maxY && t.narrow == g.narrow && t.sign == g.sign && t.owned == g.owned));
    if (!same && differ++ < 3)
      ADD_FAILURE() << w << "x" << h << " triangle " << f << ": cpu (" << t.x0 << "," << t.y0 << ") (" << t.x1 << ","
                    << t.y1 << ") (" << t.x2 << "," << t.y2 << ") d " << t.d0 << " " << t.d1 << " " << t.d2 << " valid "
                    << t.valid << "; gpu (" << g.x0 << "," << g.y0 << ") (" << g.x1 << "," << g.y1 << ") (" << g.x2
                    << "," << g.y2 << ") d " << g.d0 << " " << g.d1 << " " << g.d2 << " valid " << g.valid
                    << std::setprecision(9) << "; clip z " << c[2] << " " << c[6] << " " << c[10] << " w " << c[3]
                    << " " << c[7] << " " << c[11];
  }
  EXPECT_EQ(differ, 0u) << "of " << gpu.size() << " triangles at " << w << "x" << h;
  EXPECT_GT(valid, gpu.size() / 10);
}
}  // namespace

// The setup's quotients are exact floors, whichever path computes them: checked against the defining inequalities
// in double, whose products here are exact (an integer under 2^28 times a float, a float times an integer under 2^26).
namespace {
// floor(a/w · S + S + 8.5) clamped to ±2^22, S = 8(size-1): g <= v < g + 1 as (2g - 2S - 17)·w <= 2aS < (2g - 2S -
// 15)·w.
bool isFixedFloor(int g, float a, float w, uint32_t size) {
  const double S = 8.0 * (size - 1), aS2 = 2.0 * double(a) * S;
  const bool atLeast = g == -4194304 || (2.0 * g - 2 * S - 17) * double(w) <= aS2;
  const bool below = g == 4194304 || aS2 < (2.0 * g - 2 * S - 15) * double(w);
  return atLeast && below && g >= -4194304 && g <= 4194304;
}
// trunc(z/w · C + 2^25) clamped to the level range, C = 33553760.
bool isDepthLevel(int64_t level, float z, float w) {
  const double zC = double(z) * 33553760.0, origin = 33554432.0;
  auto scaled = [&](double l) { return (l - origin) * double(w); };  // v >= l  <=>  zC >= scaled(l)
  if (level <= RASTER_DEPTH_LEVEL_MIN) return level == RASTER_DEPTH_LEVEL_MIN && zC <= scaled(double(level));
  if (level >= RASTER_DEPTH_LEVEL_MAX) return level == RASTER_DEPTH_LEVEL_MAX && zC >= scaled(double(level));
  if (level > 0) return zC >= scaled(double(level)) && zC < scaled(double(level) + 1);
  if (level < 0) return zC > scaled(double(level) - 1) && zC <= scaled(double(level));
  return zC > scaled(-1) && zC < scaled(1);
}
// Random clip values, and ones whose quotients are integers or within 2^-20..2^-12 of one (the integer path's).
std::vector<std::array<float, 3>> setupValues() {
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::array<float, 3>> values;  // a (x or y), z, w
  for (int i = 0; i < 300000; ++i) {
    const float w = float(std::exp(u(rng) * 8 - 4));
    float a = float((u(rng) * 2 - 1) * 2.5 * w), z = float((u(rng) * 5 - 2.5) * w);
    if (i % 3 == 1) {  // near a grid step of a 4097-pixel image, and near a depth level
      const double S = 8.0 * 4096, nudge = (u(rng) < 0.5 ? -1 : 1) * std::ldexp(1.0, -12 - int(u(rng) * 9));
      const double g = std::floor(u(rng) * 2 * S) + (i % 2 ? 0 : nudge);
      a = float((g - S - 8.5) / S * w);
      z = float((std::floor(u(rng) * 6e7) - 33554432.0 + nudge) / 33553760.0 * w);
    }
    values.push_back({a, z, w});
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float a : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-42f, 3e38f, -3e38f, inf, -inf, nan, 0.7f})
    for (float w : {1.0f, 1e-42f, 1e-20f, 1e20f, 3e38f, inf, 0.3f}) values.push_back({a, a, w});
  return values;
}
}  // namespace

TEST(RasterReference, SetupQuotientsAreExactFloors) {
  size_t integerPath = 0;
  for (const auto& [a, z, w] : setupValues()) {
    for (uint32_t size : {1u, 2u, 257u, 4097u, 65536u}) {
      const int exact = rasterFixedExact(a, w, size);
      if (!std::isnan(a) && !std::isinf(a) && !std::isinf(w)) {
        ASSERT_TRUE(isFixedFloor(exact, a, w, size)) << a << " / " << w << " size " << size << ": " << exact;
      }
      for (double error : {0.0, 0x1p-44, -0x1p-44}) {  // the estimate of 1/w as far off as CUDA's may be
        ASSERT_EQ(rasterFixed(a, w, 1.0 / double(w) * (1 + error), size), exact) << a << " / " << w << " size " << size;
      }
      integerPath +=
          !rasterClearOfIntegers((double(a) * 8 * (size - 1) + double(w) * (8.0 * (size - 1) + 8.5)) / double(w));
    }
    const int64_t level = rasterDepthLevelExact(z, w);
    if (!std::isnan(z) && !std::isinf(z) && !std::isinf(w)) {
      ASSERT_TRUE(isDepthLevel(level, z, w)) << z << " / " << w << ": " << level;
    }
    for (double error : {0.0, 0x1p-44, -0x1p-44}) {
      ASSERT_EQ(rasterDepthLevel(z, w, 1.0 / double(w) * (1 + error)), level) << z << " / " << w;
    }
  }
  EXPECT_GT(integerPath, 30000u) << "the values near integers should take the integer path";
  // Non-finite inputs land where the double form put them.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(rasterFixedExact(nan, 1, 64), -4194304);
  EXPECT_EQ(rasterFixedExact(inf, 1, 64), 4194304);
  EXPECT_EQ(rasterFixedExact(-inf, 1, 64), -4194304);
  EXPECT_EQ(rasterFixedExact(inf, 1, 1), -4194304);  // inf · 0 is NaN
  EXPECT_EQ(rasterFixedExact(0.5f, inf, 64), -4194304);
  EXPECT_EQ(rasterDepthLevelExact(nan, 1), RASTER_DEPTH_LEVEL_MIN);
  EXPECT_EQ(rasterDepthLevelExact(inf, 1), RASTER_DEPTH_LEVEL_MAX);
  EXPECT_EQ(rasterDepthLevelExact(0.5f, inf), RASTER_DEPTH_LEVEL_MIN);
}

// Devices without doubles divide in integers: the correctly rounded quotient, as the double form's. (On this CPU the
// plain float division is correctly rounded too, so the integer division is checked on its own.)
TEST(RasterReference, DivisionWithoutDoublesIsCorrectlyRounded) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(0, 1);
  size_t compared = 0;
  for (int i = 0; i < 2000000; ++i) {
    const float a = float((u(rng) * 2 - 1) * std::exp(u(rng) * 60 - 30)),
                b = float(std::exp(u(rng) * 60 - 30) * (i % 5 ? 1 : -1));
    const float want = float(double(a) / double(b));
    if (a == 0 || !(std::abs(want) > 2.4e-38f && std::abs(want) < 1.7e38f)) continue;  // the plain division's
    ASSERT_EQ(armFloatBits(rasterDivideInteger(a, b)), armFloatBits(want)) << a << " / " << b;
    ASSERT_EQ(armFloatBits(rasterDivideRounded(a, b)), armFloatBits(want)) << a << " / " << b;
    ++compared;
  }
  for (float a : {1.0f, 3.0f, 0.1f, -7.0f, 16777215.0f, 1e-30f})  // exact quotients and the slowest mantissas
    for (float b : {3.0f, 1.0f, 16777215.0f, 0.7f, 1e30f})
      ASSERT_EQ(rasterDivideInteger(a, b), float(double(a) / double(b))) << a << " / " << b;
  EXPECT_GT(compared, 1900000u);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(rasterDivideRounded(1.0f, 0.0f), inf);
  EXPECT_EQ(rasterDivideRounded(-inf, 2.0f), -inf);
  EXPECT_EQ(rasterDivideRounded(0.0f, 5.0f), 0.0f);
  EXPECT_TRUE(std::isnan(rasterDivideRounded(std::numeric_limits<float>::quiet_NaN(), 1.0f)));
}

TEST(RasterVulkan, SetupMatchesReferenceBitForBit) {
  ARM_REQUIRE_VULKAN(ctx);
  if (!ctx.info().int64 || !ctx.info().float64)
    GTEST_SKIP() << "'" << ctx.info().name << "' lacks shaderInt64 or shaderFloat64";
  static_assert(sizeof(RasterTri) == 88, "RasterTri must have GLSL's std430 layout");
  for (auto [w, h] : kSetupSizes) {
    const std::vector<float> corners = setupCorners(w, h);
    uint32_t n = uint32_t(corners.size() / 12);
    auto pos = vk::makeStorageBuffer<float>(ctx, corners);
    vk::Buffer out(ctx, size_t(n) * sizeof(RasterTri), vk::kStorageUsage);
    out.fill(nanBits());
    RasterPush push{};
    push.width = w, push.height = h, push.triangleCount = n;
    const auto& probe = ctx.program(shaders::raster_setup_probe, 2, sizeof push);
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      vk::dispatch(cmd, probe, vk::groupCount(n, RASTER_GROUP), {pos.view(), out.view()}, push);
      vk::computeBarrier(cmd);
    });
    std::vector<RasterTri> gpu(n);
    std::vector<uint8_t> bytes = out.download<uint8_t>(gpu.size() * sizeof(RasterTri));
    std::memcpy(gpu.data(), bytes.data(), bytes.size());
    expectSetupsMatch(corners, gpu, w, h);
  }
}

// The float-only shaders' per-vertex arithmetic (raster_vertex_probe_float.comp): grid positions, depth levels and
// the resolve's NDC, bit for bit against the CPU's double forms, on the setup scenes' corners and on extremes.
TEST(RasterVulkan, FloatOnlySetupMatchesReferenceBitForBit) {
  ARM_REQUIRE_VULKAN(ctx);
  if (!ctx.info().int64) GTEST_SKIP() << "'" << ctx.info().name << "' has no shaderInt64";
  for (auto [width, height] : kSetupSizes) {
    std::vector<float> positions = setupCorners(width, height);
    for (const auto& [a, z, w] : setupValues())
      if (positions.size() < 4 * 200000) positions.insert(positions.end(), {a, -a, z, w});
    const uint32_t n = uint32_t(positions.size() / 4);
    auto pos = vk::makeStorageBuffer<float>(ctx, positions);
    vk::Buffer vertices(ctx, size_t(n) * sizeof(RasterVertex), vk::kStorageUsage),
        ndc(ctx, size_t(n) * 8, vk::kStorageUsage);
    vertices.fill(nanBits());
    ndc.fill(nanBits());
    RasterPush push{};
    push.width = width, push.height = height, push.vertexCount = n;
    const auto& probe = ctx.program(shaders::raster_vertex_probe_float, 3, sizeof push);
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      vk::dispatch(cmd, probe, vk::groupCount(n, RASTER_GROUP), {pos.view(), vertices.view(), ndc.view()}, push);
      vk::computeBarrier(cmd);
    });
    std::vector<RasterVertex> gpu(n);
    std::vector<uint8_t> bytes = vertices.download<uint8_t>(gpu.size() * sizeof(RasterVertex));
    std::memcpy(gpu.data(), bytes.data(), bytes.size());
    const std::vector<float> gpuNdc = ndc.download<float>(size_t(n) * 2);
    size_t differ = 0, valid = 0, compared = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const float* p = &positions[size_t(i) * 4];
      const RasterVertex want = rasterVertex(p[0], p[1], p[2], p[3], width, height);
      const RasterVertex& got = gpu[i];
      valid += want.valid;
      const bool same = want.valid == got.valid && want.x == got.x && want.y == got.y && want.d == got.d;
      if (!same && differ++ < 3)
        ADD_FAILURE() << width << "x" << height << " vertex " << i << std::setprecision(9) << " (" << p[0] << ", "
                      << p[1] << ", " << p[2] << ", " << p[3] << "): cpu " << want.x << " " << want.y << " " << want.d
                      << " valid " << want.valid << "; gpu " << got.x << " " << got.y << " " << got.d << " valid "
                      << got.valid;
      if (want.valid) {  // the resolve's NDC, for corners it can see (w > 0, finite)
        for (int k = 0; k < 2; ++k) {
          const float expected = rasterDivide(p[k], p[3]);
          if (std::abs(expected) < 1.2e-38f) continue;  // subnormal quotients: the plain division
          ++compared;
          if (armFloatBits(gpuNdc[size_t(i) * 2 + size_t(k)]) != armFloatBits(expected) && differ++ < 3)
            ADD_FAILURE() << "NDC of vertex " << i << std::setprecision(9) << ": cpu " << expected << ", gpu "
                          << gpuNdc[size_t(i) * 2 + size_t(k)];
        }
      }
    }
    EXPECT_EQ(differ, 0u) << "of " << n << " vertices at " << width << "x" << height;
    EXPECT_GT(valid, size_t(n) / 10);
    EXPECT_GT(compared, size_t(n) / 10);
  }
}

// The same on CUDA, whose reciprocal estimate differs from the CPU's (rasterReciprocal).
TEST(RasterCuda, SetupMatchesReferenceBitForBit) {
  std::string why;
  Device* device = testDevice(Backend::Cuda, &why);
  if (!device) GTEST_SKIP() << "cuda: " << why;
#if ARMATURE_HAS_CUDA
  for (auto [w, h] : kSetupSizes) {
    const std::vector<float> corners = setupCorners(w, h);
    const uint32_t n = uint32_t(corners.size() / 12);
    DeviceBuffer pos = device->upload(corners), out = device->allocate(ElementType::Byte, n * sizeof(RasterTri));
    out.fill(nanBits());
    device->run(Backend::Cuda, [&](const Exec& exec) {
      cuda::rasterSetupProbe(w, h, pos.view().cuda<float>(), n, out.view().cuda<void>(), exec.stream());
    });
    std::vector<RasterTri> gpu(n);
    out.download(gpu.data(), gpu.size() * sizeof(RasterTri));
    expectSetupsMatch(corners, gpu, w, h);
  }
#endif
}
