// The rasteriser on every GPU backend against the reference, on fresh random scenes of awkward sizes with
// NaN-poisoned outputs: face ids, barycentrics, scratch reuse, bad arguments, the backward; and the hardware
// rasteriser on a closed mesh.
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

namespace {
// Fresh random scenes at awkward sizes: 1×1, odd sizes, a depth prior, 4097×3, each with both one-invocation box
// limits, a batch of instanced views with priors, a batch of face ranges (one empty, two overlapping), and a queue
// too small for the big triangles (the overflow path walks them one invocation each).
struct RandomCase {
  std::string name;
  Scene scene;
  RasterDesc desc;
  std::vector<float> prior;
  std::vector<int32_t> ranges;
  RasterTuning tuning;
};
std::vector<RandomCase> randomCases() {
  std::vector<RandomCase> cases;
  struct Size {
    uint32_t w, h;
    size_t tris;
    bool prior;
  };
  for (Size z :
       {Size{1, 1, 50, false}, Size{37, 23, 300, false}, Size{256, 128, 2000, true}, Size{4097, 3, 500, false}}) {
    RandomCase c{
        std::to_string(z.w) + "x" + std::to_string(z.h), randomScene(z.tris), RasterDesc{z.w, z.h, z.prior}, {}, {}};
    if (z.prior) c.prior = cast<float>(uniform(size_t(z.w) * z.h, -0.5, 0.5));
    cases.push_back(c);
    // The same scene with boxes up to 64 pixels walked by one invocation (big scenes' setting; small ones use 8).
    c.name += " small<=64", c.tuning.smallTrianglePixels = 64;
    cases.push_back(std::move(c));
  }
  {  // three views of one mesh: each image's positions are the mesh moved and scaled
    RandomCase c{"instanced 3x 45x31", {}, RasterDesc{45, 31, true}, {}, {}};
    Scene base = randomScene(400);
    c.scene.faces = base.faces;
    for (int image = 0; image < 3; ++image)
      for (size_t v = 0; v < base.pos.size(); v += 4) {
        float w = base.pos[v + 3];
        c.scene.pos.insert(c.scene.pos.end(),
                           {base.pos[v] * (1 - 0.2f * image) + 0.1f * image * w, base.pos[v + 1], base.pos[v + 2], w});
      }
    c.desc.images = 3;
    c.prior = cast<float>(uniform(c.desc.pixels(), -0.9, 0.2));
    cases.push_back(std::move(c));
  }
  {
    RandomCase c{"ranges 4x 29x41", randomScene(600), RasterDesc{29, 41}, {}, {0, 250, 250, 0, 100, 400, 590, 10}};
    c.desc.images = 4;
    c.desc.batch = RasterBatch::Ranges;
    cases.push_back(std::move(c));
  }
  // More vertices than the barycentrics' buffer holds setups for (8 bytes each against 12 a pixel): CUDA sets up
  // each triangle's corners itself (the other cases take the per-vertex setup, but for 1×1).
  cases.push_back(RandomCase{"many vertices 20x10", randomScene(800), RasterDesc{20, 10}, {}, {}});
  // Needles, whose barycentrics the CUDA resolve computes in double (its float form is not accurate on them).
  cases.push_back(RandomCase{"needles 2048x48", sliverScene(150), RasterDesc{2048, 48}, {}, {}});
  {
    RandomCase c{"queue overflow 300x200", randomScene(300), RasterDesc{300, 200}, {}, {}};
    c.tuning.queueCapacity = 40;
    cases.push_back(std::move(c));
  }
  {  // 8,000 boxes of 9-400 pixels, one chunk each, and room for 2,000 entries: the queue fills up while ~125
     // workgroups reserve at once, so the entry and record counters' orders differ at its end (a slot reserved
     // whose triangle's record did not fit must still be written; the scratch starts as garbage, not zeros)
    RandomCase c{"racing overflow 256x256", smallTriangleScene(8000, 0.07), RasterDesc{256, 256}, {}, {}};
    c.tuning.queueCapacity = 2000, c.tuning.smallTrianglePixels = 8;
    cases.push_back(std::move(c));
  }
  {  // 200 triangles stacked on one 8×8-pixel box at random depths, ~36 fragments each: every pixel's nearest of
     // ~100, and CUDA's shared fragment list of a block nearly full (64 boxes of 64 pixels, about half covered)
    RandomCase c{"stacked 8x8 boxes 16x16", {}, RasterDesc{16, 16}, {}, {}};
    c.tuning.smallTrianglePixels = 64;
    auto u = uniform(200 * 5, 0, 1);
    auto ndc = [](double pixel) { return float(2 * pixel / 15 - 1); };  // pixel centre i is at 2i/(W-1) - 1
    for (int t = 0; t < 200; ++t) {
      const double* r = &u[size_t(t) * 5];
      float z = float(r[4] * 1.8 - 0.9);
      // Vertices at pixel (lo, lo), (hi, lo), (lo, hi) with lo in (1, 2), hi in (9, 10): centres 2..9, a box of 64.
      double lo0 = 1.05 + 0.9 * r[0], lo1 = 1.05 + 0.9 * r[1], hi0 = 9.05 + 0.9 * r[2], hi1 = 9.05 + 0.9 * r[3];
      c.scene.pos.insert(c.scene.pos.end(),
                         {ndc(lo0), ndc(lo1), z, 1, ndc(hi0), ndc(lo1), z, 1, ndc(lo0), ndc(hi1), z, 1});
      c.scene.faces.insert(c.scene.faces.end(), {3 * t, 3 * t + 1, 3 * t + 2});
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// Where two results disagree: the first differing pixel, both faces, and each face's depth level there (so a
// failure says whether a fragment went missing or the order differs).
std::string describeDifference(const RandomCase& c, const std::vector<int32_t>& want, const std::vector<int32_t>& got) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    const RasterDesc& d = c.desc;
    size_t image = i / d.imagePixels(), inImage = i % d.imagePixels();
    int px = int(inImage % d.width), py = int(inImage / d.width);
    size_t base = d.batch == RasterBatch::Instanced ? image * (c.scene.pos.size() / 4 / d.images) : 0;
    auto level = [&](int32_t face1) -> std::string {
      if (face1 <= 0) return "background";
      const float* v[3];
      for (int k = 0; k < 3; ++k)
        v[k] = &c.scene.pos[(base + size_t(c.scene.faces[size_t(face1 - 1) * 3 + size_t(k)])) * 4];
      RasterTri t = rasterSetup(v[0][0], v[0][1], v[0][2], v[0][3], v[1][0], v[1][1], v[1][2], v[1][3], v[2][0],
                                v[2][1], v[2][2], v[2][3], d.width, d.height);
      int64_t l = rasterCover(t, px, py);
      return "face " + std::to_string(face1 - 1) + " level " +
             (l == RASTER_MISS ? "miss" : std::to_string(rasterTokenLevel(l)));
    };
    return "pixel " + std::to_string(i) + " (" + std::to_string(px) + "," + std::to_string(py) + ") reference " +
           level(want[i]) + ", got " + level(got[i]);
  }
  return "none";
}

void expectSameAsReference(const RandomCase& c, const std::vector<int32_t>& findices, const std::vector<float>& bary) {
  auto ref = rasterizeRef(c.scene.pos, c.scene.faces, c.desc, c.prior, c.ranges);
  size_t differ = 0, covered = 0;
  for (size_t i = 0; i < ref.findices.size(); ++i)
    differ += ref.findices[i] != findices[i], covered += ref.findices[i] != 0;
  EXPECT_EQ(differ, 0u) << "face indices differ from the reference at " << differ << " of " << ref.findices.size()
                        << " pixels; first: " << describeDifference(c, ref.findices, findices);
  EXPECT_TRUE(c.desc.pixels() < 16 || covered > 0) << "an empty scene proves nothing";
  EXPECT_TRUE(allClose(bary, cast<double>(ref.barycentrics), kBaryTol));
}

// Vertices per image (Instanced) or in all (Ranges) of a case's positions.
template <typename Case>
uint32_t vertexCountOf(const Case& c) {
  return uint32_t(c.scene.pos.size() / 4 / rasterPositionRows(c.desc, 1));
}

// A fresh scratch's words: not zeros, which an unwritten queue entry would read as a valid record, and not ~0 (the
// empty token and the entries' "no record").
constexpr uint32_t kGarbageScratch = 0xfefefefeu;

// A case's inputs on the device and its outputs poisoned with NaN; args() names them for a call on a scratch.
// Uploads synchronise the device, so a test makes every call's buffers before it queues any.
struct RasterCall {
  const RandomCase& c;
  DeviceBuffer pos, faces, prior, ranges, ids, bary;
  RasterCall(Device& device, const RandomCase& rc, bool compressible = false)
      : c(rc),
        pos(device.upload(c.scene.pos)),
        faces(device.upload(c.scene.faces)),
        prior(device.upload(c.prior.empty() ? std::vector<float>{0} : c.prior)),
        ranges(device.upload(c.ranges.empty() ? std::vector<int32_t>{0, 0} : c.ranges)),
        ids(compressible ? device.allocateCompressible(ElementType::Int32, c.desc.pixels())
                         : device.allocate(ElementType::Int32, c.desc.pixels())),
        bary(compressible ? device.allocateCompressible(ElementType::Float32, c.desc.pixels() * 3)
                          : device.allocate(ElementType::Float32, c.desc.pixels() * 3)) {
    ids.fill(nanBits());
    bary.fill(nanBits());
  }
  RasterizeArgs args(const RasterDesc& d, DeviceView scratch) const {
    return {d,
            vertexCountOf(c),
            uint32_t(c.scene.faces.size() / 3),
            pos,
            faces,
            d.useDepthPrior ? prior.view() : DeviceView{},
            d.batch == RasterBatch::Ranges ? ranges.view() : DeviceView{},
            scratch,
            ids,
            bary,
            c.tuning};
  }
  std::vector<int32_t> findices() const { return ids.download<int32_t>(); }
  void expectReference() const { expectSameAsReference(c, findices(), bary.download<float>()); }
};

// A fresh scratch of garbage for case `c` called with `d`, in compressible memory where asked.
DeviceBuffer garbageScratch(Device& device, const RandomCase& c, const RasterDesc& d, bool compressible = false) {
  const size_t bytes = rasterScratchBytes(d, c.tuning);
  DeviceBuffer z =
      compressible ? device.allocateCompressible(ElementType::Byte, bytes) : device.allocate(ElementType::Byte, bytes);
  z.fill(kGarbageScratch);
  return z;
}

// The rasteriser on every GPU backend; Vulkan needs shaderInt64 (the exact edge functions).
class RasterOp : public OnBackend {
 protected:
  void SetUp() override {
    OnBackend::SetUp();
    if (IsSkipped() || HasFatalFailure() || backend() != Backend::Vulkan) return;
    const auto& info = device().vulkan()->info();
    if (!info.int64) GTEST_SKIP() << "'" << info.name << "' has no shaderInt64";
  }
  // The z-buffer paths this backend has: Vulkan's 64-bit atomics where the device has them, and its two 32-bit
  // passes; CUDA's one.
  std::vector<BackendPath> zbufferPaths(const vk::ContextOptions::Hidden& always = {}) {
    return paths({.int64Atomics = true}, always);
  }
  // Plain memory, and for CUDA compressible memory where the device grants it (compute capability 8.0+; Vulkan
  // cannot bind it).
  std::vector<bool> memoryKinds() {
    const bool granted = backend() == Backend::Cuda && device().allocateCompressible(ElementType::Byte, 4).compressed();
    return granted ? std::vector<bool>{false, true} : std::vector<bool>{false};
  }
  // One call on a fresh scratch of garbage, run to completion.
  RasterCall rasterizeOnce(Device& on, const RandomCase& c, const RasterDesc& d) {
    RasterCall call(on, c);
    DeviceBuffer z = garbageScratch(on, c, d);
    on.run(backend(), [&](const Exec& exec) { rasterize(exec, call.args(d, z)); });
    return call;
  }
};
ARM_ON_GPU_BACKENDS(RasterOp);

// RasterDesc::scratchCall: calls on one scratch skip its z-buffer's clear. The random cases from the most pixels
// down, so that each call's scratch was last used by a call of at least as many pixels.
std::vector<RandomCase> casesMostPixelsFirst() {
  std::vector<RandomCase> cases = randomCases();
  std::stable_sort(cases.begin(), cases.end(),
                   [](const RandomCase& a, const RandomCase& b) { return a.desc.pixels() > b.desc.pixels(); });
  return cases;
}
// Their scratchCall: 0 (the clear), 1, 2, ..., and the last four across the tags' wrap, 8189 to 8192 (tags 1, 0,
// the clear, 8189), as if the calls between had run: only the tags' order matters, and they keep falling.
std::vector<uint32_t> scratchCallsAcrossTheWrap(size_t calls) {
  EXPECT_GE(calls, 6u);
  std::vector<uint32_t> index(calls);
  for (size_t i = 0; i < calls; ++i)
    index[i] = i + 4 < calls ? uint32_t(i) : uint32_t(RASTER_TOKEN_TAGS + 2 - (calls - i));
  return index;
}
uint32_t tokenTagOf(RasterDesc d, uint32_t scratchCall) {
  d.scratchCall = scratchCall;
  return rasterTokenTag(d);
}
// Z-buffer tokens of a scratch whose history a call misstates (scratchCall > 0 on a scratch it does not describe):
// random words (any tag), faces of F at random levels with the call's own tag (nearer than the mesh's fragments
// where the level is low), that tag's nearest level without a face, zero (the lowest tag).
std::vector<uint64_t> garbageTokens(size_t pixels, uint32_t faceCount, uint32_t tag) {
  std::vector<double> u = uniform(pixels * 3, 0, 1);
  std::vector<uint64_t> tokens(pixels);
  for (size_t i = 0; i < pixels; ++i) {
    const uint64_t high = uint64_t(u[i * 3 + 1] * 4294967295.0), low = uint64_t(u[i * 3 + 2] * 4294967295.0);
    const uint64_t tagged = uint64_t(tag) << RASTER_TAG_SHIFT;
    switch (int(u[i * 3] * 4)) {
      case 0:
        tokens[i] = high << 32 | low;
        break;
      case 1:
        tokens[i] = (tagged | high >> (32 - RASTER_TAG_SHIFT)) << 32 | (1 + low % faceCount);
        break;
      case 2:
        tokens[i] = tagged << 32 | 0xffffffffull;
        break;
      default:
        tokens[i] = 0;
        break;
    }
  }
  return tokens;
}
// The ids of a call over such garbage: any image, but every id names a face of F or the background (so interpolate
// and the backward read inside F).
void expectIdsInsideF(const std::vector<int32_t>& ids, uint32_t faceCount) {
  size_t outside = 0;
  for (int32_t id : ids) outside += id < 0 || uint32_t(id) > faceCount;
  EXPECT_EQ(outside, 0u) << "face ids outside [0, " << faceCount << "]";
}
}  // namespace

TEST_P(RasterOp, MatchesReference) {
  for (bool compressible : memoryKinds())
    for (const BackendPath& path : zbufferPaths())
      for (const RandomCase& c : randomCases()) {
        SCOPED_TRACE(c.name + path.name + (compressible ? ", compressible memory" : ""));
        Device& on = *path.device;
        RasterCall call(on, c, compressible);
        DeviceBuffer z = garbageScratch(on, c, c.desc, compressible);
        on.run(backend(), [&](const Exec& exec) { rasterize(exec, call.args(c.desc, z)); });
        call.expectReference();
      }
}

// Devices without shaderFloat64 (recent Intel GPUs, Apple's through MoltenVK, most mobile ones) get Vulkan shaders
// without doubles: the setup and the resolve in 64-bit integers. They are held to the same bounds as the double
// shaders: identical face ids, weights within kBaryTol.
TEST_P(RasterOp, FloatOnlyShadersMatchReference) {
  if (backend() != Backend::Vulkan) GTEST_SKIP() << "the float-only shaders are Vulkan's";
  for (const BackendPath& path : zbufferPaths({.float64 = true}))
    for (const RandomCase& c : randomCases()) {
      SCOPED_TRACE(c.name + path.name);
      rasterizeOnce(*path.device, c, c.desc).expectReference();
    }
}

// One scratch for every random case, starting as garbage, every call queued without waiting for the last: the first
// call (scratchCall 0) clears it; the later ones skip the clear, across the tags' wrap, so each finds earlier calls'
// tokens, and must still equal the reference. Then garbage under a call that claims a history: wrong pixels allowed,
// ids inside F and no fault; the call after it equals the reference again (the resolve clears tokens no valid history
// leaves).
TEST_P(RasterOp, ScratchCallsSkipTheClear) {
  const std::vector<RandomCase> cases = casesMostPixelsFirst();
  const std::vector<uint32_t> scratchCalls = scratchCallsAcrossTheWrap(cases.size());
  const RandomCase& first = cases.front();
  const uint32_t firstFaces = uint32_t(first.scene.faces.size() / 3), misstated = 5;
  const std::vector<uint64_t> garbage =
      garbageTokens(first.desc.pixels(), firstFaces, tokenTagOf(first.desc, misstated));
  for (bool compressible : memoryKinds())
    for (const BackendPath& path : zbufferPaths()) {
      SCOPED_TRACE(path.name + (compressible ? ", compressible memory" : ""));
      Device& on = *path.device;
      auto run = [&](const std::function<void(const Exec&)>& work) { on.run(backend(), work); };
      DeviceBuffer z = garbageScratch(on, first, first.desc, compressible);
      std::vector<RasterCall> calls;
      calls.reserve(cases.size());
      for (const RandomCase& c : cases) calls.emplace_back(on, c, compressible);
      const RasterCall wrong(on, first, compressible), again(on, first, compressible);
      auto at = [&](RasterDesc d, uint32_t call) {
        d.scratchCall = call;
        return d;
      };
      z.upload(garbage.data(), garbage.size() * 8);
      run([&](const Exec& exec) {
        for (size_t i = 0; i < cases.size(); ++i) {
          rasterize(exec, calls[i].args(at(cases[i].desc, scratchCalls[i]), z));
          exec.barrier();
        }
      });
      for (size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE(cases[i].name + ", scratch call " + std::to_string(scratchCalls[i]));
        calls[i].expectReference();
      }
      z.upload(garbage.data(), garbage.size() * 8);
      run([&](const Exec& exec) {
        rasterize(exec, wrong.args(at(first.desc, misstated), z));
        exec.barrier();
        rasterize(exec, again.args(at(first.desc, misstated + 1), z));
      });
      expectIdsInsideF(wrong.findices(), firstFaces);
      again.expectReference();
    }
}

// Every argument is checked before anything is recorded or launched.
TEST_P(RasterOp, RejectsBadArguments) {
  const RandomCase c{"bad arguments", randomScene(20), RasterDesc{16, 8}, {}, {}};
  RasterCall call(device(), c);
  DeviceBuffer z = garbageScratch(device(), c, c.desc), floats = device().allocate(ElementType::Float32, 4);
  auto expectError = [&](const std::function<void(RasterizeArgs&)>& change, const char* message) {
    RasterizeArgs args = call.args(c.desc, z);
    change(args);
    expectRejected([&](const Exec& exec) { rasterize(exec, args); }, message);
  };
  expectError([&](RasterizeArgs& a) { a.positions = floats; }, "rasterize: positions holds 4 elements");
  expectError([&](RasterizeArgs& a) { a.faceCount += 1; }, "rasterize: faces holds 60 elements, its shape needs 63");
  expectError([&](RasterizeArgs& a) { a.scratch = z.view().slice(0, 64); }, "rasterize: scratch holds 64 elements");
  expectError([&](RasterizeArgs& a) { a.findices = floats; }, "rasterize: findices holds float32");
  expectError([&](RasterizeArgs& a) { a.desc.useDepthPrior = true; }, "rasterize: depthPrior is missing");
  expectError([&](RasterizeArgs& a) { a.desc.batch = RasterBatch::Ranges; }, "rasterize: ranges is missing");
  expectError([&](RasterizeArgs& a) { a.desc.width = 0; }, "");
}

TEST_P(RasterOp, BadRangesDrawNothingOutsideTheFaces) {
  // The reference refuses these ranges; on the GPU (whose buffers the host cannot check cheaply) a range is cut at
  // the end of F and a negative start draws nothing — never a read out of bounds (validation and the checks
  // below would see it).
  // 80 faces stay in the second range (10 left some seeds with no pixel covered: an empty check).
  RandomCase c{"bad ranges", randomScene(200), RasterDesc{33, 17}, {}, {-5, 10, 120, 200}};
  c.desc.images = 2;
  c.desc.batch = RasterBatch::Ranges;
  EXPECT_THROW(rasterizeRef(c.scene.pos, c.scene.faces, c.desc, {}, c.ranges), Error);
  RasterCall r = rasterizeOnce(device(), c, c.desc);
  RandomCase clipped = c;
  clipped.ranges = {0, 0, 120, 80};
  expectSameAsReference(clipped, r.findices(), r.bary.download<float>());
}

TEST_P(RasterOp, AvatarSceneMatchesReference) {
  const char* asset = std::getenv("ARMATURE_DEFAULT_MODEL");
  BodyModel m = asset && std::filesystem::exists(asset) ? loadBodyModel(asset) : synthesizeBodyModel({0});
  // A closed mesh in perspective: the front view of the default avatar.
  RandomCase c{"avatar", {}, RasterDesc{256, 256}, {}, {}};
  c.scene.faces = m.faces;
  for (uint32_t v = 0; v < m.vertexCount; ++v) {
    double x = m.vTemplate[v * 3], y = m.vTemplate[v * 3 + 1], z = m.vTemplate[v * 3 + 2] - 2.5;
    double w = -z;  // a pinhole looking down -z
    c.scene.pos.insert(c.scene.pos.end(), {float(x * 2.2), float(-y * 2.2), float((w - 0.1) * 1.02), float(w)});
  }
  RasterCall r = rasterizeOnce(device(), c, c.desc);
  const auto ids = r.findices();
  size_t covered = 0;
  for (int32_t f : ids) covered += f != 0;
  EXPECT_GT(covered, 3000u);
  expectSameAsReference(c, ids, r.bary.download<float>());
}

// The GPU's own rasteriser (the benchmark's physical reference) draws the same visibility buffer up to edges and
// ties: on a closed mesh in perspective nearly every pixel has the same face, and barycentrics agree there. Pixel
// centres within a subpixel step of an edge may go either way (we snap vertices to 1/16 pixel, the hardware to
// finer), so the image is large enough that such pixels stay under 2% (at 203x257, 4 triangles per pixel, 4%).
TEST(RasterHardware, AgreesWithTheReferenceOnAClosedMesh) {
  ARM_REQUIRE_VULKAN(ctx);
  const char* asset = std::getenv("ARMATURE_DEFAULT_MODEL");
  BodyModel m = asset && std::filesystem::exists(asset) ? loadBodyModel(asset) : synthesizeBodyModel({0});
  const uint32_t W = 611, H = 777;
  Scene s;
  s.faces = m.faces;
  for (uint32_t v = 0; v < m.vertexCount; ++v) {
    double x = m.vTemplate[v * 3], y = m.vTemplate[v * 3 + 1], z = m.vTemplate[v * 3 + 2] - 2.5, w = -z;
    s.pos.insert(s.pos.end(), {float(x * 2.2), float(-y * 2.2), float((w - 0.1) * 1.02), float(w)});
  }
  auto ref = rasterizeRef(s.pos, s.faces, RasterDesc{W, H});
  auto pos = vk::makeStorageBuffer<float>(ctx, s.pos);
  auto faces = vk::makeStorageBuffer<int32_t>(ctx, s.faces);
  vk::Buffer ids(ctx, size_t(W) * H * 4, vk::kStorageUsage), bary(ctx, size_t(W) * H * 8, vk::kStorageUsage);
  ids.fill(nanBits());
  HardwareRasterVk hw(ctx, W, H);
  ctx.submitAndWait([&](VkCommandBuffer cmd) {
    hw.record(cmd, pos, m.vertexCount, faces, uint32_t(s.faces.size() / 3));
    hw.recordReadback(cmd, ids, bary);
  });
  auto got = ids.download<int32_t>(size_t(W) * H);
  auto b = bary.download<float>(size_t(W) * H * 2);
  size_t covered = 0, same = 0, baryOk = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    covered += ref.findices[i] != 0 || got[i] != 0;
    if (ref.findices[i] == 0 || got[i] != ref.findices[i]) continue;
    ++same;
    // The hardware interpolates from vertices snapped to its own subpixel grid (1/256 pixel on NVIDIA): on triangles
    // a few pixels across that moves barycentrics by up to ~1e-2 (lavapipe agrees to 1e-3 everywhere).
    baryOk += std::abs(b[i * 2] - ref.barycentrics[i * 3]) < 1e-2f &&
              std::abs(b[i * 2 + 1] - ref.barycentrics[i * 3 + 1]) < 1e-2f;
  }
  ASSERT_GT(covered, 3000u);
  EXPECT_GE(double(same), 0.98 * double(covered)) << same << " of " << covered << " covered pixels agree";
  EXPECT_GE(double(baryOk), 0.99 * double(same));
}

