// The grid hierarchy builder on CUDA: the steps of the fast CPU builder (engine/src/ops/grid_hierarchy.cpp), each a
// few data-parallel passes. What the CPU does sequentially — numbering cells in order of first appearance, keeping
// each cell's first visit — becomes a stable sort by key plus a scan (number()), and an atomicMin on the visit
// order. Built with -fmad=false: the cell arithmetic (armature/ops/grid_cells.h) must round as the host's does.
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "armature/cuda/runtime.h"
#include "armature/ops/grid_hierarchy.h"
#include "armature/ops/grid_cells.h"
#include "check.h"

namespace armature::cuda {
namespace {
using namespace grid;
template <typename T>
using DeviceVector = thrust::device_vector<T>;

template <typename T>
T* ptr(DeviceVector<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}
template <typename T>
const T* ptr(const DeviceVector<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}

template <typename Body>
__global__ void eachKernel(size_t n, Body body) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) body(i);
}
// body(i) for i in [0, n) on the device.
template <typename Body>
void each(size_t n, Body body) {
  if (!n) return;
  eachKernel<<<unsigned(std::min<size_t>((n + 255) / 256, 65535 * 8)), 256>>>(n, body);
  CUDA_CHECK_LAUNCH();
}

// Where a view's pixels start in the concatenated (view, layer, row, column) arrays, and its shape.
struct ViewShape {
  int layers, height, width;
  int32_t offset;
};
struct Views {
  ViewShape v[3];
  // The view that holds pixel g of the concatenation.
  __host__ __device__ int of(int32_t g) const { return g >= v[2].offset ? 2 : g >= v[1].offset ? 1 : 0; }
};

// Items 0..n-1 carry keys (-1: none). Each distinct key is a cell, numbered by its first item (the lowest index)
// among all cells' first items: the CPU's findOrInsert over the items in order.
struct Numbering {
  DeviceVector<int32_t> seqOf;       // per item: its cell, -1 for none
  DeviceVector<int32_t> firstItem;   // per cell: its first item
  DeviceVector<int64_t> sortedKeys;  // the cells' keys in increasing order, for lookups
  DeviceVector<int32_t> sortedSeqs;  // their cells
  int32_t count = 0;
};

Numbering number(const DeviceVector<int64_t>& keys) {
  const size_t n = keys.size();
  Numbering r;
  r.seqOf.assign(n, -1);
  if (!n) return r;
  DeviceVector<int64_t> key = keys;
  DeviceVector<int32_t> item(n);
  thrust::sequence(item.begin(), item.end());
  thrust::stable_sort_by_key(key.begin(), key.end(), item.begin());  // a key's items stay in increasing order
  DeviceVector<int32_t> headAt(n), isHead(n), isFirst(n, 0);
  const int64_t* k = ptr(key);
  const int32_t* it = ptr(item);
  int32_t *head = ptr(headAt), *heads = ptr(isHead), *first = ptr(isFirst);
  each(n, [=] __device__(size_t s) {
    bool h = k[s] >= 0 && (s == 0 || k[s] != k[s - 1]);
    head[s] = h ? int32_t(s) : -1;
    heads[s] = h;
    if (h) first[it[s]] = 1;
  });
  // Each sorted position's head (positions grow, so a running max finds it), the cells' ranks by first item, and
  // the heads' ranks by key.
  thrust::inclusive_scan(headAt.begin(), headAt.end(), headAt.begin(), thrust::maximum<int32_t>());
  DeviceVector<int32_t> rank(n), keyRank(n);
  thrust::exclusive_scan(isFirst.begin(), isFirst.end(), rank.begin());
  thrust::exclusive_scan(isHead.begin(), isHead.end(), keyRank.begin());
  r.count = int32_t(rank.back() + isFirst.back());
  r.firstItem.resize(size_t(r.count));
  r.sortedKeys.resize(size_t(r.count));
  r.sortedSeqs.resize(size_t(r.count));
  const int32_t *rk = ptr(rank), *kr = ptr(keyRank);
  int32_t *seqOf = ptr(r.seqOf), *firstItem = ptr(r.firstItem), *sortedSeqs = ptr(r.sortedSeqs);
  int64_t* sortedKeys = ptr(r.sortedKeys);
  each(n, [=] __device__(size_t s) {
    if (k[s] < 0) return;
    int32_t seq = rk[it[head[s]]];
    seqOf[it[s]] = seq;
    if (head[s] == int32_t(s)) firstItem[seq] = it[s], sortedKeys[kr[s]] = k[s], sortedSeqs[kr[s]] = seq;
  });
  return r;
}

