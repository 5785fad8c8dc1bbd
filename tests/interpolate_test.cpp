// interpolate: the reference against finite differences, and every GPU backend against the reference from one body,
// outputs NaN-poisoned.
#include "armature/ops/interpolate.h"
#include "armature/ops/raster.h"
#include "support/compare.h"
#include "support/raster_fixtures.h"
#include "support/vk_test_env.h"

using namespace armature;
using namespace armature::test;

namespace {
struct InterpCase {
  Scene scene;
  RasterDesc desc;
  RasterResult raster;
  uint32_t channels;
  std::vector<double> attr, gradOut;
  uint32_t vertexCount = 0, imagePixels = 0;  // per image; imagePixels > 0: attributes (B,N,C)
  uint32_t pixels() const { return uint32_t(desc.pixels()); }
};
// A random scene rasterised by the reference; with images > 1, that many instanced views (the mesh moved and
// scaled per image), and with perImage each view its own attributes.
InterpCase interpCase(uint32_t W, uint32_t H, uint32_t C, uint32_t images = 1, bool perImage = false) {
  InterpCase c{{}, RasterDesc{W, H}, {}, C, {}, {}};
  Scene base = randomScene(120);
  c.scene.faces = base.faces;
  for (uint32_t image = 0; image < images; ++image)
    for (size_t v = 0; v < base.pos.size(); v += 4) {
      float w = base.pos[v + 3];
      c.scene.pos.insert(c.scene.pos.end(), {base.pos[v] * (1 - 0.2f * float(image)) + 0.1f * float(image) * w,
                                             base.pos[v + 1], base.pos[v + 2], w});
    }
  c.desc.images = images;
  c.vertexCount = uint32_t(base.pos.size() / 4);
  c.imagePixels = perImage ? W * H : 0;
  c.raster = rasterizeRef(c.scene.pos, c.scene.faces, c.desc);
  c.attr = uniform(interpolateAttrCount(c.pixels(), C, c.vertexCount, c.imagePixels), -1, 1);
  c.gradOut = uniform(size_t(c.pixels()) * C, -1, 1);
  for (auto* v : {&c.attr, &c.gradOut})
    for (auto& x : *v) x = double(float(x));  // the GPU sees these floats
  return c;
}
}  // namespace

TEST(InterpolateReference, BackwardMatchesFiniteDifferences) {
  // One image, then three views with per-image attributes (B,N,C).
  for (InterpCase c : {interpCase(23, 17, 3), interpCase(19, 13, 3, 3, true)}) {
    SCOPED_TRACE(c.imagePixels ? "per-image attributes" : "shared attributes");
    std::vector<double> bary(c.raster.barycentrics.begin(), c.raster.barycentrics.end());
    std::vector<double> gAttr, gBary;
    interpolateBackwardRef(c.attr, 3, c.raster.findices, bary, c.scene.faces, c.gradOut, gAttr, gBary, c.imagePixels);
    auto loss = [&](const std::vector<double>& attr, const std::vector<double>& b) {
      auto out = interpolateRef(attr, 3, c.raster.findices, b, c.scene.faces, c.imagePixels);
      double l = 0;
      for (size_t i = 0; i < out.size(); ++i) l += out[i] * c.gradOut[i];
      return l;
    };
    const double h = 1e-6;  // the map is bilinear: central differences are exact up to rounding
    size_t nonzero = 0;
    for (size_t i = 0; i < c.attr.size(); i += 7) {
      auto a = c.attr;
      a[i] += h;
      double lp = loss(a, bary);
      a[i] -= 2 * h;
      EXPECT_NEAR((lp - loss(a, bary)) / (2 * h), gAttr[i], 1e-6) << "attr " << i;
      nonzero += gAttr[i] != 0;
    }
    EXPECT_GT(nonzero, 3u) << "no attribute reaches a pixel: the check proves nothing";
    for (size_t i = 0; i < bary.size(); i += 5) {
      auto b = bary;
      b[i] += h;
      double lp = loss(c.attr, b);
      b[i] -= 2 * h;
      EXPECT_NEAR((lp - loss(c.attr, b)) / (2 * h), gBary[i], 1e-6) << "bary " << i;
    }
    auto badIds = c.raster.findices;
    badIds[0] = int32_t(c.scene.faces.size() / 3 + 1);
    EXPECT_THROW(interpolateRef(c.attr, 3, badIds, bary, c.scene.faces, c.imagePixels), Error);
  }
  // Per-image attributes need whole images and B·N·C values.
  InterpCase c = interpCase(19, 13, 2, 3, true);
  std::vector<double> bary(c.raster.barycentrics.begin(), c.raster.barycentrics.end());
  EXPECT_THROW(interpolateRef(c.attr, 2, c.raster.findices, bary, c.scene.faces, c.imagePixels + 1), Error);
  auto shortAttr = c.attr;
  shortAttr.resize(shortAttr.size() - 2);
  EXPECT_THROW(interpolateRef(shortAttr, 2, c.raster.findices, bary, c.scene.faces, c.imagePixels), Error);
}

