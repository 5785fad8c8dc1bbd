// The fast grid hierarchy builder. The original (and buildGridHierarchyRef) look up a pixel's cell in a hash map
// every time a neighbour is read — billions of lookups on large views. Here each level keeps a seq map per view
// pixel, filled once (level 0 from a flat open-addressing table, coarser levels through the parent links), so
// every later read is an array index; the neighbour search, independent per cell, runs on all cores.
#include <algorithm>
#include <cmath>
#include <thread>

#include "armature/error.h"
#include "armature/ops/grid_cells.h"
#include "ops/dispatch.h"

namespace armature {
namespace {
using namespace grid;

// Cell key -> seq, linear probing, no deletions. Keys are >= 0, so -1 marks an empty slot.
class CellTable {
 public:
  explicit CellTable(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    m_keys.assign(cap, -1);
    m_seqs.assign(cap, -1);
  }
  // The seq of `key`, inserting `next` if absent; `inserted` says which.
  int32_t findOrInsert(int64_t key, int32_t next, bool& inserted) {
    size_t mask = m_keys.size() - 1, i = hash(key) & mask;
    while (m_keys[i] != -1 && m_keys[i] != key) i = (i + 1) & mask;
    inserted = m_keys[i] == -1;
    if (inserted) {
      if (++m_size * 2 > m_keys.size()) {  // grow, then insert into the larger table
        rehash();
        return findOrInsert(key, next, inserted);
      }
      m_keys[i] = key, m_seqs[i] = next;
    }
    return m_seqs[i];
  }
  int32_t find(int64_t key) const {
    size_t mask = m_keys.size() - 1, i = hash(key) & mask;
    while (m_keys[i] != -1 && m_keys[i] != key) i = (i + 1) & mask;
    return m_keys[i] == -1 ? -1 : m_seqs[i];
  }

 private:
  static size_t hash(int64_t k) { return size_t((uint64_t(k) * 0x9E3779B97F4A7C15ull) >> 17); }
  void rehash() {
    std::vector<int64_t> keys = std::move(m_keys);
    std::vector<int32_t> seqs = std::move(m_seqs);
    m_keys.assign(keys.size() * 2, -1);
    m_seqs.assign(keys.size() * 2, -1);
    m_size = 0;
    bool ignored;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != -1) findOrInsert(keys[i], seqs[i], ignored);
  }
  std::vector<int64_t> m_keys;
  std::vector<int32_t> m_seqs;
  size_t m_size = 0;
};

// Runs body(i) for i in [0, n) on all hardware threads, in contiguous blocks.
template <typename Body>
void parallelFor(size_t n, Body body) {
  size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), (n + 1023) / 1024);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) body(i);
    });
  for (auto& th : pool) th.join();
}

struct Level {
  int resolution = 0, stride = 1;
  std::vector<int64_t> keys;
  std::vector<int8_t> normal;
  std::vector<int32_t> neighbor, downsample;
  std::vector<int8_t> even, odd;
  std::vector<std::vector<int32_t>> pixelSeq;  // per view (L,H,W): the seq of each pixel, -1 when empty
  CellTable table{16};
  size_t originSeqs = 0;
};

struct Builder {
  const std::vector<GridView>& views;

  int seqAt(const Level& g, int view, int l, int i, int j) const {
    const GridView& v = views[size_t(view)];
    return g.pixelSeq[size_t(view)][(size_t(l) * v.height + size_t(i)) * v.width + size_t(j)];
  }

  void neighbors(const Level& g, int seq, const float* pos, int dim, int boundary, int32_t* out) const {
    const GridView& v = views[size_t(dim)];
    scanNeighbors(
        int(v.height), int(v.width), pos, dim, g.stride, seq,
        [&](int ni, int nj) {
          return pickLayer(int(v.layers), boundary, dim, pos[(dim + 2) % 3], g.keys.data(), g.resolution,
                           [&](int l) { return seqAt(g, dim, l, ni, nj); });
        },
        out);
  }

