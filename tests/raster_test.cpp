// The rasteriser: the reference's fill rule, depth order, ties, depth peeling and rejection; the Vulkan and CUDA
// paths against it on fresh random scenes of awkward sizes, with NaN-poisoned outputs.
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

// Barycentrics: every backend divides exactly and starts from bit-identical screen coordinates. Vulkan resolves in
// double (devices with shaderFloat64, which lavapipe and NVIDIA have): the final rounding to float (~6e-8); without
// doubles in integers, within an ulp (IntegerWeightsOfFloatOnlyDevicesMeetTheTolerance). CUDA resolves in float where
// its error bound is under 6.9e-6, in double elsewhere (FloatWeightsAreAccurateWhereTheySaySo). 1e-5 is the issue's
// bound; plus one ulp of the weight (2^-23 relative), which exceeds 1e-5 beyond ±64, where needles put a few weights:
// two computations of such an ill-conditioned weight may round to neighbouring floats.
constexpr Tol kBaryTol{1e-5, 0x1p-23};

}  // namespace

TEST(RasterReference, NarrowTrianglesUseExact32BitEdges) {
  // The 32-bit edge functions of narrow triangles against the 64-bit ones: the same coverage and depth everywhere.
  Scene s = randomScene(3000);
  size_t checked = 0;
  for (size_t f = 0; f < 3000; ++f) {
    const float* a = &s.pos[size_t(s.faces[f * 3]) * 4];
    const float* b = &s.pos[size_t(s.faces[f * 3 + 1]) * 4];
    const float* c = &s.pos[size_t(s.faces[f * 3 + 2]) * 4];
    for (uint32_t size : {64u, 700u, 4000u}) {
      RasterTri t = rasterSetup(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], c[0], c[1], c[2], c[3], size, size);
      if (!t.valid || !t.narrow) continue;
      RasterTri wide = t;
      wide.narrow = 0;
      ++checked;
      for (int py = t.minY; py <= t.maxY; py += 1 + (t.maxY - t.minY) / 16)
        for (int px = t.minX; px <= t.maxX; px += 1 + (t.maxX - t.minX) / 16)
          ASSERT_EQ(rasterCover(t, px, py), rasterCover(wide, px, py)) << "face " << f << " at " << px << "," << py;
    }
  }
  EXPECT_GT(checked, 3000u);
}

TEST(RasterReference, PixelBoxIsTightAndHoldsEveryCoveredPixel) {
  // Every backend walks only the box: a covered pixel outside it would be lost. Scan whole images instead, and check
  // the box is no larger than the pixel centres inside the vertex bounds (each edge row/column of it holds one).
  Scene s = randomScene(1500);
  size_t covered = 0, boxes = 0;
  for (size_t f = 0; f < 1500; ++f) {
    const float* a = &s.pos[size_t(s.faces[f * 3]) * 4];
    const float* b = &s.pos[size_t(s.faces[f * 3 + 1]) * 4];
    const float* c = &s.pos[size_t(s.faces[f * 3 + 2]) * 4];
    for (uint32_t size : {1u, 7u, 64u, 97u}) {
      RasterTri t = rasterSetup(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], c[0], c[1], c[2], c[3], size, size);
      if (!t.valid) continue;
      ++boxes;
      for (int py = 0; py < int(size); ++py)
        for (int px = 0; px < int(size); ++px)
          if (rasterCover(t, px, py) != RASTER_MISS) {
            ++covered;
            ASSERT_TRUE(px >= t.minX && px <= t.maxX && py >= t.minY && py <= t.maxY)
                << "face " << f << " size " << size;
          }
      int lo = std::min({t.x0, t.x1, t.x2}), hi = std::max({t.x0, t.x1, t.x2});
      int loY = std::min({t.y0, t.y1, t.y2}), hiY = std::max({t.y0, t.y1, t.y2});
      ASSERT_TRUE(rasterCentre(t.minX) >= lo || t.minX == 0) << "face " << f;
      ASSERT_TRUE(rasterCentre(t.maxX) <= hi || t.maxX == int(size) - 1) << "face " << f;
      ASSERT_TRUE(rasterCentre(t.minY) >= loY || t.minY == 0) << "face " << f;
      ASSERT_TRUE(rasterCentre(t.maxY) <= hiY || t.maxY == int(size) - 1) << "face " << f;
      ASSERT_TRUE((t.minX == 0 || rasterCentre(t.minX - 1) < lo) &&
                  (t.maxX == int(size) - 1 || rasterCentre(t.maxX + 1) > hi))
          << "face " << f;
      ASSERT_TRUE((t.minY == 0 || rasterCentre(t.minY - 1) < loY) &&
                  (t.maxY == int(size) - 1 || rasterCentre(t.maxY + 1) > hiY))
          << "face " << f;
    }
  }
  EXPECT_GT(boxes, 1500u);
  EXPECT_GT(covered, 20000u);  // not an empty scan
}