namespace {
// fp32 against double: sums of 3 products per value (forward) and of up to a few hundred pixels' contributions per
// attribute (backward, float atomics in any order): 1e-5 absolute and 1e-4 relative with values in [-1, 1].
constexpr Tol kInterpTol{1e-5, 1e-4};
void expectInterpolation(const InterpCase& c, const std::vector<float>& out, const std::vector<float>& gAttr,
                         const std::vector<float>& gBary) {
  std::vector<double> bary(c.raster.barycentrics.begin(), c.raster.barycentrics.end());
  auto want = interpolateRef(c.attr, c.channels, c.raster.findices, bary, c.scene.faces, c.imagePixels);
  std::vector<double> wantAttr, wantBary;
  interpolateBackwardRef(c.attr, c.channels, c.raster.findices, bary, c.scene.faces, c.gradOut, wantAttr, wantBary,
                         c.imagePixels);
  EXPECT_TRUE(allClose(out, want, kInterpTol));
  EXPECT_TRUE(allClose(gAttr, wantAttr, kInterpTol));
  EXPECT_TRUE(allClose(gBary, wantBary, kInterpTol));
}
}  // namespace

namespace {
class InterpolateOp : public OnBackend {};
ARM_ON_GPU_BACKENDS(InterpolateOp);
}  // namespace

TEST_P(InterpolateOp, ForwardAndBackwardMatchReference) {
  if (backend() == Backend::Vulkan && !device().vulkan()->info().float32AtomicAdd)
    GTEST_SKIP() << "'" << device().vulkan()->info().name << "' lacks float32 atomic add";
  // One image; three views sharing the attributes; three views with their own (B,N,C).
  for (InterpCase c :
       {interpCase(1, 1, 1), interpCase(61, 43, 5), interpCase(37, 29, 3, 3), interpCase(37, 29, 3, 3, true)}) {
    SCOPED_TRACE(std::to_string(c.desc.images) + " images" + (c.imagePixels ? ", per-image attributes" : ""));
    const uint32_t pixels = c.pixels(), C = c.channels;
    const InterpolateDesc d{pixels, C, c.vertexCount, uint32_t(c.scene.faces.size() / 3), c.imagePixels};
    DeviceBuffer attr = device().upload(cast<float>(c.attr)), ids = device().upload(c.raster.findices),
                 bary = device().upload(c.raster.barycentrics), faces = device().upload(c.scene.faces),
                 gradOut = device().upload(cast<float>(c.gradOut));
    DeviceBuffer out = device().allocate(ElementType::Float32, size_t(pixels) * C),
                 gAttr = device().allocate(ElementType::Float32, c.attr.size()),
                 gBary = device().allocate(ElementType::Float32, size_t(pixels) * 3);
    out.fill(nanBits());
    gBary.fill(nanBits());
    gAttr.fill(0);
    run([&](const Exec& exec) {
      interpolate(exec, {.desc = d, .attr = attr, .findices = ids, .barycentrics = bary, .faces = faces, .out = out});
      interpolateBackward(exec, {.desc = d,
                                 .attr = attr,
                                 .findices = ids,
                                 .barycentrics = bary,
                                 .faces = faces,
                                 .gradOut = gradOut,
                                 .gradAttr = gAttr,
                                 .gradBarycentrics = gBary});
    });
    expectInterpolation(c, out.download<float>(), gAttr.download<float>(), gBary.download<float>());
  }
}

