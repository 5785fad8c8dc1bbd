// Texture baking on the CPU: the atlas, the samples' reference in double and the texture's finish.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "armature/camera.h"
#include "armature/error.h"
#include "armature/ops/texture_bake.h"

namespace armature {

namespace {

using Vec3 = std::array<double, 3>;
Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }

// A chart: one face or two sharing the edge (a, b), laid flat with a at the origin and b on +x; the first face's
// third corner above the axis, the second's below.
struct Chart {
  int32_t faces[2] = {-1, -1};
  std::array<std::array<double, 2>, 3> corners[2];  // per face, in the face's corner order
  double lo[2] = {0, 0}, hi[2] = {0, 0};
  double width() const { return hi[0] - lo[0]; }
  double height() const { return hi[1] - lo[1]; }
};

// Where corner c lands when a is at the origin and b on +x: (along ab, ±distance from the line).
std::array<double, 2> unfold(const Vec3& a, const Vec3& b, const Vec3& c, double side) {
  const Vec3 ab = sub(b, a), ac = sub(c, a);
  const double length = norm(ab);
  if (!(length > 0)) return {0, 0};
  return {dot(ac, ab) / length, side * norm(cross(ab, ac)) / length};
}

}  // namespace

UvAtlas makeUvAtlas(const std::vector<float>& positions, const std::vector<int32_t>& faces, uint32_t size,
                    uint32_t gutter) {
  ARM_CHECK(positions.size() % 3 == 0, "uv atlas: %zu position floats, not a multiple of 3", positions.size());
  ARM_CHECK(faces.size() % 3 == 0, "uv atlas: %zu face indices, not a multiple of 3", faces.size());
  ARM_CHECK(size >= 1 && size <= 8192, "uv atlas: size %u, expected 1 … 8192", size);
  const size_t V = positions.size() / 3, F = faces.size() / 3;
  for (size_t i = 0; i < faces.size(); ++i)
    ARM_CHECK(faces[i] >= 0 && size_t(faces[i]) < V, "uv atlas: face %zu's corner %zu is %d, outside [0, %zu)", i / 3,
              i % 3, faces[i], V);
  auto vertex = [&](int32_t v) { return Vec3{positions[v * 3], positions[v * 3 + 1], positions[v * 3 + 2]}; };
  auto corner = [&](size_t f, int k) { return faces[f * 3 + size_t(k)]; };
  auto edgeKey = [](int32_t a, int32_t b) {
    return (uint64_t(uint32_t(std::min(a, b))) << 32) | uint32_t(std::max(a, b));
  };

  // The faces on each edge, with a cursor past those already placed: faces are placed for good, so each edge's list
  // is walked once in all (a mesh of many faces on one edge would otherwise be quadratic).
  struct EdgeFaces {
    std::vector<uint32_t> faces;
    size_t next = 0;
  };
  std::unordered_map<uint64_t, EdgeFaces> edgeFaces;
  for (size_t f = 0; f < F; ++f)
    for (int k = 0; k < 3; ++k) edgeFaces[edgeKey(corner(f, k), corner(f, (k + 1) % 3))].faces.push_back(uint32_t(f));

  // Pair each face with an unpaired neighbour across its longest edge that has one.
  std::vector<Chart> charts;
  std::vector<bool> placed(F, false);
  for (size_t f = 0; f < F; ++f) {
    if (placed[f]) continue;
    std::array<int, 3> edges = {0, 1, 2};  // edge k runs from corner k to corner k + 1
    auto length = [&](int k) { return norm(sub(vertex(corner(f, (k + 1) % 3)), vertex(corner(f, k)))); };
    std::stable_sort(edges.begin(), edges.end(), [&](int a, int b) { return length(a) > length(b); });
    Chart chart;
    chart.faces[0] = int32_t(f);
    placed[f] = true;
    int shared = edges[0];
    for (int k : edges) {
      EdgeFaces& onEdge = edgeFaces[edgeKey(corner(f, k), corner(f, (k + 1) % 3))];
      while (onEdge.next < onEdge.faces.size() && placed[onEdge.faces[onEdge.next]]) ++onEdge.next;
      if (onEdge.next < onEdge.faces.size()) {
        const uint32_t g = onEdge.faces[onEdge.next];
        chart.faces[1] = int32_t(g), placed[g] = true;
      }
      if (chart.faces[1] >= 0) {
        shared = k;
        break;
      }
    }
    const int32_t a = corner(f, shared), b = corner(f, (shared + 1) % 3);
    for (int side = 0; side < 2; ++side) {
      const int32_t face = chart.faces[side];
      if (face < 0) continue;
      for (int k = 0; k < 3; ++k)
        chart.corners[side][size_t(k)] = unfold(vertex(a), vertex(b), vertex(corner(size_t(face), k)), side ? -1 : 1);
    }
    chart.lo[0] = chart.lo[1] = INFINITY, chart.hi[0] = chart.hi[1] = -INFINITY;
    for (int side = 0; side < 2; ++side)
      if (chart.faces[side] >= 0)
        for (const auto& p : chart.corners[side])
          for (int axis = 0; axis < 2; ++axis)
            chart.lo[axis] = std::min(chart.lo[axis], p[size_t(axis)]),
            chart.hi[axis] = std::max(chart.hi[axis], p[size_t(axis)]);
    charts.push_back(chart);
  }

  // Shelves, tallest charts first: at scale s every chart takes ⌈w·s⌉ + gutter by ⌈h·s⌉ + gutter texels, its
  // picture `gutter` texels in from its cell's corner.
  std::vector<uint32_t> order(charts.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return charts[a].height() > charts[b].height(); });
  std::vector<std::array<uint32_t, 2>> cell(charts.size());
  auto pack = [&](double s) {
    uint64_t x = 0, y = 0, rowHeight = 0;
    for (uint32_t c : order) {
      const uint64_t w = uint64_t(std::ceil(charts[c].width() * s)) + gutter,
                     h = uint64_t(std::ceil(charts[c].height() * s)) + gutter;
      if (x + w + gutter > size) x = 0, y += rowHeight, rowHeight = 0;
      if (x + w + gutter > size || y + h + gutter > size) return false;
      cell[c] = {uint32_t(x), uint32_t(y)};
      x += w, rowHeight = std::max(rowHeight, h);
    }
    return true;
  };
  double area = 0;
  for (const Chart& c : charts) area += c.width() * c.height();
  double lo = 0, hi = area > 0 ? double(size) / std::sqrt(area) : 1.0;
  ARM_CHECK(pack(0), "uv atlas: %zu charts with %u-texel gutters do not fit %u² texels", charts.size(), gutter, size);
  for (int i = 0; i < 48; ++i) {
    const double mid = 0.5 * (lo + hi);
    (pack(mid) ? lo : hi) = mid;
  }
  pack(lo);
  ARM_CHECK(area * lo * lo >= 2.0 * double(charts.size()),
            "uv atlas: %zu charts get %.2f texels each at %u² (gutters of %u); a larger size is needed", charts.size(),
            area * lo * lo / double(charts.size()), size, gutter);

  UvAtlas atlas;
  atlas.size = size, atlas.texelsPerUnit = lo;
  atlas.uvs.assign(F * 6, 0.0f);
  for (size_t c = 0; c < charts.size(); ++c)
    for (int side = 0; side < 2; ++side) {
      const int32_t face = charts[c].faces[side];
      if (face < 0) continue;
      for (int k = 0; k < 3; ++k)
        for (int axis = 0; axis < 2; ++axis)
          atlas.uvs[size_t(face) * 6 + size_t(k) * 2 + size_t(axis)] =
              float((cell[c][size_t(axis)] + gutter +
                     (charts[c].corners[side][size_t(k)][size_t(axis)] - charts[c].lo[axis]) * lo) /
                    size);
    }
  return atlas;
}