// ---- the rasteriser's backward ------------------------------------------------------------------------------

namespace {
// Scenes for the GPU backward: one view, instanced views, face ranges over shared positions, and random triangles
// (huge, degenerate, behind the eye), each with random dL/dbarycentrics; the reference's gradient beside them.
struct BackwardCase {
  std::string name;
  Scene scene;
  RasterDesc desc;
  std::vector<int32_t> ranges, findices;
  std::vector<double> gradBary, want;
};
std::vector<BackwardCase> backwardCases() {
  std::vector<BackwardCase> cases;
  cases.push_back({"one view 23x17", perspectiveGrid(1), RasterDesc{23, 17}, {}, {}, {}, {}});
  cases.push_back({"instanced 3x 31x19", perspectiveGrid(3), RasterDesc{31, 19}, {}, {}, {}, {}});
  cases.back().desc.images = 3;
  cases.push_back({"ranges 2x 29x21", perspectiveGrid(1), RasterDesc{29, 21}, {0, 40, 30, 42}, {}, {}, {}});
  cases.back().desc.images = 2, cases.back().desc.batch = RasterBatch::Ranges;
  cases.push_back({"random 64x48", randomScene(300), RasterDesc{64, 48}, {}, {}, {}, {}});
  {  // one triangle over every pixel of three 5×3 views: a subgroup spans images, the same face on other vertices
    Scene big;
    for (int image = 0; image < 3; ++image) {
      float w = 1.0f + 0.3f * float(image);
      big.pos.insert(big.pos.end(),
                     {-4 * w, -4 * w, 0.1f * w, w, 8 * w, -3 * w, 0.2f * w, w, -3 * w, 8 * w, 0.3f * w, w});
    }
    big.faces = {0, 1, 2};
    cases.push_back({"one triangle, instanced 3x 5x3", big, RasterDesc{5, 3}, {}, {}, {}, {}});
    cases.back().desc.images = 3;
  }
  for (BackwardCase& c : cases) {
    c.findices = rasterizeRef(c.scene.pos, c.scene.faces, c.desc, {}, c.ranges).findices;
    if (c.name.rfind("one triangle", 0) == 0) {  // a background pixel at an image's edge would hide the images' seam
      EXPECT_EQ(std::count(c.findices.begin(), c.findices.end(), 0), 0) << c.name << ": not every pixel covered";
    }
    c.gradBary = uniform(c.desc.pixels() * 3, -1, 1);
    for (double& g : c.gradBary) g = double(float(g));  // the GPU sees these floats
    c.want = rasterizeBackwardRef(c.scene.pos, c.scene.faces, c.desc, c.findices, c.gradBary);
  }
  return cases;
}
// Per pixel the GPU sums the same double terms in float with atomics, in any order: 1e-4 of the largest gradient.
void expectBackward(const BackwardCase& c, const std::vector<float>& got) {
  double largest = 0;
  for (double g : c.want) largest = std::max(largest, std::abs(g));
  EXPECT_GT(largest, 1e-3)
      << "no gradient reaches a vertex: the comparison proves nothing";  // (one big triangle: ~0.1)
  EXPECT_TRUE(allClose(got, c.want, Tol{1e-4 * (1 + largest), 1e-4}));
}
// The shaders of devices without doubles run the backward's chain in float. A corner's offset from the pixel centre,
// X = ndc·h + h − p (h = (size − 1)/2), then carries an absolute error of about u·M with M = |ndc·h| + |h − p| and
// u = 2^-24, and the sub-triangle areas A_k = X_i Y_j − Y_i X_j inherit u·(M_xi |Y_j| + |X_i| M_yj + M_yi |X_j| +
// |Y_i| M_xj); the pixel's gradient is relative to S = Σ_k A_k w_i w_j. So a pixel's terms are good to about u·κ
// relative, κ = Σ_k (that error bound of A_k)·w_i w_j / |S|. On slivers κ is unbounded: over 6,000 random scenes on
// lavapipe the float-only gradients differed from the reference by up to 2.8e-3 of the largest gradient (the H100
// once by 2.9e-4), against 8e-7 for the double shaders. This case keeps the pixels with κ ≤ 2^10 (u·κ ≤ 6e-5) and
// gives the others no gradient (`excluded` counts them: at most 6 of 3,072 in 10,000 random scenes). Then the worst
// over 12,000 float-only comparisons was 3.9e-5 of the largest gradient, inside the 1e-4 every backend is held to.
BackwardCase wellConditioned(const BackwardCase& c, size_t& excluded) {
  BackwardCase out = c;
  excluded = 0;
  const uint32_t W = c.desc.width, H = c.desc.height, imagePixels = W * H;
  const uint32_t vertices = vertexCountOf(c);
  const double hx = (W - 1) * 0.5, hy = (H - 1) * 0.5;
  for (size_t pix = 0; pix < c.findices.size(); ++pix) {
    const int id = c.findices[pix];
    if (id <= 0) continue;
    const uint32_t image = uint32_t(pix / imagePixels), inImage = uint32_t(pix % imagePixels);
    const size_t base = c.desc.batch == RasterBatch::Instanced ? size_t(image) * vertices : 0;
    double X[3], Y[3], w[3], Mx[3], My[3];
    for (int k = 0; k < 3; ++k) {
      const float* v = &c.scene.pos[(base + size_t(c.scene.faces[size_t(id - 1) * 3 + k])) * 4];
      const double nx = double(v[0]) / v[3], ny = double(v[1]) / v[3], ox = hx - inImage % W, oy = hy - inImage / W;
      X[k] = nx * hx + ox, Y[k] = ny * hy + oy, w[k] = v[3];
      Mx[k] = std::abs(nx * hx) + std::abs(ox), My[k] = std::abs(ny * hy) + std::abs(oy);
    }
    double S = 0, error = 0;
    for (int k = 0; k < 3; ++k) {
      const int i = (k + 1) % 3, j = (k + 2) % 3;
      S += (X[i] * Y[j] - Y[i] * X[j]) * w[i] * w[j];
      error += (Mx[i] * std::abs(Y[j]) + std::abs(X[i]) * My[j] + My[i] * std::abs(X[j]) + std::abs(Y[i]) * Mx[j]) *
               std::abs(w[i] * w[j]);
    }
    if (!(error <= 1024.0 * std::abs(S))) {
      for (int q = 0; q < 3; ++q) out.gradBary[pix * 3 + size_t(q)] = 0;
      ++excluded;
    }
  }
  out.want = rasterizeBackwardRef(c.scene.pos, c.scene.faces, c.desc, c.findices, out.gradBary);
  return out;
}
}  // namespace

