#pragma once
// Pieces both grid hierarchy builders share: cell keys, cell centres and the view projection, with the original's
// exact float/double roundings (they decide which pixel a cell's neighbours are read from), and input validation.
#include <cstdint>
#include <vector>

#include "armature/ops/grid_hierarchy.h"

namespace armature::grid {

// The cell of a coordinate in [-1, 1] at resolution R, computed in double as the original; +1 goes to cell R - 1.
inline int cellIndex(float p, int R) {
  int c = int((double(p) * 0.5 + 0.5) * R);
  return c < R ? c : R - 1;
}
inline int64_t cellKey(const float* p, int R) {
  return (int64_t(cellIndex(p[0], R)) * R + cellIndex(p[1], R)) * R + cellIndex(p[2], R);
}
// A point of cell `key` at fractional offsets inside it (0.5, 0.5, 0.5 = centre), rounded to float.
inline void cellPoint(int64_t key, int R, float* p, double ox = 0.5, double oy = 0.5, double oz = 0.5) {
  int64_t x = key / R / R, y = key / R % R, z = key % R;
  p[0] = float(((double(x) + ox) / R - 0.5) * 2);
  p[1] = float(((double(y) + oy) / R - 0.5) * 2);
  p[2] = float(((double(z) + oz) / R - 0.5) * 2);
}
// The corner point the original pads under a coarse cell.
inline void cornerPoint(int64_t key, int R, float* p) { cellPoint(key, R, p, 0.75, 0.25, 0.75); }
// The pixel (row ci, column cj) of a point in the view that faces axis `dim`.
inline void projectToView(const float* pos, int dim, int height, int width, int& ci, int& cj) {
  float a = dim == 2 ? -pos[2] : pos[1], b = dim == 1 ? pos[2] : pos[0];
  ci = int((double(a / 2) + 0.5) * height);
  cj = int((double(b / 2) + 0.5) * width);
}
// The dominant normal axis as the original codes it: (argmax |n| + 1) % 3, the first maximum winning.
inline int normalAxis(const float* n) {
  int dim = 0;
  for (int d = 1; d < 3; ++d)
    if (std::abs(n[d]) > std::abs(n[dim])) dim = d;
  return (dim + 1) % 3;
}
// The majority of the three counts, the first maximum winning.
inline int majority(const int* counts) {
  int t = 0;
  for (int j = 1; j < 3; ++j)
    if (counts[j] > counts[t]) t = j;
  return t;
}

// Throws armature::Error on a bad view set; returns the feature channel count (0 without features).
uint32_t validateGridInput(const std::vector<GridView>& views, int levels, int resolution);

}  // namespace armature::grid
