// Texture baking (armature/ops/texture_bake.h): the atlas, the samples' known answers, a reference bake that gets
// back what the views show, and the GPU bake against the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "app/box.h"
#include "armature/ops/project.h"
#include "armature/ops/texture_bake.h"
#include "support/body_fixtures.h"
#include "support/vk_test_env.h"

namespace armature {
namespace {

using test::allClose;
using test::cast;
using test::Tol;

// The default avatar in its rest pose: positions (V,3) as floats, and its box.
struct Avatar {
  std::vector<float> positions;
  std::vector<int32_t> faces;
  float lo[3], hi[3];
  uint32_t vertices() const { return uint32_t(positions.size() / 3); }
  uint32_t faceCount() const { return uint32_t(faces.size() / 3); }
};
const Avatar& avatar() {
  static const Avatar a = [] {
    const BodyModel& m = test::defaultAvatar();
    Avatar out;
    out.positions = cast<float>(m.vTemplate);
    out.faces = m.faces;
    app::boxOf(out.positions, out.lo, out.hi);
    return out;
  }();
  return a;
}

// The views of a mesh on the CPU: the reference rasteriser's faces and barycentrics, and per-vertex attributes
// (N,C) interpolated.
struct Views {
  std::vector<int32_t> faces;
  std::vector<double> bary, images;
};
Views renderRef(const BakeDesc& d, const std::vector<float>& positions, const std::vector<int32_t>& faces,
                const std::vector<float>& matrices, const std::vector<double>& attributes, uint32_t channels) {
  const std::vector<double> clip = projectRef({d.views, d.vertexCount, false}, cast<double>(positions), matrices);
  RasterDesc raster{d.width, d.height};
  raster.images = d.views;
  RasterResult r = rasterizeRef(cast<float>(clip), faces, raster);
  Views v{r.findices, cast<double>(r.barycentrics), {}};
  v.images = interpolateRef(attributes, channels, v.faces, v.bary, faces);
  return v;
}

// ---- The atlas ---------------------------------------------------------------------------------------------------

TEST(UvAtlas, ChartsAreUndistortedDisjointAndInside) {
  const Avatar& a = avatar();
  const uint32_t size = 1024;
  const UvAtlas atlas = makeUvAtlas(a.positions, a.faces, size);
  ASSERT_EQ(atlas.uvs.size(), a.faces.size() * 2);
  for (float x : atlas.uvs) ASSERT_TRUE(x >= 0 && x <= 1) << x;
  // Every face keeps its shape at one scale: UV area = 3D area · (texelsPerUnit / size)².
  const double scale = atlas.texelsPerUnit / size;
  size_t checked = 0;
  for (size_t f = 0; f < a.faceCount(); ++f) {
    double e[2][3];
    for (int k = 0; k < 3; ++k)
      e[0][k] =
          a.positions[size_t(a.faces[f * 3 + 1]) * 3 + size_t(k)] - a.positions[size_t(a.faces[f * 3]) * 3 + size_t(k)],
      e[1][k] =
          a.positions[size_t(a.faces[f * 3 + 2]) * 3 + size_t(k)] - a.positions[size_t(a.faces[f * 3]) * 3 + size_t(k)];
    const double cx = e[0][1] * e[1][2] - e[0][2] * e[1][1], cy = e[0][2] * e[1][0] - e[0][0] * e[1][2],
                 cz = e[0][0] * e[1][1] - e[0][1] * e[1][0], area3 = 0.5 * std::sqrt(cx * cx + cy * cy + cz * cz);
    const float* uv = &atlas.uvs[f * 6];
    const double areaUv = 0.5 * std::abs((uv[2] - uv[0]) * (uv[5] - uv[1]) - (uv[4] - uv[0]) * (uv[3] - uv[1]));
    if (area3 * scale * scale * size * size < 4) continue;  // under 4 texels: float rounding of the uvs dominates
    EXPECT_NEAR(areaUv, area3 * scale * scale, 1e-3 * area3 * scale * scale) << "face " << f;
    ++checked;
  }
  EXPECT_GT(checked, a.faceCount() / 2);
  // No texel centre lies in two charts, and the charts fill a fair share of the square.
  const AtlasRaster r = atlasRaster(atlas);
  const std::vector<uint32_t> coverage = rasterCoverageRef(r.positions, r.faces, r.desc);
  size_t covered = 0;
  for (uint32_t c : coverage) {
    ASSERT_LE(c, 1u);
    covered += c;
  }
  // Pairs of faces waste half their boxes, and the gutters much of the rest at this density (10k charts).
  EXPECT_GT(double(covered) / coverage.size(), 0.25);
}

TEST(UvAtlas, BadInputIsNamed) {
  const Avatar& a = avatar();
  std::vector<int32_t> faces = a.faces;
  faces[7] = int32_t(a.vertices());
  EXPECT_THROW(makeUvAtlas(a.positions, faces, 256), Error);
  EXPECT_THROW(makeUvAtlas(a.positions, a.faces, 0), Error);
  try {
    makeUvAtlas(a.positions, a.faces, 64);  // 10k charts with gutters cannot fit 64²
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos) << e.what();
  }
}

// ---- Samples: known answers -----------------------------------------------------------------------------------------

// An orthographic view turned by `yaw` about y: clip = (s·x', s·y', 0.5 − 0.1·z', 1), (x', y', z') the point in
// the camera's frame, which looks down its −z'.
std::vector<float> orthoView(double yaw, double s) {
  const double c = std::cos(yaw), n = std::sin(yaw);
  const double rows[4][4] = {{s * c, 0, s * n, 0}, {0, s, 0, 0}, {0.1 * n, 0, -0.1 * c, 0.5}, {0, 0, 0, 1}};
  std::vector<float> m;
  for (int column = 0; column < 4; ++column)
    for (int row = 0; row < 4; ++row) m.push_back(float(rows[row][column]));
  return m;
}

TEST(BakeSamplesRef, KnownAnswers) {
  // A square at z = 0 facing +z and a smaller one behind it at z = −0.5; views from the front, turned 60°, and from
  // behind.
  const std::vector<float> positions = {-1,   -1,   0,    1,   -1,   0,    1,   1,   0,    -1,   1,   0,
                                        -.6f, -.6f, -.5f, .6f, -.6f, -.5f, .6f, .6f, -.5f, -.6f, .6f, -.5f};
  const std::vector<int32_t> faces = {0, 1, 2, 0, 2, 3, 4, 5, 6, 4, 6, 7};
  std::vector<float> matrices;
  for (double yaw : {0.0, std::numbers::pi / 3, std::numbers::pi}) {
    const auto m = orthoView(yaw, 0.5);
    matrices.insert(matrices.end(), m.begin(), m.end());
  }
  BakeDesc d;
  d.views = 3, d.width = d.height = 64, d.vertexCount = 8, d.faceCount = 4;
  // Texels: p = (0.1, −0.4, 0) on the front square; on no face; on a face id past F; p = (0, 0, −0.5) on the back
  // square.
  const std::vector<int32_t> texelFaces = {1, 0, 5, 3};
  const std::vector<double> texelBary = {0.45, 0.25, 0.3, 0, 0, 0, 1, 0, 0, 0.5, 0, 0.5};
  d.texels = 4;
  const Views v = renderRef(d, positions, faces, matrices, std::vector<double>(8, 1.0), 1);
  auto samples = [&](const BakeDesc& desc) {
    return bakeSamplesRef(desc, cast<double>(positions), faces, texelFaces, texelBary, v.faces, v.bary, matrices);
  };
  const BakeSamplesRef s = samples(d);
  // The front square's texel: head on (cos 1, weight 1) and at 60° (cos ½, weight ¼), normalised; hidden from behind.
  const double x1 = 0.5 * (0.5 * 0.1 * std::cos(std::numbers::pi / 3) + 1), y = 0.5 * (0.5 * -0.4 + 1);
  const std::vector<double> locations = {0.5 * (0.5 * 0.1 + 1), y, x1, y, -1, -1};
  // (The matrices are float: 1e-7.)
  EXPECT_TRUE(allClose(std::vector<double>(s.locations.begin(), s.locations.begin() + 6), locations, Tol{1e-7, 0}));
  EXPECT_TRUE(allClose(std::vector<double>(s.weights.begin(), s.weights.begin() + 3), std::vector<double>{0.8, 0.2, 0},
                       Tol{1e-7, 0}));
  // No face and a face past F: nothing; the back square: only the view from behind sees it.
  EXPECT_TRUE(allClose(std::vector<double>(s.weights.begin() + 3, s.weights.end()),
                       std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 1}, Tol{1e-7, 0}));
  for (size_t i = 6; i < 18; ++i) EXPECT_EQ(s.locations[i], -1) << i;
  EXPECT_NEAR(s.locations[22], 0.5, 1e-7);
  // Views more oblique than minCosine drop out; sharpness 0 weighs every view that counts alike.
  BakeDesc strict = d;
  strict.minCosine = 0.6f;
  EXPECT_NEAR(samples(strict).weights[0], 1.0, 1e-7);
  BakeDesc flat = d;
  flat.sharpness = 0;
  EXPECT_NEAR(samples(flat).weights[0], 0.5, 1e-7);
  // A tolerance below the gap's 0.5 still sees through nothing; one above it lets the hidden view count.
  BakeDesc loose = d;
  loose.tolerance = 0.6f;
  EXPECT_GT(samples(loose).weights[2], 0.0);
}