TEST(RasterReference, SmallMaskEqualsCoverage) {
  // The GPU walks of small boxes test coverage with rasterSmallMask's stepped edges, then compute the depth only at
  // its set bits, from the stepped plane (rasterPlaneDepth) or, where that is invalid, rasterNarrowDepth: a missing
  // bit is a lost fragment, a different depth a wrong face. Tiny triangles at many sizes and offsets, edges through
  // pixel centres included (a grid of 1/8-pixel vertices); then big ones clipped to a small box at the image's
  // corners (areas beyond the plane's 2^24: the fallback).
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> coord(-40, 300), jitter(-60, 60), far(4500, 8000), near(-32, 48), inside(0, 64);
  size_t masks = 0, bits = 0, planes = 0, fallbacks = 0;
  for (int n = 0; n < 46000; ++n) {
    const uint32_t size = 256;
    const bool big = n >= 40000;
    int cx = coord(rng), cy = coord(rng);
    // Big: one vertex a few pixels inside the top-left corner, two thousands of pixels off screen, mirrored to the
    // other corners (flip): only a few corner pixels are covered.
    const int ax = inside(rng), ay = inside(rng), farB = far(rng), farC = far(rng), nearB = near(rng),
              nearC = near(rng);
    const int bigX[3] = {ax, ax - farB, ax + nearC}, bigY[3] = {ay, ay + nearB, ay - farC};
    const bool flipX = n % 2, flipY = n % 4 >= 2;
    float v[12];
    for (int k = 0; k < 3; ++k) {  // NDC of grid points: ndc = (g / 16 - 0.5 - size / 2) / ((size - 1) / 2) at w = 1
      double gx = cx * 16 + jitter(rng) * 2, gy = cy * 16 + jitter(rng) * 2;
      if (big) gx = flipX ? size * 16 - bigX[k] : bigX[k], gy = flipY ? size * 16 - bigY[k] : bigY[k];
      v[k * 4] = float((gx / 16 - 0.5 - size / 2.0) / ((size - 1) / 2.0));
      v[k * 4 + 1] = float((gy / 16 - 0.5 - size / 2.0) / ((size - 1) / 2.0));
      v[k * 4 + 2] = float(jitter(rng)) / 50.f, v[k * 4 + 3] = 1.f;  // z/w in [-1.2, 1.2]: negative levels too
    }
    RasterTri t = rasterSetup(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], size, size);
    int width = t.maxX - t.minX + 1, height = t.maxY - t.minY + 1;
    if (!t.valid || !t.narrow || width * height > RASTER_SMALL_PIXELS) continue;
    ++masks;
    RasterMask m = rasterSmallMask(t);
    RasterPlane plane = rasterPlane(t);
    ++(plane.valid ? planes : fallbacks);
    for (int q = 0; q < width * height; ++q) {
      bool bit = ((q < 32 ? m.lo >> q : m.hi >> (q - 32)) & 1u) != 0;
      bits += bit;
      int64_t level = rasterCover(t, t.minX + q % width, t.minY + q / width);
      ASSERT_EQ(bit, level != RASTER_MISS) << "triangle " << n << " pixel " << q;
      if (bit) {
        ASSERT_EQ(rasterNarrowDepth(t, t.minX + q % width, t.minY + q / width), level)
            << "triangle " << n << " pixel " << q;
        if (plane.valid) {
          ASSERT_EQ(rasterPlaneDepth(plane, q % width, q / width), level) << "triangle " << n << " pixel " << q;
        }
      }
    }
    for (int q = width * height; q < 64; ++q)
      ASSERT_EQ((q < 32 ? m.lo >> q : m.hi >> (q - 32)) & 1u, 0u) << "beyond the box";
  }
  EXPECT_GT(masks, 12000u);
  EXPECT_GT(bits, 100000u);
  EXPECT_GT(planes, 12000u);
  EXPECT_GT(fallbacks, 100u);
}