AtlasRaster atlasRaster(const UvAtlas& atlas) {
  ARM_CHECK(atlas.uvs.size() % 6 == 0, "atlas raster: %zu uv floats, not 6 per face", atlas.uvs.size());
  const size_t F = atlas.uvs.size() / 6;
  AtlasRaster r;
  r.desc.width = r.desc.height = atlas.size;
  r.positions.resize(F * 12);
  r.faces.resize(F * 3);
  for (size_t i = 0; i < F * 3; ++i) {
    r.positions[i * 4] = 2.0f * atlas.uvs[i * 2] - 1.0f;
    r.positions[i * 4 + 1] = 2.0f * atlas.uvs[i * 2 + 1] - 1.0f;
    r.positions[i * 4 + 2] = 0.5f;
    r.positions[i * 4 + 3] = 1.0f;
    r.faces[i] = int32_t(i);
  }
  return r;
}

void checkBakeDesc(const BakeDesc& d) {
  ARM_CHECK(d.views >= 1 && d.views <= 64, "texture bake: %u views, expected 1 … 64", d.views);
  ARM_CHECK(d.width >= 1 && d.height >= 1, "texture bake: views of %u × %u pixels", d.width, d.height);
  ARM_CHECK(uint64_t(d.views) * d.width * d.height <= (uint64_t(1) << 28),
            "texture bake: %u views of %u × %u pixels exceed 2^28 pixels", d.views, d.width, d.height);
  ARM_CHECK(uint64_t(d.texels) * d.views <= (uint64_t(1) << 30), "texture bake: %u texels × %u views exceed 2^30",
            d.texels, d.views);
  ARM_CHECK(d.vertexCount < (1u << 30) && d.faceCount < (1u << 30), "texture bake: %u vertices, %u faces",
            d.vertexCount, d.faceCount);
  ARM_CHECK(std::isfinite(d.tolerance) && d.tolerance >= 0, "texture bake: tolerance %g, expected finite and >= 0",
            double(d.tolerance));
  ARM_CHECK(d.minCosine >= 0 && d.minCosine <= 1, "texture bake: minCosine %g, expected 0 … 1", double(d.minCosine));
  ARM_CHECK(std::isfinite(d.sharpness) && d.sharpness >= 0, "texture bake: sharpness %g, expected finite and >= 0",
            double(d.sharpness));
}

