#pragma once
// Pieces every grid hierarchy builder shares (the CPU reference, the CPU fast builder, CUDA): cell keys, cell
// centres and the view projection, with the original's exact float/double roundings (they decide which pixel a
// cell's neighbours are read from), and input validation. Host and device code; CUDA builds it with -fmad=false,
// as the host rounds every product and sum separately.
#include <math.h>

#include <cstdint>
#include <vector>

#include "armature/ops/grid_hierarchy.h"

#ifdef __CUDACC__
#define GRID_FN __host__ __device__ inline
#else
#define GRID_FN inline
#endif

namespace armature::grid {

// The cell of a coordinate in [-1, 1] at resolution R, computed in double as the original; +1 goes to cell R - 1.
GRID_FN int cellIndex(float p, int R) {
  int c = int((double(p) * 0.5 + 0.5) * R);
  return c < R ? c : R - 1;
}
GRID_FN int64_t cellKey(const float* p, int R) {
  return (int64_t(cellIndex(p[0], R)) * R + cellIndex(p[1], R)) * R + cellIndex(p[2], R);
}
// A point of cell `key` at fractional offsets inside it (0.5, 0.5, 0.5 = centre), rounded to float.
GRID_FN void cellPoint(int64_t key, int R, float* p, double ox = 0.5, double oy = 0.5, double oz = 0.5) {
  int64_t x = key / R / R, y = key / R % R, z = key % R;
  p[0] = float(((double(x) + ox) / R - 0.5) * 2);
  p[1] = float(((double(y) + oy) / R - 0.5) * 2);
  p[2] = float(((double(z) + oz) / R - 0.5) * 2);
}
// The corner point the original pads under a coarse cell.
GRID_FN void cornerPoint(int64_t key, int R, float* p) { cellPoint(key, R, p, 0.75, 0.25, 0.75); }
// The pixel (row ci, column cj) of a point in the view that faces axis `dim`.
GRID_FN void projectToView(const float* pos, int dim, int height, int width, int& ci, int& cj) {
  float a = dim == 2 ? -pos[2] : pos[1], b = dim == 1 ? pos[2] : pos[0];
  ci = int((double(a / 2) + 0.5) * height);
  cj = int((double(b / 2) + 0.5) * width);
}
// The dominant normal axis as the original codes it: (argmax |n| + 1) % 3, the first maximum winning.
GRID_FN int normalAxis(const float* n) {
  int dim = 0;
  for (int d = 1; d < 3; ++d)
    if (fabsf(n[d]) > fabsf(n[dim])) dim = d;
  return (dim + 1) % 3;
}
// The majority of the three counts, the first maximum winning.
GRID_FN int majority(const int* counts) {
  int t = 0;
  for (int j = 1; j < 3; ++j)
    if (counts[j] > counts[t]) t = j;
  return t;
}

// The 3×3 neighbours of a cell at `pos` in the view facing `dim` (rows top to bottom, `stride` pixels apart):
// the cell itself in the middle, -1 outside the image, read(row, column) elsewhere.
template <typename Read>
GRID_FN void scanNeighbors(int height, int width, const float* pos, int dim, int stride, int seq, Read read,
                           int32_t* out) {
  int ci, cj, k = 0;
  projectToView(pos, dim, height, width, ci, cj);
  for (int ni = ci + stride; ni >= ci - stride; ni -= stride)
    for (int nj = cj - stride; nj <= cj + stride; nj += stride) {
      bool inside = ni >= 0 && ni < height && nj >= 0 && nj < width;
      out[k++] = ni == ci && nj == cj ? seq : inside ? read(ni, nj) : -1;
    }
}

// The cell a neighbour pixel contributes, among its layers: boundary -1 the first layer, 1 the last before the
// first hole, 0 the one nearest to `depth` along the view axis (the first of equals). seqAt(l): the cell of layer l,
// -1 when empty — a hash lookup in the reference, an array read in the fast builder.
template <typename SeqAt>
GRID_FN int pickLayer(int layers, int boundary, int dim, float depth, const int64_t* keys, int R, SeqAt seqAt) {
  int idx = seqAt(0);
  if (boundary == -1) return idx;
  if (boundary == 1) {
    for (int l = 1; l < layers; ++l) {
      int next = seqAt(l);
      if (next == -1) break;
      idx = next;
    }
    return idx;
  }
  float best = 1e10f;
  idx = -1;
  for (int l = 0; l < layers; ++l) {
    int cand = seqAt(l);
    if (cand == -1) break;
    float p[3];
    cellPoint(keys[cand], R, p);
    float dist = fabsf(depth - p[(dim + 2) % 3]);
    if (dist < best) best = dist, idx = cand;
  }
  return idx;
}

// The original's even/odd corner marks of a cell at `pos` seen in a height × width view facing `dim`.
GRID_FN void cornerMarks(const float* pos, int dim, int height, int width, int stride, int8_t& even, int8_t& odd) {
  int ci, cj, s = stride;
  projectToView(pos, dim, height, width, ci, cj);
  if (ci % (s * 2) < s && cj % (s * 2) >= s) even = 1;
  if (ci % (s * 2) >= s && cj % (s * 2) < s) odd = 1;
}

// A builder's per-level outputs (each level has neighbor, even, odd and downsample arrays) into `out`, widened to
// int64 by `widen` (a copy on the host, a download from the device).
template <typename Levels, typename Widen>
void appendLevelOutputs(GridHierarchy& out, const Levels& grids, Widen widen) {
  for (size_t l = 0; l < grids.size(); ++l) {
    out.neighbors.push_back(widen(grids[l].neighbor));
    out.evenCorners.push_back(widen(grids[l].even));
    out.oddCorners.push_back(widen(grids[l].odd));
    if (l + 1 < grids.size()) out.downsamples.push_back(widen(grids[l].downsample));
  }
}

// The same for host levels (std::vector arrays).
template <typename Levels>
void appendLevelOutputs(GridHierarchy& out, const Levels& grids) {
  appendLevelOutputs(out, grids, [](const auto& v) { return std::vector<int64_t>(v.begin(), v.end()); });
}

// Throws armature::Error on a bad view set; returns the feature channel count (0 without features).
uint32_t validateGridInput(const std::vector<GridView>& views, int levels, int resolution);

}  // namespace armature::grid
