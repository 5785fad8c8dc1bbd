#version 450
// Culled Gaussian field at points (shared/gaussian_grid_io.h): the field (GAUSSIAN_BACKWARD 0) or the point's
// gradient (1) over the Gaussians of its cell, then the outsized ones, each list in index order; a term counts where
// m' ≤ the Gaussian's cut. GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32).
// A workgroup takes GAUSSIAN_CULLED_TILE_POINTS consecutive entries of the grid's point lists (binned by cell, so its
// points lie in a few cells, in increasing order) and, for each of their cells in turn, then the outsized list,
// stages the list's Gaussians in shared memory a chunk at a time: each point's pair of invocations sums its own
// cell's and the outsized ones in list order, lane k taking entries k, k + 2, …, then the pair adds its two sums, the
// sums a pair alone would make, with loads the workgroup shares. Then the points TILE_POINTS · workgroup … +
// TILE_POINTS − 1 that are off the grid (beyond every cell's support) sum the outsized ones alone, by pairs too.
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
#define TILE_LANES GAUSSIAN_CULLED_TILE_LANES
#define TILE_POINTS GAUSSIAN_CULLED_TILE_POINTS
shared float sGaussians[GAUSSIAN_THREADS * TILE_WORDS];
shared float sWeights[GAUSSIAN_THREADS * MAXC];
#define RUN_WORDS ((TILE_POINTS + 31u) / 32u)
shared uint sCells[TILE_POINTS], sRunStarts[RUN_WORDS], sFirst[TILE_POINTS + 1u], sLast[TILE_POINTS + 1u];

// A list's Gaussians (entries first … last − 1), a chunk of GAUSSIAN_THREADS at a time, summed by the invocations
// where `mine`, each lane every TILE_LANES-th. The list is the same for the whole workgroup, so its barriers are in
// uniform control flow.
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
    for (uint j = lid % TILE_LANES; j < n; j += TILE_LANES) {
      float a[6], mean[3], w[MAXC];
      [[unroll]] for (uint k = 0u; k < 6u; ++k) a[k] = sGaussians[j * TILE_WORDS + k];
      [[unroll]] for (uint k = 0u; k < 3u; ++k) mean[k] = sGaussians[j * TILE_WORDS + 6u + k];
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[c] = sWeights[j * MAXC + c];
      addTerm(a, mean, sGaussians[j * TILE_WORDS + 9u], w);
    }
  }
}

// The first run of sCells starting at or after `from` (sRunStarts' bits), or TILE_POINTS.
uint nextRun(uint from) {
  for (uint w = from / 32u; w < RUN_WORDS; ++w) {
    const uint bits = sRunStarts[w] & (w == from / 32u ? 0xffffffffu << (from % 32u) : 0xffffffffu);
    if (bits != 0u) return w * 32u + uint(findLSB(bits));
  }
  return TILE_POINTS;
}

// Adds the partner lane's sums (invocation lid ^ 1, the point's other lane) to this one's, through shared memory
// (sWeights, free once the tile's sums are done): a + b in one lane and b + a in the other, the same bits. The whole
// workgroup calls it.
void addPartner() {
  const uint lid = gl_LocalInvocationID.x;
  barrier();  // the sums are done with sWeights and sGaussians
#if GAUSSIAN_BACKWARD
  [[unroll]] for (uint k = 0u; k < 3u; ++k) sGaussians[lid * 3u + k] = g3[k];
  barrier();
  [[unroll]] for (uint k = 0u; k < 3u; ++k) g3[k] += sGaussians[(lid ^ 1u) * 3u + k];
#else
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) sWeights[lid * MAXC + c] = acc[c];
  barrier();
  [[unroll]] for (uint c = 0u; c < MAXC; ++c) acc[c] += sWeights[(lid ^ 1u) * MAXC + c];
#endif
}

void main() {
  const uint lid = gl_LocalInvocationID.x, lane = lid % TILE_LANES, me = lid / TILE_LANES;
  const uint binned = grid[p.pointStarts + p.cells];  // the points on the grid
  const uint e = gl_WorkGroupID.x * TILE_POINTS + me;
  if (gl_WorkGroupID.x * TILE_POINTS < binned) {  // the whole workgroup
    const bool valid = e < binned;
    const uint b = valid ? grid[p.pointEntries + e] : 0u;
    startPoint(b);
    uint cell = 0u;
    if (valid) pointCell(b, cell);  // binned, so on the grid
    // The workgroup's entries are grouped by cell, cells ascending (the scan's starts), so its cells are runs of
    // sCells: each run's start is a bit of sRunStarts, and its list bounds (and the outsized list's, slot
    // TILE_POINTS) are loaded at once up front.
    if (lane == 0u) sCells[me] = valid ? cell : 0xffffffffu;
    if (lid < RUN_WORDS) sRunStarts[lid] = 0u;
    barrier();
    if (lane == 0u && valid && (me == 0u || sCells[me - 1u] != cell)) {
      atomicOr(sRunStarts[me / 32u], 1u << (me % 32u));
      sFirst[me] = grid[p.gaussianStarts + cell], sLast[me] = grid[p.gaussianStarts + cell + 1u];
    }
    if (lid == 1u) {
      sFirst[TILE_POINTS] = grid[p.gaussianStarts + p.cells];
      sLast[TILE_POINTS] = grid[p.gaussianStarts + p.cells + 1u];
    }
    barrier();
    for (uint j = nextRun(0u); j < TILE_POINTS; j = nextRun(j + 1u))
      sumStaged(sFirst[j], sLast[j], valid && cell == sCells[j]);
    sumStaged(sFirst[TILE_POINTS], sLast[TILE_POINTS], valid);  // the outsized Gaussians
    addPartner();
    if (valid && lane == 0u) finishPoint(b);
  }
  // The point with index e, if it is off the grid: the pair walks the outsized list, a Gaussian each in turn.
  const uint b = min(e, max(p.points, 1u) - 1u);
  uint cell;
  const bool offGrid = e < p.points && !pointCell(b, cell);
  startPoint(b);
  if (offGrid) {
    const uint first = grid[p.gaussianStarts + p.cells], last = grid[p.gaussianStarts + p.cells + 1u];
    for (uint k = first + lane; k < last; k += TILE_LANES) {
      float a[6], mean[3], cut, w[MAXC];
      loadGaussian(grid[p.gaussianEntries + k], a, mean, cut, w);
      addTerm(a, mean, cut, w);
    }
  }
  addPartner();
  if (offGrid && lane == 0u) finishPoint(b);
}