// ---- The reference bake ---------------------------------------------------------------------------------------------

// Colours that vary linearly over the avatar (its position, scaled into [0, 1]) and a coverage channel of 1.
std::vector<double> positionColours(const Avatar& a) {
  std::vector<double> c;
  for (uint32_t v = 0; v < a.vertices(); ++v) {
    for (int k = 0; k < 3; ++k) c.push_back((a.positions[size_t(v) * 3 + size_t(k)] - a.lo[k]) / (a.hi[k] - a.lo[k]));
    c.push_back(1.0);
  }
  return c;
}

TEST(TextureBakeRef, RecoversWhatTheViewsShow) {
  const Avatar& a = avatar();
  const uint32_t size = 1024, C = 4;
  const UvAtlas atlas = makeUvAtlas(a.positions, a.faces, size);
  const AtlasRaster ar = atlasRaster(atlas);
  const RasterResult texels = rasterizeRef(ar.positions, ar.faces, ar.desc);
  BakeDesc d;
  d.texels = size * size, d.views = 6, d.width = 320, d.height = 320;
  d.vertexCount = a.vertices(), d.faceCount = a.faceCount();
  const std::vector<float> matrices = bakeRingCameras(d.views, a.lo, a.hi);
  const std::vector<double> colours = positionColours(a);
  const Views v = renderRef(d, a.positions, a.faces, matrices, colours, C);
  const BakeSamplesRef s = bakeSamplesRef(d, cast<double>(a.positions), a.faces, texels.findices,
                                          cast<double>(texels.barycentrics), v.faces, v.bary, matrices);
  const std::vector<double> texture =
      deformableAggregationRef({bakeAggregationSizes(d, C), bakeViewLayout(d), v.images, s.locations, s.weights});
  const std::vector<float> finished = finishTexture(cast<float>(texture), size, C, 0);
  // Where some view sees a texel, its colour is what the avatar has there (its face's colours at its barycentrics).
  const std::vector<double> truth =
      interpolateRef(colours, C, texels.findices, cast<double>(texels.barycentrics), a.faces);
  std::vector<double> errors;
  size_t onMesh = 0;
  for (size_t t = 0; t < d.texels; ++t) {
    if (!texels.findices[t]) continue;
    ++onMesh;
    if (finished[t * C + 3] != 1.0f) continue;
    double worst = 0;
    for (uint32_t c = 0; c < 3; ++c) worst = std::max(worst, std::abs(finished[t * C + c] - truth[t * C + c]));
    errors.push_back(worst);
  }
  std::sort(errors.begin(), errors.end());
  const double seen = double(errors.size()) / onMesh, median = errors[errors.size() / 2],
               p99 = errors[errors.size() * 99 / 100];
  // The colours span [0, 1] over the avatar's ~1.7 m, so 1e-3 is ~2 mm, a third of a view's pixel: what is left is
  // the bilinear sampling of a linear colour over a curved, perspective surface. Texels no view sees squarely
  // enough, or only next to an occluder's edge, are left empty (the soles, the armpits, between the legs).
  EXPECT_GT(seen, 0.9) << "median error " << median << ", p99 " << p99 << ", max " << errors.back();
  EXPECT_LT(median, 2e-3);
  EXPECT_LT(p99, 2.5e-2);
  EXPECT_LT(errors.back(), 0.15);
}