// Back-to-back rasterize and interpolate calls, queued with no wait between them, must see each other's results (on
// CUDA compute capability 9.0+ their kernels launch as programmatic dependents of the work before them: the second
// rasterize clears a z-buffer the first one's resolve read; interpolate reads the resolve's output).
TEST_P(InterpolateOp, FollowsRasterizeWithoutWaiting) {
  if (backend() == Backend::Vulkan && !device().vulkan()->info().int64)
    GTEST_SKIP() << "'" << device().vulkan()->info().name << "' has no shaderInt64";
  const uint32_t C = 3;
  InterpCase c = interpCase(97, 61, C);
  const RasterDesc& d = c.desc;
  const uint32_t pixels = d.width * d.height, N = uint32_t(c.scene.pos.size() / 4),
                 M = uint32_t(c.scene.faces.size() / 3);
  DeviceBuffer pos = device().upload(c.scene.pos), faces = device().upload(c.scene.faces),
               attr = device().upload(cast<float>(c.attr));
  DeviceBuffer z = device().allocate(ElementType::Byte, rasterScratchBytes(d));
  std::vector<DeviceBuffer> ids, bary, out;
  for (int call = 0; call < 3; ++call) {
    ids.push_back(device().allocate(ElementType::Int32, pixels));
    bary.push_back(device().allocate(ElementType::Float32, size_t(pixels) * 3));
    out.push_back(device().allocate(ElementType::Float32, size_t(pixels) * C));
    for (DeviceBuffer* b : {&ids.back(), &bary.back(), &out.back()}) b->fill(nanBits());
  }
  std::vector<double> refBary(c.raster.barycentrics.begin(), c.raster.barycentrics.end());
  const auto want = interpolateRef(c.attr, C, c.raster.findices, refBary, c.scene.faces);
  run([&](const Exec& exec) {
    for (int call = 0; call < 3; ++call) {
      rasterize(exec, {.desc = d,
                       .vertexCount = N,
                       .faceCount = M,
                       .positions = pos,
                       .faces = faces,
                       .scratch = z,
                       .findices = ids[call],
                       .barycentrics = bary[call]});
      exec.barrier();
      interpolate(exec, {.desc = {pixels, C, N, M},
                         .attr = attr,
                         .findices = ids[call],
                         .barycentrics = bary[call],
                         .faces = faces,
                         .out = out[call]});
      exec.barrier();
    }
  });
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    EXPECT_EQ(ids[call].download<int32_t>(), c.raster.findices);
    // fp32 barycentrics within 1e-5 of the reference's (RasterOp.MatchesReference), times attributes in [-1, 1].
    EXPECT_TRUE(allClose(out[call].download<float>(), want, Tol{1e-4, 1e-4}));
  }
}

// Every argument is checked before anything is recorded or launched.
TEST_P(InterpolateOp, RejectsBadArguments) {
  InterpCase c = interpCase(9, 7, 2);
  const InterpolateDesc d{c.pixels(), 2, c.vertexCount, uint32_t(c.scene.faces.size() / 3)};
  DeviceBuffer attr = device().upload(cast<float>(c.attr)), ids = device().upload(c.raster.findices),
               bary = device().upload(c.raster.barycentrics), faces = device().upload(c.scene.faces),
               out = device().allocate(ElementType::Float32, size_t(c.pixels()) * 2);
  expectRejected(
      [&](const Exec& e) {
        interpolate(e, {.desc = d,
                        .attr = attr,
                        .findices = ids,
                        .barycentrics = bary,
                        .faces = faces,
                        .out = out.view().slice(0, 5)});
      },
      "interpolate: out holds 5 elements");
  expectRejected(
      [&](const Exec& e) {
        interpolate(e, {.desc = d, .attr = attr, .findices = bary, .barycentrics = bary, .faces = faces, .out = out});
      },
      "interpolate: findices holds float32");
  expectRejected(
      [&](const Exec& e) {
        interpolate(e, {.desc = d,
                        .attr = attr.view().slice(0, 3),
                        .findices = ids,
                        .barycentrics = bary,
                        .faces = faces,
                        .out = out});
      },
      "interpolate: attr holds 3 elements");
  expectRejected(
      [&](const Exec& e) {
        interpolate(e, {.desc = {d.pixels, 0, d.vertexCount, d.faceCount},
                        .attr = attr,
                        .findices = ids,
                        .barycentrics = bary,
                        .faces = faces,
                        .out = out});
      },
      "channels must be >= 1");
  expectRejected(
      [&](const Exec& e) {
        interpolate(e, {.desc = {d.pixels, 2, d.vertexCount, d.faceCount, 8},
                        .attr = attr,
                        .findices = ids,
                        .barycentrics = bary,
                        .faces = faces,
                        .out = out});
      },
      "");  // 8 does not divide 63
}