  // Corner flags from every reachable occurrence (layers before the first hole), and each cell's boundary kind
  // from its first one in the original's visiting order (view, row, column, layer); then the neighbours.
  void link(Level& g) const {
    size_t n = g.keys.size();
    g.even.assign(n, 0), g.odd.assign(n, 0);
    std::vector<int8_t> boundary(n, 2);  // 2: not visited
    const int s = g.stride;
    for (int vd = 0; vd < 3; ++vd) {
      const GridView& t = views[size_t(vd)];
      for (int i = 0; i < int(t.height); ++i)
        for (int j = 0; j < int(t.width); ++j)
          for (int l = 0; l < int(t.layers); ++l) {
            int seq = seqAt(g, vd, l, i, j);
            if (seq == -1) break;
            int dim = g.normal[size_t(seq)];
            float pos[3];
            cellPoint(g.keys[size_t(seq)], g.resolution, pos);
            cornerMarks(pos, dim, int(t.height), int(t.width), s, g.even[size_t(seq)], g.odd[size_t(seq)]);
            if (boundary[size_t(seq)] != 2) continue;
            bool edge = vd == dim && (l == 0 || l == int(t.layers) - 1 || seqAt(g, vd, l + 1, i, j) == -1);
            boundary[size_t(seq)] = int8_t(edge ? (l == 0 ? -1 : 1) : 0);
          }
    }
    g.neighbor.assign(n * 9, -1);
    parallelFor(n, [&](size_t seq) {
      if (boundary[seq] == 2) return;  // no reachable occurrence: the original never visits it either
      float pos[3];
      cellPoint(g.keys[seq], g.resolution, pos);
      neighbors(g, int(seq), pos, g.normal[seq], boundary[seq], &g.neighbor[seq * 9]);
    });
  }

  // The next level: parents numbered in order of first appearance over the children, normals by majority, and
  // the pixel maps through the parent links.
  static void coarsen(Level& src, Level& tar) {
    tar.resolution = src.resolution / 2;
    tar.stride = src.stride * 2;
    tar.table = CellTable(src.keys.size() / 4 + 16);
    src.downsample.resize(src.keys.size());
    std::vector<int> counts;
    const int64_t R = src.resolution, r = tar.resolution;
    for (size_t i = 0; i < src.keys.size(); ++i) {
      int64_t k = src.keys[i], key = ((k / R / R) / 2 * r + (k / R % R) / 2) * r + (k % R) / 2;
      bool inserted;
      int32_t seq = tar.table.findOrInsert(key, int32_t(tar.keys.size()), inserted);
      if (inserted) {
        tar.keys.push_back(key);
        counts.insert(counts.end(), {0, 0, 0});
      }
      counts[size_t(seq) * 3 + size_t(src.normal[i])] += 1;
      src.downsample[i] = seq;
    }
    tar.normal.resize(tar.keys.size());
    for (size_t i = 0; i < tar.keys.size(); ++i) tar.normal[i] = int8_t(majority(&counts[i * 3]));
    tar.pixelSeq.resize(3);
    for (size_t v = 0; v < 3; ++v) {
      const auto& from = src.pixelSeq[v];
      auto& to = tar.pixelSeq[v];
      to.resize(from.size());
      parallelFor(from.size(), [&](size_t p) { to[p] = from[p] < 0 ? -1 : src.downsample[size_t(from[p])]; });
    }
  }

