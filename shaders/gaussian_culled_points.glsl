#version 450
// Culled Gaussian field at points (shared/gaussian_grid_io.h): the field (GAUSSIAN_BACKWARD 0) or the point's
// gradient (1) over the Gaussians of its cell, then the outsized ones, each list in index order; a term counts where
// m' ≤ the Gaussian's cut. GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32).
// A workgroup takes GAUSSIAN_THREADS consecutive entries of the grid's point lists (binned by cell, so its points
// lie in a few cells, in increasing order) and, for each of their cells in turn, then the outsized list, stages the
// list's Gaussians in shared memory a chunk at a time: each point sums its own cell's and the outsized ones in list
// order, the sums a point alone would make, with loads the workgroup shares. Then the points GAUSSIAN_THREADS ·
// workgroup … + GAUSSIAN_THREADS − 1 that are off the grid (beyond every cell's support) sum the outsized ones alone.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_grid_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
#include "gaussian_culled_buffers.glsl"

float x[3];
#if GAUSSIAN_BACKWARD
float gradIn[MAXC], g3[3];
#else
float acc[MAXC];
#endif

// One Gaussian's term at the point: A' (scaled, gaussian_io.h), μ, the cut, its weights.
void addTerm(float a[6], float mean[3], float cut, float w[MAXC]) {
  float z[3];
  const float m = gaussianDistance(a, x[0] - mean[0], x[1] - mean[1], x[2] - mean[2], z);
  if (!(m <= cut)) return;
  const float g = gaussianTerm(m);
#if GAUSSIAN_BACKWARD
  float s = 0.0;
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) s += c < p.channels ? gradIn[c] * w[c] : 0.0;
  const float q2 = -g * s;  // 2·dLoss/dm
  g3[0] += q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]);
  g3[1] += q2 * (a[2] * z[1] + a[4] * z[2]);
  g3[2] += q2 * (a[5] * z[2]);
#else
  [[unroll]] for (uint c = 0u; c < MAXC; ++c)
    if (c < p.channels) acc[c] += w[c] * g;
#endif
}

// Gaussian i's prepared words (A', μ, the cut) and weights, from the grid and the weights' buffer.
void loadGaussian(uint i, out float a[6], out float mean[3], out float cut, out float w[MAXC]) {
  const uint o = p.prepared + i * GAUSSIAN_PREPARED;
  [[unroll]] for (uint k = 0u; k < 6u; ++k) a[k] = uintBitsToFloat(grid[o + k]);
  [[unroll]] for (uint k = 0u; k < 3u; ++k) mean[k] = uintBitsToFloat(grid[o + 6u + k]);
  cut = uintBitsToFloat(grid[o + GAUSSIAN_PREPARED_CUT]);
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[c] = c < p.channels ? weights[i * p.channels + c] : 0.0;
}

void startPoint(uint b) {
  const uint C = p.channels;
  x = float[3](points[b * 3u], points[b * 3u + 1u], points[b * 3u + 2u]);
#if GAUSSIAN_BACKWARD
  g3 = float[3](0.0, 0.0, 0.0);
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) gradIn[c] = c < C ? gradField[b * C + c] : 0.0;
#else
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) acc[c] = 0.0;
#endif
}

void finishPoint(uint b) {
#if GAUSSIAN_BACKWARD
  // A'ᵀz' is the unscaled Aᵀz times the scale's square.
  [[unroll]] for (uint k = 0u; k < 3u; ++k) outValues[b * 3u + k] = g3[k] * GAUSSIAN_UNSCALE;
#else
  [[unroll]] for (uint c = 0u; c < MAXC; ++c)
    if (c < p.channels) outValues[b * p.channels + c] = acc[c];
#endif
}

#define TILE_WORDS 10u  // a staged Gaussian: A' (6), μ (3), the cut
shared float sGaussians[GAUSSIAN_THREADS * TILE_WORDS];
shared float sWeights[GAUSSIAN_THREADS * MAXC];
#define RUN_WORDS ((GAUSSIAN_THREADS + 31u) / 32u)
shared uint sCells[GAUSSIAN_THREADS], sRunStarts[RUN_WORDS], sFirst[GAUSSIAN_THREADS + 1u],
    sLast[GAUSSIAN_THREADS + 1u];