TEST_P(RasterOp, BackwardMatchesReference) {
  if (backend() == Backend::Vulkan && !device().vulkan()->info().float32AtomicAdd)
    GTEST_SKIP() << "'" << device().vulkan()->info().name << "' lacks float32 atomic add";
  // Vulkan: per-face sums over a subgroup (where the device has them) or an atomic per pixel; double or float-only
  // shaders, the float-only ones on the pixels where float arithmetic is accurate (wellConditioned). CUDA: its one
  // kernel.
  for (const BackendPath& path : paths({.subgroupSums = true, .float64 = true}))
    for (const BackwardCase& all : backwardCases()) {
      Device& on = *path.device;
      const bool floatOnly = on.vulkan() && !on.vulkan()->info().float64;
      size_t excluded = 0;
      const BackwardCase c = floatOnly ? wellConditioned(all, excluded) : all;
      SCOPED_TRACE(c.name + path.name);
      EXPECT_LE(excluded * 10, c.findices.size()) << "most pixels must stay in the comparison";
      DeviceBuffer pos = on.upload(c.scene.pos), faces = on.upload(c.scene.faces), ids = on.upload(c.findices),
                   gradBary = on.upload(cast<float>(c.gradBary));
      DeviceBuffer grad = on.allocate(ElementType::Float32, c.scene.pos.size());
      grad.fill(nanBits());  // the call clears it
      on.run(backend(), [&](const Exec& exec) {
        rasterizeBackward(
            exec, {c.desc, vertexCountOf(c), uint32_t(c.scene.faces.size() / 3), pos, faces, ids, gradBary, grad});
      });
      expectBackward(c, grad.download<float>());
    }
}
