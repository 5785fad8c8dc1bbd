#pragma once
// Helpers shared by the rasteriser's tests and the differentiable pipeline's.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "armature/ops/raster.h"
#include "support/compare.h"
#include "shared/raster_weights.h"

namespace armature::test {

struct Scene {
  std::vector<float> pos;
  std::vector<int32_t> faces;
};

// A regular grid of (n+1)² vertices in NDC [-1.2, 1.2]² at depth z, split into 2n² triangles.
inline Scene grid(int n, float z, float w = 1.f) {
  Scene s;
  for (int j = 0; j <= n; ++j)
    for (int i = 0; i <= n; ++i)
      s.pos.insert(s.pos.end(), {(-1.2f + 2.4f * i / n) * w, (-1.2f + 2.4f * j / n) * w, z * w, w});
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      int a = j * (n + 1) + i, b = a + 1, c = a + n + 1, d = c + 1;
      s.faces.insert(s.faces.end(), {a, b, d, a, d, c});
    }
  return s;
}

// Random triangles, some huge, some degenerate, some behind the eye or off screen.
inline Scene randomScene(size_t triangles) {
  Scene s;
  auto u = uniform(triangles * 9 * 4, -1.6, 1.6);
  for (size_t t = 0; t < triangles; ++t) {
    float cx = float(u[t * 12]), cy = float(u[t * 12 + 1]),
          size = float(std::pow(std::abs(u[t * 12 + 2]) / 1.6, 3) * 1.5 + 0.01);
    for (int k = 0; k < 3; ++k) {
      float w = float(0.5 + std::abs(u[t * 12 + 3 + size_t(k)]));
      if (t % 17 == 3 && k == 0) w = -0.2f;  // crosses the eye plane: rejected
      float x = cx + size * float(u[t * 12 + 6 + size_t(k)]), y = cy + size * float(u[t * 12 + 9 + size_t(k) % 3]);
      if (t % 29 == 7 && k == 1) x *= 3000;  // far outside the guard band: rejected
      if (t % 31 == 9 && k == 2) y *= 8;     // near the guard band: rejected or drawn, depending on the image size
      float z = float(u[(t * 12 + 5 + size_t(k)) % u.size()]) * 0.9f;
      s.pos.insert(s.pos.end(), {x * w, y * w, z * w, w});
    }
    int base = int(t * 3);
    if (t % 23 == 5)
      s.faces.insert(s.faces.end(), {base, base, base + 1});  // degenerate
    else
      s.faces.insert(s.faces.end(), {base, base + 1, base + 2});
  }
  return s;
}

// L = Σ g · barycentrics with the visible faces held fixed, in double with the continuous divide: what the
// rasteriser's backward differentiates (the GPU rounds NDC to float first).
inline double barycentricLoss(const std::vector<double>& pos, const std::vector<int32_t>& faces, const RasterDesc& d,
                              const std::vector<int32_t>& ids, const std::vector<double>& g) {
  const size_t N = pos.size() / 4 / d.images;
  const double hx = (d.width - 1) / 2.0, hy = (d.height - 1) / 2.0;
  double loss = 0;
  for (size_t pix = 0; pix < ids.size(); ++pix) {
    if (ids[pix] <= 0) continue;
    const size_t image = pix / d.imagePixels(), inImage = pix % d.imagePixels(), f = size_t(ids[pix] - 1);
    double sx[3], sy[3], w[3];
    for (size_t k = 0; k < 3; ++k) {
      const double* v = &pos[(image * N + size_t(faces[f * 3 + k])) * 4];
      sx[k] = v[0] / v[3] * hx + hx + 0.5, sy[k] = v[1] / v[3] * hy + hy + 0.5, w[k] = v[3];
    }
    const double cx = double(inImage % d.width) + 0.5, cy = double(inImage / d.width) + 0.5;
    for (int k = 0; k < 3; ++k)
      loss +=
          g[pix * 3 + size_t(k)] * rasterBary(sx[0], sy[0], sx[1], sy[1], sx[2], sy[2], w[0], w[1], w[2], cx, cy, k);
  }
  return loss;
}

// Barycentrics: every backend divides exactly and starts from bit-identical screen coordinates. Vulkan resolves in
// double (devices with shaderFloat64, which lavapipe and NVIDIA have): the final rounding to float (~6e-8); without
// doubles in integers, within an ulp (IntegerWeightsOfFloatOnlyDevicesMeetTheTolerance). CUDA resolves in float where
// its error bound is under 6.9e-6, in double elsewhere (FloatWeightsAreAccurateWhereTheySaySo). 1e-5 is the issue's
// bound; plus one ulp of the weight (2^-23 relative), which exceeds 1e-5 beyond ±64, where needles put a few weights:
// two computations of such an ill-conditioned weight may round to neighbouring floats.
constexpr Tol kBaryTol{1e-5, 0x1p-23};

// A 6×6 grid over NDC [-1.2, 1.2]², each vertex jittered and at its own w in [0.8, 1.6] (so the perspective weights
// matter), repeated for `images` instanced views (each moved a little).
inline Scene perspectiveGrid(uint32_t images) {
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
inline Scene smallTriangleScene(size_t triangles, double reach) {
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
inline Scene sliverScene(size_t triangles) {
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

}  // namespace armature::test