TEST(RasterReference, SharedEdgesAreCoveredExactlyOnce) {
  // A plane of 2·40² triangles filling the screen, at an angle so edges cross pixel centres irregularly, and a
  // fan around the image centre whose 64 edges all meet at a pixel centre.
  for (uint32_t W : {64u, 97u}) {
    RasterDesc d{W, 51};
    Scene g = grid(40, 0.1f);
    for (size_t v = 0; v < g.pos.size(); v += 4) g.pos[v] += 0.13f * g.pos[v + 1];  // shear
    auto count = rasterCoverageRef(g.pos, g.faces, d);
    for (size_t i = 0; i < count.size(); ++i) ASSERT_EQ(count[i], 1u) << "pixel " << i << " of " << W << "x51";
  }
  Scene fan;
  fan.pos = {0, 0, 0, 1};
  for (int k = 0; k < 64; ++k) {
    double a = 2 * M_PI * k / 64;
    fan.pos.insert(fan.pos.end(), {float(3 * std::cos(a)), float(3 * std::sin(a)), 0, 1});
    fan.faces.insert(fan.faces.end(), {0, 1 + k, 1 + (k + 1) % 64});
  }
  RasterDesc d{33, 33};  // NDC 0 lands on the centre of pixel 16: every fan edge passes through it
  auto count = rasterCoverageRef(fan.pos, fan.faces, d);
  for (size_t i = 0; i < count.size(); ++i) ASSERT_EQ(count[i], 1u) << "pixel " << i;
}

TEST(RasterReference, NearestWinsTiesGoToTheLowerFaceAndThePriorPeels) {
  // Three full-screen layers at NDC z = 0.6, -0.2, 0.3, in that face order (two triangles each).
  Scene s;
  for (float z : {0.6f, -0.2f, 0.3f}) {
    Scene g = grid(1, z);
    int base = int(s.pos.size() / 4);
    s.pos.insert(s.pos.end(), g.pos.begin(), g.pos.end());
    for (int32_t f : g.faces) s.faces.push_back(base + f);
  }
  RasterDesc d{16, 12};
  auto r = rasterizeRef(s.pos, s.faces, d);
  for (int32_t f : r.findices) ASSERT_TRUE(f == 3 || f == 4);  // layer 1 (faces 2, 3) is nearest
  // Peeling: each prior is the last layer's depth; the next layer is the one just behind it.
  std::vector<float> prior(16 * 12, -0.2f);
  d.useDepthPrior = true;
  r = rasterizeRef(s.pos, s.faces, d, prior);
  for (int32_t f : r.findices) ASSERT_TRUE(f == 5 || f == 6) << "face " << f;
  std::fill(prior.begin(), prior.end(), 0.3f);
  r = rasterizeRef(s.pos, s.faces, d, prior);
  for (int32_t f : r.findices) ASSERT_TRUE(f == 1 || f == 2);
  std::fill(prior.begin(), prior.end(), 0.6f);
  r = rasterizeRef(s.pos, s.faces, d, prior);
  for (int32_t f : r.findices) ASSERT_EQ(f, 0);
  // Equal depth: the same layer twice; the lower face index wins everywhere.
  Scene twice = grid(1, 0.f);
  twice.pos.insert(twice.pos.end(), twice.pos.begin(), twice.pos.end());
  twice.faces = {4, 5, 7, 4, 7, 6, 0, 1, 3, 0, 3, 2};
  r = rasterizeRef(twice.pos, twice.faces, RasterDesc{8, 8});
  for (int32_t f : r.findices) ASSERT_TRUE(f == 1 || f == 2);
}