std::vector<float> bakeRingCameras(uint32_t views, const float lo[3], const float hi[3], float aspect) {
  const float fovY = 0.6f;
  std::array<float, 3> centre;
  float radius = 0;
  for (int a = 0; a < 3; ++a)
    centre[size_t(a)] = 0.5f * (lo[a] + hi[a]), radius += 0.25f * (hi[a] - lo[a]) * (hi[a] - lo[a]);
  radius = std::sqrt(radius);
  // Far enough that the sphere fits the narrower of the two fields of view.
  const float halfFov = std::min(fovY, 2 * std::atan(std::tan(fovY / 2) * aspect)) / 2,
              distance = 1.05f * radius / std::sin(halfFov);
  std::vector<float> out;
  for (uint32_t k = 0; k < views; ++k) {
    const float yaw = 2 * float(M_PI) * float(k) / float(views), pitch = (k % 2 ? -15.0f : 25.0f) * float(M_PI) / 180;
    const std::array<float, 3> eye = {centre[0] + distance * std::cos(pitch) * std::sin(yaw),
                                      centre[1] + distance * std::sin(pitch),
                                      centre[2] + distance * std::cos(pitch) * std::cos(yaw)};
    const auto m = lookAtPerspective(eye, centre, fovY, aspect);
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

FeatureMapLayout bakeViewLayout(const BakeDesc& d) {
  FeatureMapLayout layout;
  layout.cameras = d.views, layout.levels = 1;
  for (uint32_t k = 0; k < d.views; ++k) {
    layout.spatialShape.push_back(int32_t(d.height));
    layout.spatialShape.push_back(int32_t(d.width));
    layout.scaleStartIndex.push_back(int32_t(uint64_t(k) * d.width * d.height));
  }
  return layout;
}

DeformableAggregationSizes bakeAggregationSizes(const BakeDesc& d, uint32_t channels) {
  return {1, uint32_t(uint64_t(d.views) * d.width * d.height), channels, d.texels, 1, 1};
}

BakeSamplesRef bakeSamplesRef(const BakeDesc& d, const std::vector<double>& positions,
                              const std::vector<int32_t>& faces, const std::vector<int32_t>& texelFaces,
                              const std::vector<double>& texelBary, const std::vector<int32_t>& viewFaces,
                              const std::vector<double>& viewBary, const std::vector<float>& matrices) {
  checkBakeDesc(d);
  const size_t T = d.texels, K = d.views, pixels = K * d.width * d.height;
  auto expect = [](const char* name, size_t got, size_t want) {
    ARM_CHECK(got == want, "texture bake: %s has %zu values, expected %zu", name, got, want);
  };
  expect("positions", positions.size(), size_t(d.vertexCount) * 3);
  expect("faces", faces.size(), size_t(d.faceCount) * 3);
  expect("texelFaces", texelFaces.size(), T);
  expect("texelBary", texelBary.size(), T * 3);
  expect("viewFaces", viewFaces.size(), pixels);
  expect("viewBary", viewBary.size(), pixels * 3);
  expect("matrices", matrices.size(), K * 16);

  // The point at barycentrics b of face id + 1 `id`, and the face's normal; false for no face.
  auto facePoint = [&](int32_t id, const double* b, Vec3& point, Vec3& normal) {
    if (id < 1 || uint32_t(id) > d.faceCount) return false;
    Vec3 corner[3];
    for (int k = 0; k < 3; ++k) {
      const int32_t v = faces[size_t(id - 1) * 3 + size_t(k)];
      if (v < 0 || uint32_t(v) >= d.vertexCount) return false;
      corner[k] = {positions[size_t(v) * 3], positions[size_t(v) * 3 + 1], positions[size_t(v) * 3 + 2]};
    }
    for (int a = 0; a < 3; ++a)
      point[size_t(a)] = b[0] * corner[0][size_t(a)] + b[1] * corner[1][size_t(a)] + b[2] * corner[2][size_t(a)];
    normal = cross(sub(corner[1], corner[0]), sub(corner[2], corner[0]));
    return true;
  };

  BakeSamplesRef out{std::vector<double>(T * K * 2, -1.0), std::vector<double>(T * K, 0.0)};
  for (size_t t = 0; t < T; ++t) {
    Vec3 p, n;
    if (!facePoint(texelFaces[t], &texelBary[t * 3], p, n)) continue;
    double w[64] = {}, total = 0;
    double at[64][2];
    for (size_t k = 0; k < K; ++k) {
      const float* m = &matrices[k * 16];
      auto row = [&](int r) { return m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r]; };
      const double clipW = row(3), u = row(0) / clipW, v = row(1) / clipW, x = 0.5 * (u + 1), y = 0.5 * (v + 1);
      if (!(clipW > 0 && x > 0 && x < 1 && y > 0 && y < 1)) continue;
      // The view's ray through (u, v): where rows x − u·w and y − v·w vanish.
      const Vec3 a{m[0] - u * m[3], m[4] - u * m[7], m[8] - u * m[11]},
          b{m[1] - v * m[3], m[5] - v * m[7], m[9] - v * m[11]};
      const Vec3 ray = cross(a, b);
      // Seen where each of the four pixels the bilinear sample reads shows a surface whose plane crosses the ray
      // within the tolerance of p.
      const double top = std::floor(y * d.height - 0.5), left = std::floor(x * d.width - 0.5);
      bool seen = top >= 0 && top + 1 < d.height && left >= 0 && left + 1 < d.width;
      for (int c = 0; c < 4 && seen; ++c) {
        const size_t pixel = (k * d.height + size_t(top) + size_t(c / 2)) * d.width + size_t(left) + size_t(c % 2);
        Vec3 q, shown;
        seen = facePoint(viewFaces[pixel], &viewBary[pixel * 3], q, shown) &&
               std::abs(dot(sub(q, p), shown)) * norm(ray) / std::abs(dot(ray, shown)) <= d.tolerance;
      }
      const double facing = std::abs(dot(ray, n)) / (norm(ray) * norm(n));
      if (seen && facing >= d.minCosine && facing > 0) {
        w[k] = std::pow(facing, double(d.sharpness)), at[k][0] = x, at[k][1] = y;
        total += w[k];
      }
    }
    if (!(total > 0)) continue;
    for (size_t k = 0; k < K; ++k)
      if (w[k] > 0) {
        out.weights[t * K + k] = w[k] / total;
        out.locations[(t * K + k) * 2] = at[k][0], out.locations[(t * K + k) * 2 + 1] = at[k][1];
      }
  }
  return out;
}

std::vector<float> finishTexture(const std::vector<float>& texture, uint32_t size, uint32_t channels, uint32_t passes) {
  ARM_CHECK(channels >= 2, "finish texture: %u channels, expected colour channels and a coverage one", channels);
  const size_t T = size_t(size) * size, C = channels;
  ARM_CHECK(texture.size() == T * C, "finish texture: %zu values for %u² texels of %u channels", texture.size(), size,
            channels);
  std::vector<float> out(T * C, 0.0f);
  for (size_t t = 0; t < T; ++t) {
    const float coverage = texture[t * C + C - 1];
    if (!(coverage > 1e-3f)) continue;  // a texel no view sees, or only a silhouette's edge of it
    for (size_t c = 0; c + 1 < C; ++c) out[t * C + c] = texture[t * C + c] / coverage;
    out[t * C + C - 1] = 1.0f;
  }
  for (uint32_t pass = 0; pass < passes; ++pass) {
    std::vector<float> next = out;
    for (uint32_t y = 0; y < size; ++y)
      for (uint32_t x = 0; x < size; ++x) {
        const size_t t = size_t(y) * size + x;
        if (out[t * C + C - 1] > 0) continue;
        uint32_t filled = 0;
        std::vector<double> sum(C - 1, 0.0);
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int64_t nx = int64_t(x) + dx, ny = int64_t(y) + dy;
            if ((dx == 0 && dy == 0) || nx < 0 || ny < 0 || nx >= size || ny >= size) continue;
            const size_t n = size_t(ny) * size + size_t(nx);
            if (!(out[n * C + C - 1] > 0)) continue;
            ++filled;
            for (size_t c = 0; c + 1 < C; ++c) sum[c] += out[n * C + c];
          }
        if (!filled) continue;
        for (size_t c = 0; c + 1 < C; ++c) next[t * C + c] = float(sum[c] / filled);
        next[t * C + C - 1] = 1.0f;
      }
    out.swap(next);
  }
  return out;
}

}  // namespace armature