  // Corner cells under coarse cells that lack an even or an odd corner child (in coarse seq order, padded coarse
  // cells included); new ones get neighbours at their corner point, read at the nearest depth.
  void pad(Level& src, const Level& tar) const {
    std::vector<int8_t> evenMapped(tar.keys.size(), 0), oddMapped(tar.keys.size(), 0);
    for (size_t i = 0; i < src.downsample.size(); ++i) {
      if (src.even[i]) evenMapped[size_t(src.downsample[i])] = 1;
      if (src.odd[i]) oddMapped[size_t(src.downsample[i])] = 1;
    }
    struct NewCell {
      int seq;
      float p[3];
      int dim;
    };
    std::vector<NewCell> added;
    for (size_t i = 0; i < tar.keys.size(); ++i) {
      if (evenMapped[i] && oddMapped[i]) continue;
      NewCell c{int(src.keys.size()), {}, tar.normal[i]};
      cornerPoint(tar.keys[i], tar.resolution, c.p);
      int64_t key = cellKey(c.p, src.resolution);
      bool inserted;
      int32_t seq = src.table.findOrInsert(key, c.seq, inserted);
      if (inserted) {
        src.keys.push_back(key);
        src.normal.push_back(int8_t(c.dim));
        src.even.push_back(!evenMapped[i]);
        src.odd.push_back(!oddMapped[i]);
        src.downsample.push_back(int32_t(i));
        added.push_back(c);
      } else {
        if (!evenMapped[i]) src.even[size_t(seq)] = 1;
        if (!oddMapped[i]) src.odd[size_t(seq)] = 1;
      }
    }
    size_t before = src.neighbor.size();
    src.neighbor.resize(before + added.size() * 9);
    // A padded cell's key never matches a pixel's, so the pixel maps (and these reads) are unaffected by padding.
    parallelFor(added.size(), [&](size_t a) {
      neighbors(src, added[a].seq, added[a].p, added[a].dim, 0, &src.neighbor[before + a * 9]);
    });
  }
};

}  // namespace

GridHierarchy buildGridHierarchy(const std::vector<GridView>& views, int levels, int resolution) {
  const uint32_t C = validateGridInput(views, levels, resolution);
  Builder b{views};
  std::vector<Level> grids(static_cast<size_t>(levels));
  Level& g0 = grids[0];
  g0.resolution = resolution;
  GridHierarchy out;
  out.channels = C;
  size_t valid = 0;
  for (const GridView& v : views)
    for (size_t px = 0; px < size_t(v.layers) * v.height * v.width; ++px) valid += v.positions[px * 4 + 3] != 0;
  g0.table = CellTable(valid);
  g0.pixelSeq.resize(3);
  for (size_t vi = 0; vi < 3; ++vi) {
    const GridView& v = views[vi];
    size_t pixels = size_t(v.layers) * v.height * v.width;
    std::vector<int64_t> keys(pixels, -1);
    parallelFor(pixels, [&](size_t px) {
      if (v.positions[px * 4 + 3] != 0) keys[px] = cellKey(&v.positions[px * 4], resolution);
    });
    auto& seqs = g0.pixelSeq[vi];
    seqs.assign(pixels, -1);
    for (size_t px = 0; px < pixels; ++px) {  // in the original's order: first appearance numbers the cells
      if (keys[px] < 0) continue;
      bool inserted;
      seqs[px] = g0.table.findOrInsert(keys[px], int32_t(g0.keys.size()), inserted);
      if (!inserted) continue;
      g0.keys.push_back(keys[px]);
      g0.normal.push_back(int8_t(normalAxis(&v.normals[px * 3])));
      out.positions.insert(out.positions.end(), &v.positions[px * 4], &v.positions[px * 4] + 3);
      out.features.insert(out.features.end(), v.features.begin() + std::ptrdiff_t(px * C),
                          v.features.begin() + std::ptrdiff_t((px + 1) * C));
    }
  }
  for (size_t l = 0; l + 1 < grids.size(); ++l) Builder::coarsen(grids[l], grids[l + 1]);
  for (Level& g : grids) {
    g.originSeqs = g.keys.size();
    b.link(g);
  }
  for (int l = levels - 2; l >= 0; --l) b.pad(grids[size_t(l)], grids[size_t(l) + 1]);
  for (size_t i = g0.originSeqs; i < g0.keys.size(); ++i) {
    float p[3];
    cellPoint(g0.keys[i], resolution, p);
    out.positions.insert(out.positions.end(), p, p + 3);
    out.features.insert(out.features.end(), C, 0.5f);
  }
  out.isOriginal.resize(g0.keys.size());
  for (size_t i = 0; i < g0.keys.size(); ++i) out.isOriginal[i] = i < g0.originSeqs ? 1.f : 0.f;
  appendLevelOutputs(out, grids);
  return out;
}

