// The rasteriser's CPU reference: the fill rule, the pixel box, depth order and ties, depth peeling, exact
// quotients, and rejection of bad input and of triangles behind the eye.
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
