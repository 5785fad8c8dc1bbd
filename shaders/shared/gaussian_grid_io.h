// Culled Gaussian fields (GLSL and CUDA): each Gaussian's support is cut where max_c |w_c|·e^{−m/2} < ε, and the
// Gaussians are binned in a uniform grid built on the GPU, so that a point sums only the Gaussians of its cell.
//
// The grid is one buffer of 32-bit words (offsets in GaussianGridPush), built by gaussian_grid.comp's passes:
//   clear; prepare (per Gaussian: A', μ and the cut, its support's box into the grid's box and its size into a
//   histogram); plan (one invocation: the cell edge, from the 99th percentile of the sizes, grown until the cells
//   fit); count and fill (per Gaussian: the ≤ GAUSSIAN_GRID_SPAN³ cells its box covers, or the list of outsized
//   ones), with buckets.comp's scan between and its sort after (shared/buckets_io.h).
// The culled passes bin the points the same way into the buffer's point lists: the points' passes take them a
// workgroup's tile at a time (gaussian_culled_points.glsl), the Gaussians' walk their cells' points. Lists a sum
// walks are sorted by index after the (atomic) fill, so every sum has a fixed order: the same bits on every run.
#ifndef ARMATURE_GAUSSIAN_GRID_IO_H
#define ARMATURE_GAUSSIAN_GRID_IO_H
#include "gaussian_io.h"

#define GAUSSIAN_GRID_THREADS 256
#define GAUSSIAN_GRID_MAX_CELLS (1u << 20)   // cells at most
#define GAUSSIAN_GRID_HISTOGRAM_BINS 256     // log2 of a support's size in quarter steps, 2^-32 … 2^32
#define GAUSSIAN_GRID_OUTSIZED_PER_MILLE 10  // at most 1% of the Gaussians are too large for a cell
#define GAUSSIAN_GRID_HEADER_WORDS 16
// Cells a support spans per axis at most: the cell edge is the percentile's size / (GAUSSIAN_GRID_SPAN − 1). Smaller
// cells fit the supports' union tighter (a point walks fewer Gaussians it then cuts) for more entries per Gaussian.
#define GAUSSIAN_GRID_SPAN 3u
// Words per Gaussian: A' (6 floats, scaled as gaussian_io.h's), μ (3), the cut m' (prepare); its first cell and
// its reach (count: GAUSSIAN_REACH_*, or how many cells past the first along x, y, z: bits 0–1, 2–3, 4–5).
#define GAUSSIAN_PREPARED 12
#define GAUSSIAN_PREPARED_CUT 9
#define GAUSSIAN_PREPARED_FIRST_CELL 10
#define GAUSSIAN_PREPARED_REACH 11
#define GAUSSIAN_REACH_NONE 0x80000000u      // no support: culled everywhere
#define GAUSSIAN_REACH_OUTSIZED 0x40000000u  // in the list every point walks
#define GAUSSIAN_GRID_INFLATE 1.001f         // a support's box is widened by this: float roundings never cut a term

// Header words: the grid's box (order-preserving bits, for atomic min and max), the cell edge, the cells per axis,
// the Gaussians with any support.
#define GAUSSIAN_GRID_LO 0
#define GAUSSIAN_GRID_HI 3
#define GAUSSIAN_GRID_EDGE 6
#define GAUSSIAN_GRID_DIMS 7
#define GAUSSIAN_GRID_ACTIVE 10