// rasterQuotient replaces the per-fragment 64-bit division: it must equal C's truncating division exactly, for
// the numerators a fragment can produce (|num| < 2^63, |num / den| < 2^28) and far beyond the estimate's range.
TEST(RasterReference, QuotientEqualsIntegerDivision) {
  std::mt19937_64& gen = rng();
  size_t checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    int64_t den = int64_t(gen() >> (1 + gen() % 62)) + 1;  // 1 … 2^63
    int64_t quotientScale = int64_t(1) << (gen() % 29);    // |quotient| up to 2^28
    __int128 wide = (__int128)den * (__int128)(int64_t(gen() % uint64_t(quotientScale)) - quotientScale / 2) +
                    (__int128)(int64_t(gen() % uint64_t(den)));
    if (wide > INT64_MAX || wide < INT64_MIN) continue;
    int64_t num = int64_t(wide);
    if (i % 3 == 0) num = int64_t(gen());  // any numerator: the fallback path
    ASSERT_EQ(rasterQuotient(num, den, 1.0 / double(den)), num / den) << num << " / " << den;
    ++checked;
  }
  EXPECT_GT(checked, 1000000u);
  for (int64_t num : {int64_t(0), int64_t(-1), int64_t(1), int64_t(-7), int64_t(7), INT64_MAX, INT64_MIN + 1})
    for (int64_t den : {int64_t(1), int64_t(2), int64_t(3), int64_t(7), INT64_MAX})
      EXPECT_EQ(rasterQuotient(num, den, 1.0 / double(den)), num / den) << num << " / " << den;
  // The narrow form over its whole range: den < 2^29, |quotient| < 2^27, remainders of either sign, poor estimates.
  for (int i = 0; i < 2000000; ++i) {
    int den = int(gen() % ((uint64_t(1) << (1 + gen() % 29)) - 1)) + 1;
    int64_t q = int64_t(gen() % (uint64_t(1) << 28)) - (int64_t(1) << 27);
    int64_t num = q * den + int64_t(gen() % uint64_t(den)) * (q < 0 ? -1 : 1);
    if (i % 7 == 0) num = q * den;                                                     // exact multiples
    double inverse = i % 5 == 0 ? 1.0 / double(den) * (1 + 1e-4) : 1.0 / double(den);  // a poor estimate: the fallback
    ASSERT_EQ(rasterQuotientNarrow(num, den, inverse), num / den) << num << " / " << den;
  }
}