// ---- The GPU bake -----------------------------------------------------------------------------------------------

class TextureBakeGpu : public test::OnBackend {};

TEST_P(TextureBakeGpu, MatchesTheReference) {
  Avatar a = avatar();
  // Fresh inputs: the avatar moved by a random offset, random colours; awkward sizes.
  const std::vector<double> offset = test::uniform(3, -0.5, 0.5);
  for (size_t i = 0; i < a.positions.size(); ++i) a.positions[i] += float(offset[i % 3]);
  for (int k = 0; k < 3; ++k) a.lo[k] += float(offset[size_t(k)]), a.hi[k] += float(offset[size_t(k)]);
  const uint32_t size = 600, C = 3, N = a.vertices();
  std::vector<double> colours = test::uniform(size_t(N) * C, 0, 1);
  const UvAtlas atlas = makeUvAtlas(a.positions, a.faces, size);
  TextureBaker::Settings settings;
  settings.views = 5, settings.width = 161, settings.height = 127, settings.channels = C;
  TextureBaker baker(device(), backend(), atlas, a.faces, N, settings);
  const BakeDesc& d = baker.desc();
  const std::vector<float> matrices = bakeRingCameras(d.views, a.lo, a.hi, 161.0f / 127.0f);
  baker.setCameras(matrices);
  DeviceBuffer positions = device().upload(a.positions), attributes = device().upload(cast<float>(colours)),
               texture = test::poisoned(device(), size_t(d.texels) * C);
  run([&](const Exec& e) { baker.bake(e, positions, attributes, texture); });

  // The rasteriser is exact: the texel map and the views' faces are the reference's.
  const AtlasRaster ar = atlasRaster(atlas);
  const RasterResult texels = rasterizeRef(ar.positions, ar.faces, ar.desc);
  EXPECT_EQ(baker.texelFaces().download<int32_t>(), texels.findices);
  const std::vector<int32_t> viewFaces = baker.viewFaces().download<int32_t>();
  // (Of the GPU's own clip positions: a device may fuse the projection's products, moving a vertex by an ulp, which
  // is enough to hand an edge's pixel to the other face.)
  const std::vector<float> clip = baker.clip().download<float>();
  EXPECT_TRUE(allClose(clip, projectRef({d.views, N, false}, cast<double>(a.positions), matrices), Tol{1e-5, 1e-5}));
  RasterDesc raster{d.width, d.height};
  raster.images = d.views;
  EXPECT_EQ(viewFaces, rasterizeRef(clip, a.faces, raster).findices);
  // Samples against the reference's on the GPU's own visibility buffers, into NaN-poisoned outputs.
  const std::vector<double> texelBary = cast<double>(baker.texelBary().download<float>()),
                            viewBary = cast<double>(baker.viewBary().download<float>());
  const BakeSamplesRef want =
      bakeSamplesRef(d, cast<double>(a.positions), a.faces, texels.findices, texelBary, viewFaces, viewBary, matrices);
  DeviceBuffer locations = test::poisoned(device(), size_t(d.texels) * d.views * 2),
               weights = test::poisoned(device(), size_t(d.texels) * d.views);
  DeviceBuffer faces = device().upload(a.faces);
  run([&](const Exec& e) {
    bakeSamples(e, {.desc = d,
                    .positions = positions,
                    .faces = faces,
                    .texelFaces = baker.texelFaces(),
                    .texelBary = baker.texelBary(),
                    .viewFaces = baker.viewFaces(),
                    .viewBary = baker.viewBary(),
                    .matrices = baker.cameras(),
                    .locations = locations,
                    .weights = weights});
  });
  const std::vector<float> gotLocations = locations.download<float>(), gotWeights = weights.download<float>();
  EXPECT_EQ(gotWeights, baker.weights().download<float>());
  // Which views see a texel is decided by comparisons (the tolerance, minCosine, the bilinear footprint's pixel) that
  // float and double may round differently right at their thresholds: a few texels in a thousand at most. The
  // others agree to float rounding: locations are x/w of floats, weights ratios of float powers.
  size_t onMesh = 0, differ = 0, compared = 0;
  for (size_t t = 0; t < d.texels; ++t) {
    if (!texels.findices[t]) continue;
    ++onMesh;
    bool same = true;
    for (size_t k = 0; k < d.views; ++k)
      same &= (gotWeights[t * d.views + k] > 0) == (want.weights[t * d.views + k] > 0);
    if (!same) {
      ++differ;
      continue;
    }
    ++compared;
    for (size_t k = 0; k < d.views; ++k) {
      const size_t s = t * d.views + k;
      ASSERT_NEAR(gotWeights[s], want.weights[s], 2e-5) << "texel " << t << " view " << k;
      ASSERT_NEAR(gotLocations[s * 2], want.locations[s * 2], 2e-6) << "texel " << t << " view " << k;
      ASSERT_NEAR(gotLocations[s * 2 + 1], want.locations[s * 2 + 1], 2e-6) << "texel " << t << " view " << k;
    }
  }
  EXPECT_LE(differ, onMesh / 500) << differ << " of " << onMesh << " texels";
  EXPECT_GT(compared, onMesh / 2);
  // The views' colours, and the texture as the aggregation of the GPU's own samples.
  const std::vector<float> images = baker.images().download<float>();
  EXPECT_TRUE(allClose(images, interpolateRef(colours, C, viewFaces, viewBary, a.faces), Tol{1e-5, 0}));
  const std::vector<float> got = texture.download<float>();
  EXPECT_TRUE(allClose(got,
                       deformableAggregationRef({bakeAggregationSizes(d, C), bakeViewLayout(d), cast<double>(images),
                                                 cast<double>(gotLocations), cast<double>(gotWeights)}),
                       Tol{1e-5, 0}));
  // The same bits again.
  run([&](const Exec& e) { baker.bake(e, positions, attributes, texture); });
  EXPECT_EQ(texture.download<float>(), got);
}

