#version 450
// The culled Gaussian field's grid (shared/gaussian_grid_io.h): one of its passes per dispatch, chosen by p.mode
// (buckets.comp scans and sorts the lists).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_grid_io.h"

layout(local_size_x = GAUSSIAN_GRID_THREADS) in;
layout(std430, binding = GAUSSIAN_GRID_BINDING_MEANS) readonly buffer Means { float means[]; };
layout(std430, binding = GAUSSIAN_GRID_BINDING_CHOLESKY) readonly buffer Cholesky { float cholesky[]; };
layout(std430, binding = GAUSSIAN_GRID_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
#include "gaussian_grid_lookup.glsl"

shared uint sCellCounts[GAUSSIAN_GRID_SHARED_CELLS];  // the points' count and fill (gaussian_grid_io.h)

// The points' count (fill false) or fill: the workgroup's points, GAUSSIAN_GRID_THREADS apart.
void binPoints(bool fill) {
  const uint lid = gl_LocalInvocationID.x, cells = gridDim(0) * gridDim(1) * gridDim(2);
  const uint base = gl_WorkGroupID.x * GAUSSIAN_GRID_THREADS * GAUSSIAN_GRID_POINTS_PER_INVOCATION + lid;
  if (p.points == 0u) return;
  if (cells > GAUSSIAN_GRID_SHARED_CELLS) {  // the same for the whole workgroup
    for (uint k = 0u; k < GAUSSIAN_GRID_POINTS_PER_INVOCATION; ++k) {
      const uint b = base + k * GAUSSIAN_GRID_THREADS;
      uint cell;
      if (b >= p.points || !pointCell(b, cell)) continue;
      const uint slot = atomicAdd(grid[p.pointCounts + cell], 1u);
      if (fill) grid[p.pointEntries + slot] = b;
    }
    return;
  }
  for (uint c = lid; c < cells; c += GAUSSIAN_GRID_THREADS) sCellCounts[c] = 0u;
  // All the invocation's points read before the first atomic, so that their loads overlap.
  float x[GAUSSIAN_GRID_POINTS_PER_INVOCATION][3];
  [[unroll]] for (uint k = 0u; k < GAUSSIAN_GRID_POINTS_PER_INVOCATION; ++k) {
    const uint b = min(base + k * GAUSSIAN_GRID_THREADS, p.points - 1u);
    x[k] = float[3](points[b * 3u], points[b * 3u + 1u], points[b * 3u + 2u]);
  }
  barrier();
  uint pointCells[GAUSSIAN_GRID_POINTS_PER_INVOCATION], ranks[GAUSSIAN_GRID_POINTS_PER_INVOCATION];
  [[unroll]] for (uint k = 0u; k < GAUSSIAN_GRID_POINTS_PER_INVOCATION; ++k) {
    uint cell;
    pointCells[k] = 0xffffffffu, ranks[k] = 0u;
    if (base + k * GAUSSIAN_GRID_THREADS < p.points && cellOf(x[k], cell))
      pointCells[k] = cell, ranks[k] = atomicAdd(sCellCounts[cell], 1u);
  }
  barrier();
  for (uint c = lid; c < cells; c += GAUSSIAN_GRID_THREADS) {
    const uint n = sCellCounts[c];
    if (n != 0u) sCellCounts[c] = atomicAdd(grid[p.pointCounts + c], n);  // fill: the cell's range starts there
  }
  if (!fill) return;
  barrier();
  [[unroll]] for (uint k = 0u; k < GAUSSIAN_GRID_POINTS_PER_INVOCATION; ++k)
    if (pointCells[k] != 0xffffffffu)
      grid[p.pointEntries + sCellCounts[pointCells[k]] + ranks[k]] = base + k * GAUSSIAN_GRID_THREADS;
}

shared uint sKeys[GAUSSIAN_GRID_FEW_POINTS];  // GAUSSIAN_GRID_BIN_FEW_POINTS: cell · FEW_POINTS + index
shared uint sBinned;                          // the points on the grid: the first key off it

// All the points (at most GAUSSIAN_GRID_FEW_POINTS) binned by this one workgroup, each list sorted
// (gaussian_grid_io.h): their keys sorted by a bitonic network over the next power of two; then each key that starts
// a cell's list writes that cell's start and those of the empty cells before it.
void binFewPoints() {
  const uint lid = gl_LocalInvocationID.x, scale = GAUSSIAN_GRID_FEW_POINTS, off = 0xffffffffu;
  const uint n = p.points <= 2u ? 2u : 1u << uint(findMSB(p.points - 1u) + 1);  // a power of two, ≥ the points
  for (uint b = lid; b < n; b += GAUSSIAN_GRID_THREADS) {
    uint cell;
    sKeys[b] = b < p.points && pointCell(b, cell) ? cell * scale + b : off;  // off the grid: last
  }
  if (lid == 0u) sBinned = n;
  barrier();
  for (uint size = 2u; size <= n; size <<= 1u)
    for (uint stride = size >> 1u; stride > 0u; stride >>= 1u) {
      for (uint pair = lid; pair < n / 2u; pair += GAUSSIAN_GRID_THREADS) {
        const uint i = 2u * pair - (pair & (stride - 1u)), j = i + stride;
        const uint a = sKeys[i], b = sKeys[j];
        if ((a > b) == ((i & size) == 0u)) sKeys[i] = b, sKeys[j] = a;  // ascending where bit `size` of i is 0
      }
      barrier();
    }
  for (uint e = lid; e < n; e += GAUSSIAN_GRID_THREADS) {
    const uint key = sKeys[e], before = e > 0u ? sKeys[e - 1u] : off;
    if (key == off) {
      if (before != off) sBinned = e;
      if (e == 0u) sBinned = 0u;
      continue;
    }
    for (uint c = e > 0u ? before / scale + 1u : 0u; c <= key / scale; ++c) grid[p.pointStarts + c] = e;
    grid[p.pointEntries + e] = key % scale;
  }
  barrier();
  const uint binned = sBinned, after = binned > 0u ? sKeys[binned - 1u] / scale + 1u : 0u;
  for (uint c = after + lid; c <= p.cells; c += GAUSSIAN_GRID_THREADS) grid[p.pointStarts + c] = binned;
}

// Gaussian i's list: its cells' range per axis (in the grid), or false for the outsized list, or no support.
bool gaussianCells(uint i, out uint first[3], out uint last[3], out bool supported) {
  const float cut = uintBitsToFloat(grid[p.prepared + i * GAUSSIAN_PREPARED + GAUSSIAN_PREPARED_CUT]);
  supported = cut >= 0.0;
  first = uint[3](0u, 0u, 0u), last = uint[3](0u, 0u, 0u);
  if (!supported) return false;
  const uint paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
  float raw[6], h[3];
  for (uint k = 0u; k < 6u; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0;
  gaussianHalfExtents(raw, paramCount == 1u ? 1u : 0u, cut, h);
  const float lx = means[i * 3u] - h[0], ly = means[i * 3u + 1u] - h[1], lz = means[i * 3u + 2u] - h[2];
  const float hx = means[i * 3u] + h[0], hy = means[i * 3u + 1u] + h[1], hz = means[i * 3u + 2u] + h[2];
  const float edge = gridEdge();
  if (!gaussianFinite3(lx, ly, lz) || !gaussianFinite3(hx, hy, hz) || !(2.0 * max(h[0], max(h[1], h[2])) <= edge * float(GAUSSIAN_GRID_SPAN - 1u)))
    return false;
  const float lo[3] = float[3](lx, ly, lz), hi[3] = float[3](hx, hy, hz);
  for (uint k = 0u; k < 3u; ++k) {
    first[k] = gaussianGridAxis(lo[k], gridLo(k), edge, gridDim(k));
    last[k] = min(gaussianGridAxis(hi[k], gridLo(k), edge, gridDim(k)), first[k] + GAUSSIAN_GRID_SPAN - 1u);  // roundings
  }
  return true;
}

void main() {
  const uint t = gl_GlobalInvocationID.x;
  const uint mode = p.mode;
  if (mode == GAUSSIAN_GRID_CLEAR) {
    if (t < p.gaussianCounts + p.cells + 1u) grid[t] = t - GAUSSIAN_GRID_LO < 3u ? 0xffffffffu : 0u;
  } else if (mode == GAUSSIAN_GRID_CLEAR_POINTS) {
    if (t < p.cells) grid[p.pointCounts + t] = 0u;
  } else if (mode == GAUSSIAN_GRID_PREPARE) {
    if (t >= p.gaussians) return;
    const uint i = t, C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
    float raw[6], a[6], h[3];
    for (uint k = 0u; k < 6u; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0;
    gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
    float weightMax = 0.0;
    for (uint c = 0u; c < C; ++c) weightMax = max(weightMax, abs(weights[i * C + c]));
    const float cut = gaussianCut(weightMax, p.epsilon);
    const uint o = p.prepared + i * GAUSSIAN_PREPARED;
    for (uint k = 0u; k < 6u; ++k) grid[o + k] = floatBitsToUint(a[k] * GAUSSIAN_EXP2_SCALE);
    for (uint k = 0u; k < 3u; ++k) grid[o + 6u + k] = floatBitsToUint(means[i * 3u + k]);
    grid[o + GAUSSIAN_PREPARED_CUT] = floatBitsToUint(cut >= 0.0 ? cut : -1.0);  // NaN weights: no support
    if (!(cut >= 0.0)) return;
    gaussianHalfExtents(raw, paramCount == 1u ? 1u : 0u, cut, h);
    const float lo[3] = float[3](means[i * 3u] - h[0], means[i * 3u + 1u] - h[1], means[i * 3u + 2u] - h[2]);
    const float hi[3] = float[3](means[i * 3u] + h[0], means[i * 3u + 1u] + h[1], means[i * 3u + 2u] + h[2]);
    if (!gaussianFinite3(lo[0], lo[1], lo[2]) || !gaussianFinite3(hi[0], hi[1], hi[2])) return;  // outsized
    for (uint k = 0u; k < 3u; ++k) {
      atomicMin(grid[GAUSSIAN_GRID_LO + k], gaussianOrderedBits(lo[k]));
      atomicMax(grid[GAUSSIAN_GRID_HI + k], gaussianOrderedBits(hi[k]));
    }
    atomicAdd(grid[p.histogram + gaussianSizeBin(2.0 * max(h[0], max(h[1], h[2])))], 1u);
    atomicAdd(grid[GAUSSIAN_GRID_ACTIVE], 1u);
  } else if (mode == GAUSSIAN_GRID_PLAN) {
    if (t != 0u) return;
    const uint supportedCount = grid[GAUSSIAN_GRID_ACTIVE];
    if (supportedCount == 0u) {
      for (uint k = 0u; k < 3u; ++k) {
        grid[GAUSSIAN_GRID_LO + k] = gaussianOrderedBits(0.0), grid[GAUSSIAN_GRID_HI + k] = gaussianOrderedBits(0.0);
        grid[GAUSSIAN_GRID_DIMS + k] = 1u;
      }
      grid[GAUSSIAN_GRID_EDGE] = floatBitsToUint(1.0);
      return;
    }
    // The smallest bin top that holds all but GAUSSIAN_GRID_OUTSIZED_PER_MILLE of the supports.
    const uint wanted = supportedCount - supportedCount * GAUSSIAN_GRID_OUTSIZED_PER_MILLE / 1000u;
    uint bin = 0u;
    for (uint seen = 0u; bin < GAUSSIAN_GRID_HISTOGRAM_BINS - 1u; ++bin) {
      seen += grid[p.histogram + bin];
      if (seen >= wanted) break;
    }
    float edge = gaussianBinTop(bin) / float(GAUSSIAN_GRID_SPAN - 1u), d[3];
    // Grown until the cells fit (a non-finite extent makes the edge infinite: one cell).
    for (uint round = 0u; round < 64u; ++round) {
      for (uint k = 0u; k < 3u; ++k) {
        const float cells = (gaussianFromOrderedBits(grid[GAUSSIAN_GRID_HI + k]) - gridLo(k)) / edge;
        d[k] = cells >= 1.0 ? ceil(cells) : 1.0;
      }
      const float total = d[0] * d[1] * d[2];
      if (total <= float(p.cells)) break;
      edge *= max(1.001, pow(total / float(p.cells), 1.0 / 3.0) * 1.001);
    }
    grid[GAUSSIAN_GRID_EDGE] = floatBitsToUint(edge);
    for (uint k = 0u; k < 3u; ++k) grid[GAUSSIAN_GRID_DIMS + k] = uint(d[k]);
  } else if (mode == GAUSSIAN_GRID_COUNT_GAUSSIANS || mode == GAUSSIAN_GRID_FILL_GAUSSIANS) {
    if (t >= p.gaussians) return;
    uint first[3], last[3];
    bool supported;
    const bool inGrid = gaussianCells(t, first, last, supported);
    const uint o = p.prepared + t * GAUSSIAN_PREPARED;
    if (mode == GAUSSIAN_GRID_COUNT_GAUSSIANS) {
      grid[o + GAUSSIAN_PREPARED_FIRST_CELL] = (first[2] * gridDim(1) + first[1]) * gridDim(0) + first[0];
      grid[o + GAUSSIAN_PREPARED_REACH] = !supported ? GAUSSIAN_REACH_NONE
                                          : !inGrid  ? GAUSSIAN_REACH_OUTSIZED
                                                     : gaussianReach(last[0] - first[0], last[1] - first[1],
                                                                     last[2] - first[2]);
    }
    if (!supported) return;
    for (uint z = first[2]; z <= last[2]; ++z)
      for (uint y = first[1]; y <= last[1]; ++y)
        for (uint x = first[0]; x <= last[0]; ++x) {
          const uint list = inGrid ? (z * gridDim(1) + y) * gridDim(0) + x : p.cells;
          const uint slot = atomicAdd(grid[p.gaussianCounts + list], 1u);
          if (mode == GAUSSIAN_GRID_FILL_GAUSSIANS) grid[p.gaussianEntries + slot] = t;
        }
  } else if (mode == GAUSSIAN_GRID_COUNT_POINTS || mode == GAUSSIAN_GRID_FILL_POINTS) {
    binPoints(mode == GAUSSIAN_GRID_FILL_POINTS);
  } else if (mode == GAUSSIAN_GRID_BIN_FEW_POINTS) {
    binFewPoints();
  }
}