// Passes (GaussianGridPush::mode).
#define GAUSSIAN_GRID_CLEAR 0u            // header, histogram and the Gaussians' counts
#define GAUSSIAN_GRID_PREPARE 1u          // per Gaussian
#define GAUSSIAN_GRID_PLAN 2u             // one invocation
#define GAUSSIAN_GRID_COUNT_GAUSSIANS 3u  // per Gaussian
#define GAUSSIAN_GRID_FILL_GAUSSIANS 4u
#define GAUSSIAN_GRID_CLEAR_POINTS 5u  // the points' counts
#define GAUSSIAN_GRID_COUNT_POINTS 6u  // per GAUSSIAN_GRID_POINTS_PER_INVOCATION points
#define GAUSSIAN_GRID_FILL_POINTS 7u
#define GAUSSIAN_GRID_BIN_POINTS 8u  // CUDA only: clear, count, scan and fill in one cooperative launch
// The points' count and fill: a workgroup takes GAUSSIAN_GRID_POINTS_PER_INVOCATION · GAUSSIAN_GRID_THREADS points.
// On a grid of at most GAUSSIAN_GRID_SHARED_CELLS cells it counts them in shared memory first and then adds each
// cell's count (count) or takes each cell's range (fill) with one atomic: a few thousand points to a cell would
// otherwise queue at the same few counters.
#define GAUSSIAN_GRID_POINTS_PER_INVOCATION 8u
#define GAUSSIAN_GRID_SHARED_CELLS 4096u
// Few points on a small layout: one workgroup bins them all in one dispatch (GAUSSIAN_GRID_BIN_FEW_POINTS), where the
// passes take six and the Gaussians' side two more to sort (CUDA: for the Gaussians' side; gaussian_grid.cpp). Each
// point's key, its cell then its index, is sorted in shared memory, so the lists come out sorted; each key that
// starts a cell's list writes the starts up to its cell.
#define GAUSSIAN_GRID_BIN_FEW_POINTS 9u
#define GAUSSIAN_GRID_FEW_POINTS (GAUSSIAN_GRID_THREADS * GAUSSIAN_GRID_POINTS_PER_INVOCATION)  // a power of two
#define GAUSSIAN_GRID_FEW_POINTS_CELLS 16384u  // the layout's cells at most (GaussianGridPush::cells)

#define GAUSSIAN_GRID_BINDING_POINTS 0    // float (B,3)
#define GAUSSIAN_GRID_BINDING_MEANS 1     // float (N,3)
#define GAUSSIAN_GRID_BINDING_CHOLESKY 2  // float (N,6|1)
#define GAUSSIAN_GRID_BINDING_WEIGHTS 3   // float (N,C)
#define GAUSSIAN_GRID_BINDING_GRID 4      // uint: the grid
#define GAUSSIAN_GRID_BINDINGS 5

// The culled passes (gaussian_culled_*.glsl): the grid's prepared Gaussians instead of means and cholesky.
#define GAUSSIAN_CULLED_BINDING_POINTS 0      // float (B,3)
#define GAUSSIAN_CULLED_BINDING_WEIGHTS 1     // float (N,C)
#define GAUSSIAN_CULLED_BINDING_GRAD_FIELD 2  // float (B,C) (backward)
#define GAUSSIAN_CULLED_BINDING_OUT 3         // float: the field, the points' gradient, or the Gaussians' rows
#define GAUSSIAN_CULLED_BINDING_GRID 4        // uint: the grid
#define GAUSSIAN_CULLED_BINDINGS 5
// The points' tiles (the field, the points' gradient): a workgroup takes GAUSSIAN_CULLED_TILE_POINTS consecutive
// binned points, GAUSSIAN_CULLED_TILE_LANES invocations a point, each lane summing every other staged Gaussian, the
// pair then adding its two sums: twice the invocations to hide the staging's and the sums' latency.
#define GAUSSIAN_CULLED_TILE_LANES 2u
#define GAUSSIAN_CULLED_TILE_POINTS (GAUSSIAN_THREADS / GAUSSIAN_CULLED_TILE_LANES)
// The Gaussians' side of the backward: GAUSSIAN_CULLED_SLOTS invocations share a Gaussian's points (its cells' lists
// end to end, slot k taking entries k, k + SLOTS, …), then add their partial sums in slot order.
#define GAUSSIAN_CULLED_SLOTS 32u
#define GAUSSIAN_CULLED_GAUSSIANS_PER_GROUP (GAUSSIAN_THREADS / GAUSSIAN_CULLED_SLOTS)
#define GAUSSIAN_CULLED_SPAN_CELLS (GAUSSIAN_GRID_SPAN * GAUSSIAN_GRID_SPAN * GAUSSIAN_GRID_SPAN)
// Before it, the binned points (the sorted lists, cell after cell: T = pointStarts[cells] entries) are gathered in
// that order with the field's gradient at each (gaussian_culled_gather.comp): `out` gets (x, y, z, 0) per entry,
// then from `gatheredGrads` its C gradients, so that the walk reads them contiguously. The Gaussians' pass binds
// those as its points and gradField.

ARM_SHARED_STRUCT(GaussianGridPush) {
  uint points, gaussians, channels, flags;  // flags: GAUSSIAN_ISOTROPIC
  uint cells;                               // the grid's cells at most; list `cells` holds the outsized Gaussians
  uint mode;
  float epsilon;
  uint histogram;  // word offsets into the grid, as are the rest
  uint gaussianCounts, gaussianStarts, gaussianEntries, prepared;
  uint pointCounts, pointStarts, pointEntries, blockSums;
  uint gatheredGrads;  // the gather pass: where the gradients start in `out` (floats)
  uint pad1;
};