namespace {
// A 6×6 grid over NDC [-1.2, 1.2]², each vertex jittered and at its own w in [0.8, 1.6] (so the perspective weights
// matter), repeated for `images` instanced views (each moved a little).
Scene perspectiveGrid(uint32_t images) {
  Scene base = grid(6, 0.2f);
  auto u = uniform(base.pos.size(), -1, 1);
  Scene s;
  s.faces = base.faces;
  for (uint32_t image = 0; image < images; ++image)
    for (size_t v = 0; v < base.pos.size(); v += 4) {
      float w = float(1.2 + 0.4 * u[v + 3]), x = base.pos[v] + 0.1f * float(u[v]) + 0.05f * float(image),
            y = base.pos[v + 1] + 0.1f * float(u[v + 1]), z = float(0.5 * u[v + 2]);
      s.pos.insert(s.pos.end(), {x * w, y * w, z * w, w});
    }
  return s;
}
// Small triangles: corners within `reach` NDC units of a random centre, at random depths and w.
Scene smallTriangleScene(size_t triangles, double reach) {
  Scene s;
  auto u = uniform(triangles * 14, 0, 1);
  for (size_t t = 0; t < triangles; ++t) {
    const double* r = &u[t * 14];
    const double cx = r[0] * 1.8 - 0.9, cy = r[1] * 1.8 - 0.9;
    for (int k = 0; k < 3; ++k) {
      const float w = float(0.5 + r[2 + k]), z = float(1.6 * r[5 + k] - 0.8);
      const double x = cx + reach * (2 * r[8 + k] - 1), y = cy + reach * (2 * r[11 + k] - 1);
      s.pos.insert(s.pos.end(), {float(x) * w, float(y) * w, z * w, w});
    }
    s.faces.insert(s.faces.end(), {int(3 * t), int(3 * t + 1), int(3 * t + 2)});
  }
  return s;
}
// Needles: triangles 1–4 pixels wide and up to 1,800 long (at 2048 pixels across) at random angles, depths and corner
// w, so that barycentrics are ill-conditioned: the float weights must fall back to double on their pixels.
Scene sliverScene(size_t triangles) {
  Scene s;
  auto u = uniform(triangles * 8, 0, 1);
  for (size_t t = 0; t < triangles; ++t) {
    const double* r = &u[t * 8];
    const double cx = r[0] * 1.6 - 0.8, cy = r[1] * 1.6 - 0.8, angle = r[2] * 6.2832, length = 0.6 + 1.2 * r[3];
    const double width = 0.001 + 0.003 * r[4], dx = std::cos(angle), dy = std::sin(angle);
    const double corners[3][2] = {{cx - dx * length / 2 - dy * width / 2, cy - dy * length / 2 + dx * width / 2},
                                  {cx + dx * length / 2, cy + dy * length / 2},
                                  {cx - dx * length / 2 + dy * width / 2, cy - dy * length / 2 - dx * width / 2}};
    for (int k = 0; k < 3; ++k) {
      const float w = float(0.5 + 2.5 * r[5 + k]), z = float(0.8 * r[(5 + k + 1) % 8] - 0.4);
      s.pos.insert(s.pos.end(), {float(corners[k][0]) * w, float(corners[k][1]) * w, z * w, w});
    }
    s.faces.insert(s.faces.end(), {int(3 * t), int(3 * t + 1), int(3 * t + 2)});
  }
  return s;
}

// The CUDA resolve's float weights (rasterPerspectiveWeightsFloat) on every covered pixel of a scene, against the
// reference's double barycentrics: how many pixels say they are not accurate, the largest error where they say they
// are, and the largest error of the float form regardless (what the fallback prevents).
struct FloatWeightsCheck {
  size_t covered = 0, fallback = 0;
  double accurateError = 0, unguardedError = 0;
  double integerError = 0;  // float-only devices' weights (rasterPerspectiveWeightsInteger), in float ulps
};
FloatWeightsCheck checkFloatWeights(const Scene& s, const RasterDesc& d) {
  const RasterResult ref = rasterizeRef(s.pos, s.faces, d);
  FloatWeightsCheck c;
  for (size_t pix = 0; pix < ref.findices.size(); ++pix) {
    if (ref.findices[pix] <= 0) continue;
    float nx[3], ny[3], w[3];
    for (size_t k = 0; k < 3; ++k) {
      const float* v = &s.pos[size_t(s.faces[size_t(ref.findices[pix] - 1) * 3 + k]) * 4];
      nx[k] = rasterDivide(v[0], v[3]), ny[k] = rasterDivide(v[1], v[3]), w[k] = v[3];
    }
    const RasterFloatWeights f =
        rasterPerspectiveWeightsFloat(nx[0], ny[0], w[0], nx[1], ny[1], w[1], nx[2], ny[2], w[2],
                                      uint32_t(pix % d.width), uint32_t(pix / d.width), d.width, d.height);
    double error = 0;
    const float got[3] = {f.b0, f.b1, f.b2};
    for (size_t k = 0; k < 3; ++k)
      error = std::max(error, std::abs(double(got[k]) - double(ref.barycentrics[pix * 3 + k])));
    ++c.covered;
    c.unguardedError = std::max(c.unguardedError, error);
    if (f.accurate)
      c.accurateError = std::max(c.accurateError, error);
    else
      ++c.fallback;
    const RasterWeights integer =
        rasterPerspectiveWeightsInteger(nx[0], ny[0], w[0], nx[1], ny[1], w[1], nx[2], ny[2], w[2],
                                        uint32_t(pix % d.width), uint32_t(pix / d.width), d.width, d.height);
    const double integerGot[3] = {integer.b0, integer.b1, integer.b2};
    for (size_t k = 0; k < 3; ++k) {
      const float want = ref.barycentrics[pix * 3 + k];
      const double ulp = std::max(double(std::nextafter(std::abs(want), INFINITY) - std::abs(want)), 1e-45);
      c.integerError = std::max(c.integerError, std::abs(integerGot[k] - double(want)) / ulp);
    }
  }
  return c;
}
}  // namespace

// Where the float weights say they are accurate they are within their stated 6.9e-6 of the reference (plus the
// reference's own rounding to float, 6e-8); on needles the unguarded float form is not, so the test can fail.
// A well-conditioned mesh takes the float form everywhere; random scenes, whose huge thin triangles cover every
// pixel, fall back on 0.1–2.5% of their pixels (seeds 1–8).
TEST(RasterReference, FloatWeightsAreAccurateWhereTheySaySo) {
  const FloatWeightsCheck needles = checkFloatWeights(sliverScene(150), RasterDesc{2048, 48});
  EXPECT_GT(needles.covered, 1000u);
  EXPECT_LE(needles.accurateError, 7e-6);
  EXPECT_GT(needles.fallback, 0u);
  EXPECT_GT(needles.unguardedError, 1e-5) << "the needles should need the fallback";
  for (const auto& [name, scene, desc, share] :
       {std::tuple{"perspective grid", perspectiveGrid(1), RasterDesc{203, 157}, 0.001},
        std::tuple{"random", randomScene(2000), RasterDesc{640, 480}, 0.1}}) {
    SCOPED_TRACE(name);
    const FloatWeightsCheck c = checkFloatWeights(scene, desc);
    EXPECT_GT(c.covered, 10000u);
    EXPECT_LE(c.accurateError, 7e-6);
    EXPECT_LE(double(c.fallback), share * double(c.covered))
        << c.fallback << " of " << c.covered << " pixels fall back";
  }
}