// A list's Gaussians (entries first … last − 1), a chunk of GAUSSIAN_THREADS at a time, summed by the invocations
// where `mine`. The list is the same for the whole workgroup, so its barriers are in uniform control flow.
void sumStaged(uint first, uint last, bool mine) {
  const uint lid = gl_LocalInvocationID.x;
  for (uint base = first; base < last; base += GAUSSIAN_THREADS) {
    barrier();  // the last chunk is summed
    if (base + lid < last) {
      float a[6], mean[3], cut, w[MAXC];
      loadGaussian(grid[p.gaussianEntries + base + lid], a, mean, cut, w);
      [[unroll]] for (uint k = 0u; k < 6u; ++k) sGaussians[lid * TILE_WORDS + k] = a[k];
      [[unroll]] for (uint k = 0u; k < 3u; ++k) sGaussians[lid * TILE_WORDS + 6u + k] = mean[k];
      sGaussians[lid * TILE_WORDS + 9u] = cut;
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) sWeights[lid * MAXC + c] = w[c];
    }
    barrier();
    if (!mine) continue;
    const uint n = min(GAUSSIAN_THREADS, last - base);
    for (uint j = 0u; j < n; ++j) {
      float a[6], mean[3], w[MAXC];
      [[unroll]] for (uint k = 0u; k < 6u; ++k) a[k] = sGaussians[j * TILE_WORDS + k];
      [[unroll]] for (uint k = 0u; k < 3u; ++k) mean[k] = sGaussians[j * TILE_WORDS + 6u + k];
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[c] = sWeights[j * MAXC + c];
      addTerm(a, mean, sGaussians[j * TILE_WORDS + 9u], w);
    }
  }
}

// The first run of sCells starting at or after `from` (sRunStarts' bits), or GAUSSIAN_THREADS.
uint nextRun(uint from) {
  for (uint w = from / 32u; w < RUN_WORDS; ++w) {
    const uint bits = sRunStarts[w] & (w == from / 32u ? 0xffffffffu << (from % 32u) : 0xffffffffu);
    if (bits != 0u) return w * 32u + uint(findLSB(bits));
  }
  return GAUSSIAN_THREADS;
}

// Point b alone when it is off the grid: it sums the outsized Gaussians only.
void offGridPoint(uint b) {
  uint cell;
  if (b >= p.points || pointCell(b, cell)) return;
  startPoint(b);
  const uint first = grid[p.gaussianStarts + p.cells], last = grid[p.gaussianStarts + p.cells + 1u];
  for (uint e = first; e < last; ++e) {
    float a[6], mean[3], cut, w[MAXC];
    loadGaussian(grid[p.gaussianEntries + e], a, mean, cut, w);
    addTerm(a, mean, cut, w);
  }
  finishPoint(b);
}

void main() {
  const uint lid = gl_LocalInvocationID.x, binned = grid[p.pointStarts + p.cells];  // the points on the grid
  const uint e = gl_WorkGroupID.x * GAUSSIAN_THREADS + lid;
  if (gl_WorkGroupID.x * GAUSSIAN_THREADS < binned) {  // the whole workgroup
    const bool valid = e < binned;
    const uint b = valid ? grid[p.pointEntries + e] : 0u;
    startPoint(b);
    uint cell = 0u;
    if (valid) pointCell(b, cell);  // binned, so on the grid
    // The workgroup's entries are grouped by cell, cells ascending (the scan's starts), so its cells are runs of
    // sCells: each run's start is a bit of sRunStarts, and its list bounds (and the outsized list's, slot
    // GAUSSIAN_THREADS) are loaded at once up front.
    sCells[lid] = valid ? cell : 0xffffffffu;
    if (lid < RUN_WORDS) sRunStarts[lid] = 0u;
    barrier();
    if (valid && (lid == 0u || sCells[lid - 1u] != cell)) {
      atomicOr(sRunStarts[lid / 32u], 1u << (lid % 32u));
      sFirst[lid] = grid[p.gaussianStarts + cell], sLast[lid] = grid[p.gaussianStarts + cell + 1u];
    }
    if (lid == 0u) {
      sFirst[GAUSSIAN_THREADS] = grid[p.gaussianStarts + p.cells];
      sLast[GAUSSIAN_THREADS] = grid[p.gaussianStarts + p.cells + 1u];
    }
    barrier();
    for (uint j = nextRun(0u); j < GAUSSIAN_THREADS; j = nextRun(j + 1u))
      sumStaged(sFirst[j], sLast[j], valid && cell == sCells[j]);
    sumStaged(sFirst[GAUSSIAN_THREADS], sLast[GAUSSIAN_THREADS], valid);  // the outsized Gaussians
    if (valid) finishPoint(b);
  }
  offGridPoint(e);  // the point with this index, if it is off the grid
}