// The cell of `key` among sorted unique keys, or -1.
__device__ int32_t findCell(const int64_t* sortedKeys, const int32_t* sortedSeqs, int32_t count, int64_t key) {
  int32_t lo = 0, hi = count;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (sortedKeys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && sortedKeys[lo] == key ? sortedSeqs[lo] : -1;
}

struct Level {
  int resolution = 0, stride = 1;
  int32_t count = 0;
  DeviceVector<int64_t> keys, sortedKeys;
  DeviceVector<int32_t> normal, pixelSeq, neighbor, downsample, even, odd, sortedSeqs;
};

// The 3×3 neighbours of cell `seq` at `pos` read in the view facing its normal `dim` (grid_cells.h).
__device__ void neighborsOf(const Views& views, const int32_t* pixelSeq, const int64_t* keys, int resolution,
                            int stride, int seq, const float* pos, int dim, int boundary, int32_t* out) {
  const ViewShape v = views.v[dim];
  scanNeighbors(
      v.height, v.width, pos, dim, stride, seq,
      [&](int ni, int nj) {
        return pickLayer(v.layers, boundary, dim, pos[(dim + 2) % 3], keys, resolution,
                         [&](int l) { return pixelSeq[v.offset + (l * v.height + ni) * v.width + nj]; });
      },
      out);
}

// The pixel's view, layer, row and column.
struct PixelAt {
  int view, l, i, j;
};
__device__ PixelAt pixelAt(const Views& views, int32_t g) {
  int view = views.of(g);
  const ViewShape v = views.v[view];
  int32_t px = g - v.offset, plane = v.height * v.width;
  return {view, px / plane, px % plane / v.width, px % v.width};
}

// The original's visiting order (view, row, column, layer) of pixel g, or UINT_MAX when it holds no cell or lies
// behind a hole (the original stops reading a pixel's layers at the first empty one).
__device__ uint32_t visitOrder(const Views& views, const int32_t* seqs, int32_t g, PixelAt p) {
  const ViewShape v = views.v[p.view];
  const int32_t plane = v.height * v.width;
  for (int l = 0; l <= p.l; ++l)
    if (seqs[g - (p.l - l) * plane] < 0) return UINT_MAX;
  return uint32_t(v.offset) + uint32_t((p.i * v.width + p.j) * v.layers + p.l);
}

// Corner marks from every reachable occurrence (layers before the first hole), each cell's boundary kind from its
// first occurrence in the original's visiting order (view, row, column, layer), then the neighbours.
void link(const Views& views, int32_t pixels, Level& g) {
  const int32_t n = g.count;
  g.even.assign(size_t(n), 0);
  g.odd.assign(size_t(n), 0);
  DeviceVector<uint32_t> firstVisit(size_t(n), UINT_MAX);
  DeviceVector<int32_t> boundary(size_t(n), 2);  // 2: not visited
  const int32_t* seqs = ptr(g.pixelSeq);
  const int64_t* keys = ptr(g.keys);
  const int32_t* normal = ptr(g.normal);
  int32_t *even = ptr(g.even), *odd = ptr(g.odd), *bound = ptr(boundary);
  uint32_t* visit = ptr(firstVisit);
  const int resolution = g.resolution, stride = g.stride;
  each(size_t(pixels), [=] __device__(size_t gi) {
    PixelAt p = pixelAt(views, int32_t(gi));
    uint32_t order = visitOrder(views, seqs, int32_t(gi), p);
    if (order == UINT_MAX) return;
    int seq = seqs[gi], dim = normal[seq];
    float pos[3];
    cellPoint(keys[seq], resolution, pos);
    int8_t e = 0, o = 0;
    cornerMarks(pos, dim, views.v[p.view].height, views.v[p.view].width, stride, e, o);
    if (e) atomicOr(even + seq, 1);
    if (o) atomicOr(odd + seq, 1);
    atomicMin(visit + seq, order);
  });
  each(size_t(pixels), [=] __device__(size_t gi) {
    PixelAt p = pixelAt(views, int32_t(gi));
    uint32_t order = visitOrder(views, seqs, int32_t(gi), p);
    if (order == UINT_MAX || order != visit[seqs[gi]]) return;
    const ViewShape v = views.v[p.view];
    int seq = seqs[gi], layers = v.layers;
    bool edge = p.view == normal[seq] && (p.l == 0 || p.l == layers - 1 || seqs[gi + size_t(v.height) * v.width] == -1);
    bound[seq] = edge ? (p.l == 0 ? -1 : 1) : 0;
  });
  g.neighbor.assign(size_t(n) * 9, -1);
  int32_t* neighbor = ptr(g.neighbor);
  each(size_t(n), [=] __device__(size_t seq) {
    if (bound[seq] == 2) return;  // no reachable occurrence: the original never visits it either
    float pos[3];
    cellPoint(keys[seq], resolution, pos);
    neighborsOf(views, seqs, keys, resolution, stride, int(seq), pos, normal[seq], bound[seq], neighbor + seq * 9);
  });
}

void takeNumbering(Level& g, Numbering&& n) {
  g.count = n.count;
  g.sortedKeys = std::move(n.sortedKeys);
  g.sortedSeqs = std::move(n.sortedSeqs);
}

// The next level: parents numbered by first appearance over the children, normals by majority, pixel maps through
// the parent links.
void coarsen(Level& src, Level& tar) {
  tar.resolution = src.resolution / 2;
  tar.stride = src.stride * 2;
  const int64_t R = src.resolution, r = tar.resolution;
  DeviceVector<int64_t> parentKey(size_t(src.count));
  const int64_t* keys = ptr(src.keys);
  int64_t* parent = ptr(parentKey);
  each(size_t(src.count), [=] __device__(size_t i) {
    int64_t k = keys[i];
    parent[i] = ((k / R / R) / 2 * r + (k / R % R) / 2) * r + (k % R) / 2;
  });
  Numbering n = number(parentKey);
  src.downsample = n.seqOf;
  tar.keys.resize(size_t(n.count));
  tar.normal.resize(size_t(n.count));
  DeviceVector<int32_t> counts(size_t(n.count) * 3, 0);
  int64_t* tarKeys = ptr(tar.keys);
  const int32_t *first = ptr(n.firstItem), *down = ptr(src.downsample), *srcNormal = ptr(src.normal);
  int32_t *count = ptr(counts), *tarNormal = ptr(tar.normal);
  each(size_t(n.count), [=] __device__(size_t seq) { tarKeys[seq] = parent[first[seq]]; });
  each(size_t(src.count), [=] __device__(size_t i) { atomicAdd(count + down[i] * 3 + srcNormal[i], 1); });
  each(size_t(n.count), [=] __device__(size_t seq) { tarNormal[seq] = majority(count + seq * 3); });
  tar.pixelSeq.resize(src.pixelSeq.size());
  const int32_t* from = ptr(src.pixelSeq);
  int32_t* to = ptr(tar.pixelSeq);
  each(src.pixelSeq.size(), [=] __device__(size_t p) { to[p] = from[p] < 0 ? -1 : down[from[p]]; });
  takeNumbering(tar, std::move(n));
}

// Corner cells under coarse cells lacking an even or an odd corner child (coarse seq order, padded coarse cells
// included); new cells are numbered by their first coarse cell and read neighbours at their corner point.
void pad(const Views& views, Level& src, const Level& tar) {
  const int32_t fine = src.count, coarse = tar.count;
  DeviceVector<int32_t> evenMapped(size_t(coarse), 0), oddMapped(size_t(coarse), 0);
  int32_t *em = ptr(evenMapped), *om = ptr(oddMapped), *even = ptr(src.even), *odd = ptr(src.odd);
  const int32_t* down = ptr(src.downsample);
  each(size_t(fine), [=] __device__(size_t i) {
    if (even[i]) em[down[i]] = 1;
    if (odd[i]) om[down[i]] = 1;
  });
  // A corner key already among the fine cells marks that cell; the others become new cells.
  DeviceVector<int64_t> newKey(size_t(coarse), -1);
  int64_t* nk = ptr(newKey);
  const int64_t *tarKeys = ptr(tar.keys), *sortedKeys = ptr(src.sortedKeys);
  const int32_t* sortedSeqs = ptr(src.sortedSeqs);
  const int tarRes = tar.resolution, srcRes = src.resolution;
  const int32_t originals = int32_t(src.sortedKeys.size());
  each(size_t(coarse), [=] __device__(size_t i) {
    if (em[i] && om[i]) return;
    float p[3];
    cornerPoint(tarKeys[i], tarRes, p);
    int64_t key = cellKey(p, srcRes);
    int32_t seq = findCell(sortedKeys, sortedSeqs, originals, key);
    if (seq < 0) {
      nk[i] = key;
      return;
    }
    if (!em[i]) atomicOr(even + seq, 1);
    if (!om[i]) atomicOr(odd + seq, 1);
  });
  Numbering n = number(newKey);
  if (!n.count) return;
  const int32_t added = n.count, total = fine + added;
  src.keys.resize(size_t(total));
  src.normal.resize(size_t(total));
  src.downsample.resize(size_t(total));
  src.even.resize(size_t(total), 0);
  src.odd.resize(size_t(total), 0);
  src.neighbor.resize(size_t(total) * 9, -1);
  int64_t* keys = ptr(src.keys);
  int32_t *normal = ptr(src.normal), *downs = ptr(src.downsample), *neighbor = ptr(src.neighbor);
  even = ptr(src.even), odd = ptr(src.odd);
  const int32_t *seqOf = ptr(n.seqOf), *first = ptr(n.firstItem), *tarNormal = ptr(tar.normal),
                *seqs = ptr(src.pixelSeq);
  each(size_t(coarse), [=] __device__(size_t i) {
    if (seqOf[i] < 0) return;
    int32_t seq = fine + seqOf[i];
    if (!em[i]) atomicOr(even + seq, 1);
    if (!om[i]) atomicOr(odd + seq, 1);
  });
  const int stride = src.stride;
  each(size_t(added), [=] __device__(size_t a) {
    int32_t i = first[a], seq = fine + int32_t(a);
    float p[3];
    cornerPoint(tarKeys[i], tarRes, p);
    keys[seq] = cellKey(p, srcRes), normal[seq] = tarNormal[i], downs[seq] = i;
    // A padded cell's key never matches a pixel's, so the pixel maps (and these reads) never lead to one.
    neighborsOf(views, seqs, keys, srcRes, stride, seq, p, tarNormal[i], 0, neighbor + size_t(seq) * 9);
  });
  src.count = total;
}

template <typename T>
std::vector<int64_t> download64(const DeviceVector<T>& v) {
  std::vector<T> host(v.size());
  thrust::copy(v.begin(), v.end(), host.begin());
  return {host.begin(), host.end()};
}

GridHierarchy build(const std::vector<GridView>& hostViews, int levels, int resolution) {
  const uint32_t C = validateGridInput(hostViews, levels, resolution);
  Views views{};
  size_t pixels = 0;
  for (int v = 0; v < 3; ++v) {
    const GridView& h = hostViews[size_t(v)];
    views.v[v] = {int(h.layers), int(h.height), int(h.width), int32_t(pixels)};
    pixels += size_t(h.layers) * h.height * h.width;
  }
  ARM_CHECK(pixels < (size_t(1) << 31), "cuda::buildGridHierarchy: %zu view pixels exceed 2^31", pixels);
  // Only positions go to the device (every pixel's key); normals and features are read on the host at each cell's
  // first pixel, so the transfer is 16 bytes per pixel, not 28 + 4C.
  DeviceVector<float> pos(pixels * 4);
  for (int v = 0; v < 3; ++v)
    CUDA_CHECK(cudaMemcpy(ptr(pos) + size_t(views.v[v].offset) * 4, hostViews[size_t(v)].positions.data(),
                          hostViews[size_t(v)].positions.size() * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<Level> grids(static_cast<size_t>(levels));
  Level& g0 = grids[0];
  g0.resolution = resolution;
  // Level 0: a cell per distinct key, numbered by its first pixel.
  DeviceVector<int64_t> pixelKey(pixels);
  const float* p = ptr(pos);
  int64_t* key = ptr(pixelKey);
  each(pixels, [=] __device__(size_t g) { key[g] = p[g * 4 + 3] != 0 ? cellKey(p + g * 4, resolution) : -1; });
  Numbering n = number(pixelKey);
  const size_t origin = size_t(n.count);
  std::vector<int32_t> firstPixel(origin);
  thrust::copy(n.firstItem.begin(), n.firstItem.end(), firstPixel.begin());
  // The host's view of a pixel of the concatenation.
  auto hostPixel = [&](int32_t g) {
    int v = views.of(g);
    return std::pair<const GridView&, size_t>(hostViews[size_t(v)], size_t(g - views.v[v].offset));
  };
  std::vector<int32_t> normal(origin);
  for (size_t seq = 0; seq < origin; ++seq) {
    auto [view, px] = hostPixel(firstPixel[seq]);
    normal[seq] = normalAxis(&view.normals[px * 3]);
  }
  g0.pixelSeq = n.seqOf;
  g0.keys.resize(origin);
  g0.normal = normal;
  int64_t* keys = ptr(g0.keys);
  const int32_t* first = ptr(n.firstItem);
  each(origin, [=] __device__(size_t seq) { keys[seq] = key[first[seq]]; });
  takeNumbering(g0, std::move(n));
  for (size_t l = 0; l + 1 < grids.size(); ++l) coarsen(grids[l], grids[l + 1]);
  for (Level& g : grids) link(views, int32_t(pixels), g);
  for (int l = levels - 2; l >= 0; --l) pad(views, grids[size_t(l)], grids[size_t(l) + 1]);

  // Level 0's points: the first pixel's position and features; padded cells their centre and 0.5.
  GridHierarchy out;
  out.channels = C;
  const size_t n0 = size_t(g0.count);
  std::vector<int64_t> cellKeys = download64(g0.keys);
  out.positions.resize(n0 * 3);
  out.features.assign(n0 * C, 0.5f);
  out.isOriginal.assign(n0, 0.f);
  for (size_t seq = 0; seq < n0; ++seq) {
    if (seq >= origin) {
      cellPoint(cellKeys[seq], resolution, &out.positions[seq * 3]);
      continue;
    }
    auto [view, px] = hostPixel(firstPixel[seq]);
    std::copy_n(&view.positions[px * 4], 3, &out.positions[seq * 3]);
    std::copy_n(view.features.begin() + std::ptrdiff_t(px * C), C, out.features.begin() + std::ptrdiff_t(seq * C));
    out.isOriginal[seq] = 1.f;
  }
  appendLevelOutputs(out, grids, [](const auto& v) { return download64(v); });
  return out;
}
}  // namespace

GridHierarchy buildGridHierarchy(const std::vector<GridView>& views, int levels, int resolution) {
  if (auto why = unavailableReason()) throw Error("cuda::buildGridHierarchy: CUDA unavailable: " + *why);
  try {
    return build(views, levels, resolution);
  } catch (const thrust::system_error& e) {
    throw Error(std::string("cuda::buildGridHierarchy: ") + e.what());
  }
}

}  // namespace armature::cuda