// Devices without doubles resolve in integers: within one float ulp of the reference's weights everywhere, the
// needles included, where the float form is off by more than 1e-5 (a weight there can reach -128, whose ulp is
// 1.5e-5). Pairs of floats with error-free sums did as well here but lost their low parts on NVIDIA's Vulkan compiler.
TEST(RasterReference, IntegerWeightsOfFloatOnlyDevicesMeetTheTolerance) {
  for (const auto& [name, scene, desc] : {std::tuple{"needles", sliverScene(150), RasterDesc{2048, 48}},
                                          std::tuple{"perspective grid", perspectiveGrid(1), RasterDesc{203, 157}},
                                          std::tuple{"random", randomScene(2000), RasterDesc{640, 480}},
                                          std::tuple{"random 4097x3", randomScene(500), RasterDesc{4097, 3}}}) {
    SCOPED_TRACE(name);
    const FloatWeightsCheck c = checkFloatWeights(scene, desc);
    EXPECT_GT(c.covered, 1000u);
    EXPECT_LE(c.integerError, 1.0) << "float ulps";
  }
}

// The rasteriser's backward against central differences of the barycentrics (faces held fixed) in x, y, z and w of
// every vertex: one view, and two instanced views.
TEST(RasterReference, BackwardMatchesFiniteDifferences) {
  for (uint32_t images : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(images) + " images");
    Scene s = perspectiveGrid(images);
    RasterDesc d{23, 17};
    d.images = images;
    RasterResult r = rasterizeRef(s.pos, s.faces, d);
    auto g = uniform(d.pixels() * 3, -1, 1);
    auto grad = rasterizeBackwardRef(s.pos, s.faces, d, r.findices, g);
    ASSERT_EQ(grad.size(), s.pos.size());
    std::vector<double> p(s.pos.begin(), s.pos.end());
    const double h = 1e-6;
    size_t moving = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      auto q = p;
      q[i] += h;
      double up = barycentricLoss(q, s.faces, d, r.findices, g);
      q[i] -= 2 * h;
      double fd = (up - barycentricLoss(q, s.faces, d, r.findices, g)) / (2 * h);
      EXPECT_NEAR(grad[i], fd, 1e-5 * (1 + std::abs(fd))) << "coordinate " << i % 4 << " of vertex " << i / 4;
      if (i % 4 == 2) {
        EXPECT_EQ(grad[i], 0.0) << "z moves no barycentric";
      }
      moving += std::abs(grad[i]) > 1e-3;
    }
    EXPECT_GT(moving, p.size() / 3) << "too few vertices reach a pixel: the check proves little";
  }
  // Shapes are checked.
  Scene s = perspectiveGrid(1);
  RasterDesc d{23, 17};
  RasterResult r = rasterizeRef(s.pos, s.faces, d);
  EXPECT_THROW(rasterizeBackwardRef(s.pos, s.faces, d, r.findices, std::vector<double>(5)), Error);
}