TEST_P(TextureBakeGpu, RejectsBadArguments) {
  BakeDesc d;
  d.texels = 10, d.views = 2, d.width = 8, d.height = 8, d.vertexCount = 3, d.faceCount = 1;
  auto floats = [&](size_t n) { return device().allocate(ElementType::Float32, n); };
  auto ints = [&](size_t n) { return device().allocate(ElementType::Int32, n); };
  DeviceBuffer pos = floats(9), faces = ints(3), tf = ints(10), tb = floats(30), vf = ints(128), vb = floats(384),
               m = floats(32), loc = floats(40), w = floats(20), small = floats(5);
  BakeSamplesArgs args{d, pos, faces, tf, tb, vf, vb, m, loc, w};
  run([&](const Exec& e) { bakeSamples(e, args); });  // well formed
  BakeSamplesArgs bad = args;
  bad.weights = small;
  expectRejected([&](const Exec& e) { bakeSamples(e, bad); }, "bakeSamples: weights holds 5");
  bad = args, bad.texelFaces = tb;
  expectRejected([&](const Exec& e) { bakeSamples(e, bad); }, "texelFaces holds float32");
  bad = args, bad.desc.views = 65;
  expectRejected([&](const Exec& e) { bakeSamples(e, bad); }, "65 views, expected 1 … 64");
  bad = args, bad.desc.minCosine = 2;
  expectRejected([&](const Exec& e) { bakeSamples(e, bad); }, "minCosine 2");
}

ARM_ON_GPU_BACKENDS(TextureBakeGpu);

TEST(FinishTexture, UnpremultipliesAndDilates) {
  // 3 × 3 texels of (colour, coverage): the centre seen at half coverage, the rest empty.
  std::vector<float> texture(9 * 2, 0.0f);
  texture[4 * 2] = 0.3f, texture[4 * 2 + 1] = 0.5f;
  const std::vector<float> once = finishTexture(texture, 3, 2, 0);
  EXPECT_FLOAT_EQ(once[4 * 2], 0.6f);
  EXPECT_EQ(once[4 * 2 + 1], 1.0f);
  EXPECT_EQ(once[0], 0.0f);
  EXPECT_EQ(once[1], 0.0f);
  const std::vector<float> dilated = finishTexture(texture, 3, 2, 1);
  for (size_t t = 0; t < 9; ++t) EXPECT_FLOAT_EQ(dilated[t * 2], 0.6f) << t;
  for (size_t t = 0; t < 9; ++t) EXPECT_EQ(dilated[t * 2 + 1], 1.0f) << t;
  EXPECT_THROW(finishTexture(texture, 3, 1, 0), Error);
}

}  // namespace
}  // namespace armature
