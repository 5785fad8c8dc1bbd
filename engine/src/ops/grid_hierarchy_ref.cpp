// The reference grid hierarchy builder: the original's algorithm step by step, with hash maps from cell keys to
// seqs, single-threaded. buildGridHierarchy (grid_hierarchy.cpp) must match it exactly.
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "armature/error.h"
#include "armature/ops/grid_cells.h"

namespace armature {
namespace grid {

uint32_t validateGridInput(const std::vector<GridView>& views, int levels, int resolution) {
  ARM_CHECK(views.size() == 3, "grid hierarchy: exactly 3 axis views are needed, got %zu", views.size());
  ARM_CHECK(levels >= 1 && levels <= 20, "grid hierarchy: levels must be 1..20, got %d", levels);
  ARM_CHECK(resolution >= 1 && resolution <= (1 << 20), "grid hierarchy: resolution must be 1..2^20, got %d",
            resolution);
  ARM_CHECK(resolution % (1 << (levels - 1)) == 0,
            "grid hierarchy: resolution %d is not divisible by 2^(levels-1) = %d", resolution, 1 << (levels - 1));
  size_t channels = 0;
  for (size_t v = 0; v < 3; ++v) {
    const GridView& g = views[v];
    size_t pixels = size_t(g.layers) * g.height * g.width;
    ARM_CHECK(g.layers >= 1 && g.height >= 1 && g.width >= 1, "grid hierarchy: view %zu is empty (%ux%ux%u)", v,
              g.layers, g.height, g.width);
    ARM_CHECK(g.positions.size() == pixels * 4,
              "grid hierarchy: view %zu positions must be (L,H,W,4) = %zu floats, got %zu", v, pixels * 4,
              g.positions.size());
    ARM_CHECK(g.normals.size() == pixels * 3,
              "grid hierarchy: view %zu normals must be (L,H,W,3) = %zu floats, got %zu", v, pixels * 3,
              g.normals.size());
    ARM_CHECK(g.features.size() % pixels == 0, "grid hierarchy: view %zu features must be (L,H,W,C), got %zu floats", v,
              g.features.size());
    size_t c = g.features.size() / pixels;
    ARM_CHECK(v == 0 || c == channels, "grid hierarchy: view %zu has %zu feature channels, view 0 has %zu", v, c,
              channels);
    channels = c;
    for (size_t i = 0; i < pixels; ++i) {
      const float* p = &g.positions[i * 4];
      if (p[3] == 0) continue;
      for (int k = 0; k < 3; ++k)
        ARM_CHECK(std::isfinite(p[k]) && p[k] >= -1 && p[k] <= 1 && std::isfinite(g.normals[i * 3 + size_t(k)]),
                  "grid hierarchy: view %zu pixel %zu: position (%g, %g, %g) outside [-1, 1] or a non-finite normal", v,
                  i, double(p[0]), double(p[1]), double(p[2]));
    }
  }
  return uint32_t(channels);
}

}  // namespace grid

namespace {
using namespace grid;

struct RefGrid {
  std::vector<int64_t> keys;               // seq -> cell key
  std::vector<int> normal;                 // seq -> axis code
  std::vector<int> neighbor;               // seq -> 9 seqs
  std::unordered_map<int64_t, int> seqOf;  // cell key -> seq
  std::vector<int> downsample;
  std::vector<int8_t> even, odd;
  int originSeqs = 0, resolution = 0, stride = 1;
};

const float* pixelPos(const GridView& v, int l, int i, int j) {
  return &v.positions[((size_t(l) * v.height + size_t(i)) * v.width + size_t(j)) * 4];
}

int fetch(const RefGrid& g, const GridView& v, int l, int i, int j) {
  const float* p = pixelPos(v, l, i, j);
  if (p[3] == 0) return -1;
  auto it = g.seqOf.find(cellKey(p, g.resolution));
  ARM_CHECK(it != g.seqOf.end(), "grid hierarchy: internal error, a pixel's cell is missing");
  return it->second;
}

// boundary: -1 read the first layer, 1 the last non-empty one, 0 the layer nearest in depth.
void fetchNeighbors(const RefGrid& g, int seq, const float* pos, int dim, int boundary,
                    const std::vector<GridView>& views, int* out) {
  const GridView& v = views[size_t(dim)];
  scanNeighbors(
      int(v.height), int(v.width), pos, dim, g.stride, seq,
      [&](int ni, int nj) {
        return pickLayer(int(v.layers), boundary, dim, pos[(dim + 2) % 3], g.keys.data(), g.resolution,
                         [&](int l) { return fetch(g, v, l, ni, nj); });
      },
      out);
}

void downsampleGrid(RefGrid& src, RefGrid& tar) {
  src.downsample.assign(src.keys.size(), -1);
  tar.resolution = src.resolution / 2;
  tar.stride = src.stride * 2;
  std::vector<int> counts;
  for (size_t i = 0; i < src.keys.size(); ++i) {
    float pos[3];
    cellPoint(src.keys[i], src.resolution, pos);
    int64_t k = cellKey(pos, tar.resolution);
    auto [it, inserted] = tar.seqOf.try_emplace(k, int(tar.keys.size()));
    if (inserted) {
      tar.keys.push_back(k);
      counts.insert(counts.end(), {0, 0, 0});
    }
    counts[size_t(it->second) * 3 + size_t(src.normal[i])] += 1;
    src.downsample[i] = it->second;
  }
  tar.normal.resize(tar.keys.size());
  for (size_t i = 0; i < tar.keys.size(); ++i) tar.normal[i] = majority(&counts[i * 3]);
}

void neighborGrid(RefGrid& g, const std::vector<GridView>& views, int v) {
  std::unordered_set<int> visited;
  for (int vd = 0; vd < 3; ++vd) {
    const GridView& t = views[size_t(vd)];
    for (int i = 0; i < int(t.height); ++i)
      for (int j = 0; j < int(t.width); ++j)
        for (int l = 0; l < int(t.layers); ++l) {
          int seq = fetch(g, t, l, i, j);
          if (seq == -1) break;
          int dim = g.normal[size_t(seq)];
          if (dim != v) continue;
          float pos[3];
          cellPoint(g.keys[size_t(seq)], g.resolution, pos);
          cornerMarks(pos, dim, int(t.height), int(t.width), g.stride, g.even[size_t(seq)], g.odd[size_t(seq)]);
          bool boundary = vd == v && (l == 0 || l == int(t.layers) - 1 || fetch(g, t, l + 1, i, j) == -1);
          if (!visited.insert(seq).second) continue;
          fetchNeighbors(g, seq, pos, dim, boundary ? (l == 0 ? -1 : 1) : 0, views, &g.neighbor[size_t(seq) * 9]);
        }
  }
}

void padGrid(RefGrid& src, RefGrid& tar, const std::vector<GridView>& views) {
  std::vector<int> evenMapped(tar.keys.size(), 0), oddMapped(tar.keys.size(), 0);
  for (size_t i = 0; i < src.downsample.size(); ++i) {
    if (src.even[i]) evenMapped[size_t(src.downsample[i])] = 1;
    if (src.odd[i]) oddMapped[size_t(src.downsample[i])] = 1;
  }
  for (size_t i = 0; i < tar.keys.size(); ++i) {
    if (evenMapped[i] && oddMapped[i]) continue;
    float p[3];
    cornerPoint(tar.keys[i], tar.resolution, p);
    int64_t key = cellKey(p, src.resolution);
    auto it = src.seqOf.find(key);
    if (it == src.seqOf.end()) {
      int seq = int(src.keys.size());
      src.seqOf[key] = seq;
      src.even.push_back(!evenMapped[i]);
      src.odd.push_back(!oddMapped[i]);
      src.keys.push_back(key);
      src.normal.push_back(tar.normal[i]);
      int n[9];
      fetchNeighbors(src, seq, p, tar.normal[i], 0, views, n);
      src.neighbor.insert(src.neighbor.end(), n, n + 9);
      src.downsample.push_back(int(i));
    } else {
      if (!evenMapped[i]) src.even[size_t(it->second)] = 1;
      if (!oddMapped[i]) src.odd[size_t(it->second)] = 1;
    }
  }
}

}  // namespace

GridHierarchy buildGridHierarchyRef(const std::vector<GridView>& views, int levels, int resolution) {
  const uint32_t C = validateGridInput(views, levels, resolution);
  std::vector<RefGrid> grids(static_cast<size_t>(levels));
  RefGrid& g0 = grids[0];
  g0.resolution = resolution;
  GridHierarchy out;
  out.channels = C;
  for (const GridView& v : views)
    for (size_t px = 0; px < size_t(v.layers) * v.height * v.width; ++px) {
      const float* p = &v.positions[px * 4];
      if (p[3] == 0) continue;
      int64_t k = cellKey(p, resolution);
      if (g0.seqOf.count(k)) continue;
      g0.seqOf[k] = int(g0.keys.size());
      g0.keys.push_back(k);
      g0.normal.push_back(normalAxis(&v.normals[px * 3]));
      out.positions.insert(out.positions.end(), p, p + 3);
      out.features.insert(out.features.end(), v.features.begin() + std::ptrdiff_t(px * C),
                          v.features.begin() + std::ptrdiff_t((px + 1) * C));
    }
  for (int l = 0; l + 1 < levels; ++l) downsampleGrid(grids[size_t(l)], grids[size_t(l) + 1]);
  for (RefGrid& g : grids) {
    g.neighbor.assign(g.keys.size() * 9, -1);
    g.even.assign(g.keys.size(), 0);
    g.odd.assign(g.keys.size(), 0);
    g.originSeqs = int(g.keys.size());
    for (int v = 0; v < 3; ++v) neighborGrid(g, views, v);
  }
  for (int l = levels - 2; l >= 0; --l) padGrid(grids[size_t(l)], grids[size_t(l) + 1], views);
  for (size_t i = size_t(g0.originSeqs); i < g0.keys.size(); ++i) {
    float p[3];
    cellPoint(g0.keys[i], resolution, p);
    out.positions.insert(out.positions.end(), p, p + 3);
    out.features.insert(out.features.end(), C, 0.5f);
  }
  out.isOriginal.resize(g0.keys.size());
  for (size_t i = 0; i < g0.keys.size(); ++i) out.isOriginal[i] = i < size_t(g0.originSeqs) ? 1.f : 0.f;
  appendLevelOutputs(out, grids);
  return out;
}

}  // namespace armature