TEST(RasterReference, RejectsBadInputAndTrianglesBehindTheEye) {
  Scene g = grid(2, 0.f);
  g.faces[4] = 9;  // 9 vertices: out of range
  EXPECT_THROW(rasterizeRef(g.pos, g.faces, RasterDesc{8, 8}), Error);
  g = grid(2, 0.f);
  EXPECT_THROW(rasterizeRef(g.pos, g.faces, RasterDesc{0, 8}), Error);
  EXPECT_THROW(rasterizeRef(g.pos, g.faces, RasterDesc{8, 8, true}), Error);  // prior missing
  Scene behind;
  behind.pos = {-1, -1, 0, 1, 1, -1, 0, 1, 0, 1, 0, -0.5f};
  behind.faces = {0, 1, 2};
  auto r = rasterizeRef(behind.pos, behind.faces, RasterDesc{8, 8});
  for (int32_t f : r.findices) EXPECT_EQ(f, 0);
  // The guard band: a vertex 4096 pixels beyond an 8192-pixel image is still drawn, one further is rejected.
  Scene far;
  far.pos = {-1, -1, 0, 1, 1, -1, 0, 1, 0, 1, 0, 1};
  far.faces = {0, 1, 2};
  for (auto [x, drawn] : {std::pair{1.99f, true}, std::pair{2.01f, false}}) {
    far.pos[4] = x;  // x = 2 lands 4096 pixels right of the last column at width 8192
    r = rasterizeRef(far.pos, far.faces, RasterDesc{8192, 2});
    size_t covered = 0;
    for (int32_t f : r.findices) covered += f != 0;
    EXPECT_EQ(covered > 0, drawn) << "x = " << x;
  }
  // Perspective-correct barycentrics: at a pixel centre they reproduce the vertex attribute of a 3-D point.
  Scene one;
  one.pos = {-2, -2, 0, 2, 1, -1, 0, 1, -1, 1, 0, 1};
  one.faces = {0, 1, 2};
  r = rasterizeRef(one.pos, one.faces, RasterDesc{9, 9});
  size_t covered = 0;
  for (size_t i = 0; i < r.findices.size(); ++i)
    if (r.findices[i]) {
      ++covered;
      float sum = r.barycentrics[i * 3] + r.barycentrics[i * 3 + 1] + r.barycentrics[i * 3 + 2];
      EXPECT_NEAR(sum, 1.f, 1e-6);
    }
  EXPECT_GT(covered, 10u);
}

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
    c.name += " small<=64", c.desc.smallTrianglePixels = 64;
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
    c.desc.queueCapacity = 40;
    cases.push_back(std::move(c));
  }
  {  // 8,000 boxes of 9-400 pixels, one chunk each, and room for 2,000 entries: the queue fills up while ~125
     // workgroups reserve at once, so the entry and record counters' orders differ at its end (a slot reserved
     // whose triangle's record did not fit must still be written; the scratch starts as garbage, not zeros)
    RandomCase c{"racing overflow 256x256", smallTriangleScene(8000, 0.07), RasterDesc{256, 256}, {}, {}};
    c.desc.queueCapacity = 2000, c.desc.smallTrianglePixels = 8;
    cases.push_back(std::move(c));
  }
  {  // 200 triangles stacked on one 8×8-pixel box at random depths, ~36 fragments each: every pixel's nearest of
     // ~100, and CUDA's shared fragment list of a block nearly full (64 boxes of 64 pixels, about half covered)
    RandomCase c{"stacked 8x8 boxes 16x16", {}, RasterDesc{16, 16}, {}, {}};
    c.desc.smallTrianglePixels = 64;
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
            bary};
  }
  std::vector<int32_t> findices() const { return ids.download<int32_t>(); }
  void expectReference() const { expectSameAsReference(c, findices(), bary.download<float>()); }
};