// ---- generated input ------------------------------------------------------------------------------------------

std::vector<GridView> makeGridViews(uint32_t size, uint32_t layers, uint32_t channels, double holeFraction,
                                    uint32_t seed) {
  struct Sphere {
    double c[3], r;
  };
  const Sphere spheres[3] = {{{-0.2, -0.1, 0.05}, 0.55}, {{0.3, 0.2, -0.1}, 0.4}, {{0.05, 0.35, 0.3}, 0.3}};
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto random01 = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(1ull << 53);
  };
  std::vector<GridView> views(3);
  for (int dim = 0; dim < 3; ++dim) {
    GridView& v = views[size_t(dim)];
    v.layers = layers, v.height = size, v.width = size + 3;  // not square: rows and columns are not interchangeable
    size_t pixels = size_t(layers) * v.height * v.width;
    v.positions.assign(pixels * 4, 0.f);
    v.normals.assign(pixels * 3, 0.f);
    v.features.assign(pixels * channels, 0.f);
    int depthAxis = (dim + 2) % 3;  // view 0 looks along z, 1 along x, 2 along y
    for (uint32_t i = 0; i < v.height; ++i)
      for (uint32_t j = 0; j < v.width; ++j) {
        double a = ((i + 0.5) / v.height - 0.5) * 2, b = ((j + 0.5) / v.width - 0.5) * 2, o[3] = {0, 0, 0};
        if (dim == 0)
          o[1] = a, o[0] = b;
        else if (dim == 1)
          o[1] = a, o[2] = b;
        else
          o[2] = -a, o[0] = b;
        std::vector<std::pair<double, int>> hits;  // depth, sphere
        for (int s = 0; s < 3; ++s) {
          double d2 = 0;
          for (int k = 0; k < 3; ++k)
            if (k != depthAxis) d2 += (o[k] - spheres[s].c[k]) * (o[k] - spheres[s].c[k]);
          double h = spheres[s].r * spheres[s].r - d2;
          if (h < 0) continue;
          hits.push_back({spheres[s].c[depthAxis] - std::sqrt(h), s});
          hits.push_back({spheres[s].c[depthAxis] + std::sqrt(h), s});
        }
        std::sort(hits.begin(), hits.end());
        for (uint32_t l = 0; l < layers && l < hits.size(); ++l) {
          if (l > 0 && random01() < holeFraction) continue;  // a hole: the original stops reading here
          size_t px = (size_t(l) * v.height + i) * v.width + j;
          double p[3] = {o[0], o[1], o[2]};
          p[depthAxis] = hits[l].first;
          const Sphere& s = spheres[hits[l].second];
          for (int k = 0; k < 3; ++k) {
            v.positions[px * 4 + size_t(k)] = float(std::clamp(p[k], -1.0, 1.0));
            v.normals[px * 3 + size_t(k)] = float((p[k] - s.c[k]) / s.r);
          }
          v.positions[px * 4 + 3] = 1.f;
          for (uint32_t c = 0; c < channels; ++c) v.features[px * channels + c] = float(random01());
        }
      }
  }
  return views;
}

namespace cuda {
GridHierarchy buildGridHierarchy(const std::vector<GridView>& views, int levels, int resolution);
}

GridHierarchy buildGridHierarchy(Backend backend, const std::vector<GridView>& views, int levels, int resolution) {
  using Build = GridHierarchy (*)(const std::vector<GridView>&, int, int);
  const Build build = backendFunction<Build>("grid hierarchy", backend, nullptr, ARM_CUDA_BACKEND(buildGridHierarchy),
                                             &buildGridHierarchy);
  return build(views, levels, resolution);
}

}  // namespace armature
