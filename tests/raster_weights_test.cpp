// Barycentrics: the float form's accuracy certificate, the integer form of devices without doubles, and the
// backward against finite differences.
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