// A fresh scratch of garbage for `d`, in compressible memory where asked.
DeviceBuffer garbageScratch(Device& device, const RasterDesc& d, bool compressible = false) {
  DeviceBuffer z = compressible ? device.allocateCompressible(ElementType::Byte, rasterScratchBytes(d))
                                : device.allocate(ElementType::Byte, rasterScratchBytes(d));
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
  // The z-buffer paths this backend has: Vulkan's 64-bit atomics where the device has them, and its two 32-bit passes
  // (RasterDesc::noInt64Atomics); CUDA's one.
  std::vector<bool> zbufferPaths() {
    if (backend() == Backend::Vulkan) return {false, true};
    return {false};
  }
  // Plain memory, and for CUDA compressible memory where the device grants it (compute capability 8.0+; Vulkan
  // cannot bind it).
  std::vector<bool> memoryKinds() {
    const bool granted = backend() == Backend::Cuda && device().allocateCompressible(ElementType::Byte, 4).compressed();
    return granted ? std::vector<bool>{false, true} : std::vector<bool>{false};
  }
  // One call on a fresh scratch of garbage, run to completion.
  RasterCall rasterizeOnce(const RandomCase& c, const RasterDesc& d) {
    RasterCall call(device(), c);
    DeviceBuffer z = garbageScratch(device(), d);
    run([&](const Exec& exec) { rasterize(exec, call.args(d, z)); });
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
    for (bool noInt64Atomics : zbufferPaths())
      for (const RandomCase& c : randomCases()) {
        SCOPED_TRACE(c.name + (noInt64Atomics ? ", 32-bit z-buffer" : "") +
                     (compressible ? ", compressible memory" : ""));
        RasterDesc d = c.desc;
        d.noInt64Atomics = noInt64Atomics;
        RasterCall call(device(), c, compressible);
        DeviceBuffer z = garbageScratch(device(), d, compressible);
        run([&](const Exec& exec) { rasterize(exec, call.args(d, z)); });
        call.expectReference();
      }
}

// Devices without shaderFloat64 (recent Intel GPUs, Apple's through MoltenVK, most mobile ones) get Vulkan shaders
// without doubles: the setup and the resolve in 64-bit integers. They are held to the same bounds as the double
// shaders: identical face ids, weights within kBaryTol.
TEST_P(RasterOp, FloatOnlyShadersMatchReference) {
  if (backend() != Backend::Vulkan) GTEST_SKIP() << "the float-only shaders are Vulkan's";
  for (bool noInt64Atomics : zbufferPaths())
    for (const RandomCase& c : randomCases()) {
      SCOPED_TRACE(c.name + (noInt64Atomics ? ", 32-bit z-buffer" : ""));
      RasterDesc d = c.desc;
      d.noInt64Atomics = noInt64Atomics, d.noFloat64 = true;
      rasterizeOnce(c, d).expectReference();
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
    for (bool noInt64Atomics : zbufferPaths()) {
      SCOPED_TRACE(std::string(noInt64Atomics ? "32-bit z-buffer" : "") +
                   (compressible ? ", compressible memory" : ""));
      DeviceBuffer z = garbageScratch(device(), first.desc, compressible);
      std::vector<RasterCall> calls;
      calls.reserve(cases.size());
      for (const RandomCase& c : cases) calls.emplace_back(device(), c, compressible);
      const RasterCall wrong(device(), first, compressible), again(device(), first, compressible);
      auto at = [&](RasterDesc d, uint32_t call) {
        d.scratchCall = call, d.noInt64Atomics = noInt64Atomics;
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
  DeviceBuffer z = garbageScratch(device(), c.desc), floats = device().allocate(ElementType::Float32, 4);
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

TEST_P(RasterOp, BadRangesDrawNothingOutsideTheFaces) {
  // The reference refuses these ranges; on the GPU (whose buffers the host cannot check cheaply) a range is cut at
  // the end of F and a negative start draws nothing — never a read out of bounds (validation and the checks
  // below would see it).
  // 80 faces stay in the second range (10 left some seeds with no pixel covered: an empty check).
  RandomCase c{"bad ranges", randomScene(200), RasterDesc{33, 17}, {}, {-5, 10, 120, 200}};
  c.desc.images = 2;
  c.desc.batch = RasterBatch::Ranges;
  EXPECT_THROW(rasterizeRef(c.scene.pos, c.scene.faces, c.desc, {}, c.ranges), Error);
  RasterCall r = rasterizeOnce(c, c.desc);
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
  RasterCall r = rasterizeOnce(c, c.desc);
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
  // kernel (the knobs are Vulkan's).
  const std::vector<bool> vulkanKnobs =
      backend() == Backend::Vulkan ? std::vector<bool>{false, true} : std::vector<bool>{false};
  for (bool noFloat64 : vulkanKnobs)
    for (bool noSubgroupSums : vulkanKnobs)
      for (const BackwardCase& all : backwardCases()) {
        size_t excluded = 0;
        const BackwardCase c = noFloat64 ? wellConditioned(all, excluded) : all;
        SCOPED_TRACE(c.name + (noSubgroupSums ? ", an atomic per pixel" : "") + (noFloat64 ? ", float-only" : ""));
        EXPECT_LE(excluded * 10, c.findices.size()) << "most pixels must stay in the comparison";
        RasterDesc d = c.desc;
        d.noSubgroupSums = noSubgroupSums, d.noFloat64 = noFloat64;
        DeviceBuffer pos = device().upload(c.scene.pos), faces = device().upload(c.scene.faces),
                     ids = device().upload(c.findices), gradBary = device().upload(cast<float>(c.gradBary));
        DeviceBuffer grad = device().allocate(ElementType::Float32, c.scene.pos.size());
        grad.fill(nanBits());  // the call clears it
        run([&](const Exec& exec) {
          rasterizeBackward(exec,
                            {d, vertexCountOf(c), uint32_t(c.scene.faces.size() / 3), pos, faces, ids, gradBary, grad});
        });
        expectBackward(c, grad.download<float>());
      }
}