#ifdef __cplusplus
static_assert(sizeof(GaussianGridPush) == 72);
#endif

// The cut, in the kernels' scaled distance m' (gaussian_io.h): a term counts where m' ≤ log2(max|w| / ε), i.e.
// where max_c |w_c|·e^{−m/2} ≥ ε. Negative: no support at all.
ARM_FN float gaussianCut(float weightMax, float epsilon) {
  return weightMax > epsilon ? log2(weightMax / epsilon) : -1.0f;
}

// Half the sides of the box around {m' ≤ cut}: the ellipsoid ‖L⁻¹d‖² ≤ R² reaches R·‖row k of L‖ along axis k.
ARM_FN void gaussianHalfExtents(GAUSSIAN_IN(raw, 6), uint isotropic, float cut, GAUSSIAN_OUT(h, 3)) {
  const float R = sqrt(cut * GAUSSIAN_UNSCALE) * GAUSSIAN_GRID_INFLATE;
  if (isotropic != 0u) {
    const float s = exp(gaussianClampLog(raw[0]));
    h[0] = R * s, h[1] = R * s, h[2] = R * s;
    return;
  }
  const float l00 = exp(gaussianClampLog(raw[0])), l11 = exp(gaussianClampLog(raw[2])),
              l22 = exp(gaussianClampLog(raw[5]));
  h[0] = R * l00;
  h[1] = R * sqrt(raw[1] * raw[1] + l11 * l11);
  h[2] = R * sqrt(raw[3] * raw[3] + raw[4] * raw[4] + l22 * l22);
}

// Float bits whose unsigned order is the floats' order (atomic min and max on the box), and back.
ARM_FN uint gaussianOrderedBits(float f) {
  const uint u = armFloatBits(f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}
ARM_FN float gaussianFromOrderedBits(uint u) { return armBitsFloat((u & 0x80000000u) != 0u ? (u & 0x7fffffffu) : ~u); }

// The histogram bin of a support's size (finite, ≥ 0).
ARM_FN uint gaussianSizeBin(float size) {
  if (!(size > 0.0f)) return 0u;
  const float b = floor(4.0f * log2(size)) + float(GAUSSIAN_GRID_HISTOGRAM_BINS / 2);
  return b < 0.0f ? 0u
                  : (b > float(GAUSSIAN_GRID_HISTOGRAM_BINS - 1) ? uint(GAUSSIAN_GRID_HISTOGRAM_BINS - 1) : uint(b));
}
// The upper end of bin b.
ARM_FN float gaussianBinTop(uint b) {
  return exp2((float(b) + 1.0f - float(GAUSSIAN_GRID_HISTOGRAM_BINS / 2)) * 0.25f);
}

// The cell along one axis of a coordinate v (finite): the same expression for points and for supports' corners,
// so a point inside a support's box lands in one of the box's cells.
ARM_FN uint gaussianGridAxis(float v, float lo, float edge, uint cells) {
  const float t = (v - lo) / edge;
  const uint i = t >= 0.0f ? (t < float(cells) ? uint(t) : cells - 1u) : 0u;
  return i < cells ? i : cells - 1u;
}

ARM_FN bool gaussianFinite3(float x, float y, float z) {
  return abs(x) <= 3.0e38f && abs(y) <= 3.0e38f && abs(z) <= 3.0e38f;  // false for inf and NaN
}

// A support's reach (GAUSSIAN_PREPARED_REACH) from the cells its box spans past the first along x, y, z (each < 4).
ARM_FN uint gaussianReach(uint pastX, uint pastY, uint pastZ) { return pastX | pastY << 2u | pastZ << 4u; }
// The cells of a box of that reach.
ARM_FN uint gaussianReachCells(uint reach) {
  return ((reach & 3u) + 1u) * ((reach >> 2u & 3u) + 1u) * ((reach >> 4u & 3u) + 1u);
}
// Its k-th cell (x fastest, then y, then z) in a grid of dimX × dimY × … cells, from its first cell.
ARM_FN uint gaussianReachCell(uint firstCell, uint reach, uint k, uint dimX, uint dimY) {
  const uint nx = (reach & 3u) + 1u, ny = (reach >> 2u & 3u) + 1u;
  return firstCell + (k / (nx * ny) * dimY + k / nx % ny) * dimX + k % nx;
}

#endif
