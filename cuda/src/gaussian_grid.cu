// The culled Gaussian field on CUDA: the passes of shaders/gaussian_grid.comp, gaussian_culled_points.glsl and
// gaussian_culled_gaussians.glsl (shared/gaussian_grid_io.h), a thread per invocation, the same sums in the same
// order; cuda/src/buckets.cu scans and sorts the grid's lists.
#include <cooperative_groups.h>

#include <map>
#include <mutex>

#include "block_scan.h"
#include "check.h"
#include "launch.h"
#include "ops/gaussian_field_backend.h"
#include "shared/buckets_io.h"

namespace armature::cuda {
namespace {

namespace cg = cooperative_groups;

struct GridHeader {
  float lo[3], hi[3], edge;
  uint32_t dims[3];
  __device__ explicit GridHeader(const uint32_t* grid) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = gaussianFromOrderedBits(grid[GAUSSIAN_GRID_LO + k]);
      hi[k] = gaussianFromOrderedBits(grid[GAUSSIAN_GRID_HI + k]);
      dims[k] = grid[GAUSSIAN_GRID_DIMS + k];
    }
    edge = __uint_as_float(grid[GAUSSIAN_GRID_EDGE]);
  }
  // Point (x,y,z)'s cell, or false outside the box (no Gaussian of a cell reaches it).
  __device__ bool cellOf(const float x[3], uint32_t& cell) const {
    cell = 0;
    if (!gaussianFinite3(x[0], x[1], x[2])) return false;
    uint32_t index[3];
    for (int k = 0; k < 3; ++k) {
      if (!(x[k] >= lo[k] && x[k] <= hi[k])) return false;
      index[k] = gaussianGridAxis(x[k], lo[k], edge, dims[k]);
    }
    cell = (index[2] * dims[1] + index[1]) * dims[0] + index[0];
    return true;
  }
};

constexpr uint32_t kBinPer = GAUSSIAN_GRID_POINTS_PER_INVOCATION;

// The block's points (gaussian_grid.comp's binPoints: GAUSSIAN_GRID_THREADS apart, kBinPer a thread) added to
// `counters`: each point's cell (~0u off the grid) and its offset, the counter's value before its own addition. On a
// grid of at most GAUSSIAN_GRID_SHARED_CELLS cells the block counts in shared memory first and then takes each cell's
// range with one atomic.
__device__ void binBlockPoints(const float* __restrict__ points, const GridHeader& header, uint32_t* counters,
                               uint32_t count, uint32_t cell[kBinPer], uint32_t offset[kBinPer]) {
  __shared__ uint32_t sCellCounts[GAUSSIAN_GRID_SHARED_CELLS];
  const uint32_t lid = threadIdx.x, cells = header.dims[0] * header.dims[1] * header.dims[2];
  const uint32_t base = blockIdx.x * GAUSSIAN_GRID_THREADS * kBinPer + lid;
  const bool shared = cells <= GAUSSIAN_GRID_SHARED_CELLS;  // the same for the whole block
  if (shared)
    for (uint32_t c = lid; c < cells; c += GAUSSIAN_GRID_THREADS) sCellCounts[c] = 0;
  // All the thread's points read before the first atomic, so that their loads overlap.
  float x[kBinPer][3];
#pragma unroll
  for (uint32_t k = 0; k < kBinPer; ++k) {
    const uint32_t b = min(base + k * GAUSSIAN_GRID_THREADS, max(count, 1u) - 1);
    for (int d = 0; d < 3; ++d) x[k][d] = count > 0 ? points[size_t(b) * 3 + d] : 0.0f;
  }
  if (shared) __syncthreads();
#pragma unroll
  for (uint32_t k = 0; k < kBinPer; ++k) {
    uint32_t c;
    cell[k] = ~0u, offset[k] = 0;
    if (base + k * GAUSSIAN_GRID_THREADS < count && header.cellOf(x[k], c))
      cell[k] = c, offset[k] = atomicAdd(shared ? &sCellCounts[c] : &counters[c], 1u);
  }
  if (!shared) return;
  __syncthreads();
#pragma unroll 4  // the atomics of several cells in flight at once
  for (uint32_t c = lid; c < cells; c += GAUSSIAN_GRID_THREADS) {
    const uint32_t n = sCellCounts[c];
    if (n != 0) sCellCounts[c] = atomicAdd(&counters[c], n);
  }
  __syncthreads();
#pragma unroll
  for (uint32_t k = 0; k < kBinPer; ++k)
    if (cell[k] != ~0u) offset[k] += sCellCounts[cell[k]];
}

// The points' count (fill false: into the counts) or fill (at the cursors the scan left there).
__device__ void binPoints(const float* __restrict__ points, uint32_t* __restrict__ grid, const GaussianGridPush& p,
                          bool fill) {
  uint32_t cell[kBinPer], slot[kBinPer];
  binBlockPoints(points, GridHeader(grid), grid + p.pointCounts, p.points, cell, slot);
  const uint32_t base = blockIdx.x * GAUSSIAN_GRID_THREADS * kBinPer + threadIdx.x;
#pragma unroll
  for (uint32_t k = 0; k < kBinPer; ++k)
    if (fill && cell[k] != ~0u) grid[p.pointEntries + slot[k]] = base + k * GAUSSIAN_GRID_THREADS;
}

// All the points (at most GAUSSIAN_GRID_FEW_POINTS) binned by this one block, each list sorted (gaussian_grid.comp's
// binFewPoints): their keys sorted by a bitonic network over the next power of two; then each key that starts a
// cell's list writes that cell's start and those of the empty cells before it. A stage whose pairs, and the next
// stage's, lie within one warp's 64 keys (strides up to 32) is followed by a warp barrier only.
__device__ void binFewPoints(const float* __restrict__ points, uint32_t* __restrict__ grid, const GaussianGridPush& p) {
  constexpr uint32_t scale = GAUSSIAN_GRID_FEW_POINTS, off = ~0u;
  __shared__ uint32_t sKeys[GAUSSIAN_GRID_FEW_POINTS], sBinned;
  const GridHeader header(grid);
  const uint32_t lid = threadIdx.x;
  const uint32_t n = p.points <= 2 ? 2u : 1u << (32 - __clz(p.points - 1));  // a power of two, ≥ the points
  for (uint32_t b = lid; b < n; b += GAUSSIAN_GRID_THREADS) {
    uint32_t cell = 0;
    float x[3];
    for (int d = 0; d < 3; ++d) x[d] = b < p.points ? points[size_t(b) * 3 + d] : 0.0f;
    sKeys[b] = b < p.points && header.cellOf(x, cell) ? cell * scale + b : off;  // off the grid: last
  }
  if (lid == 0) sBinned = n;
  __syncthreads();
  for (uint32_t size = 2; size <= n; size <<= 1)
    for (uint32_t stride = size >> 1; stride > 0; stride >>= 1) {
      for (uint32_t pair = lid; pair < n / 2; pair += GAUSSIAN_GRID_THREADS) {
        const uint32_t i = 2 * pair - (pair & (stride - 1)), j = i + stride;
        const uint32_t a = sKeys[i], b = sKeys[j];
        if ((a > b) == ((i & size) == 0)) sKeys[i] = b, sKeys[j] = a;  // ascending where bit `size` of i is 0
      }
      const uint32_t next = stride > 1 ? stride >> 1 : size;  // the next stage's stride
      if (stride <= 32 && next <= 32)
        __syncwarp();
      else
        __syncthreads();
    }
  for (uint32_t e = lid; e < n; e += GAUSSIAN_GRID_THREADS) {
    const uint32_t key = sKeys[e], before = e > 0 ? sKeys[e - 1] : off;
    if (key == off) {
      if (before != off) sBinned = e;
      if (e == 0) sBinned = 0;
      continue;
    }
    for (uint32_t c = e > 0 ? before / scale + 1 : 0; c <= key / scale; ++c) grid[p.pointStarts + c] = e;
    grid[p.pointEntries + e] = key % scale;
  }
  __syncthreads();
  const uint32_t binned = sBinned, after = binned > 0 ? sKeys[binned - 1] / scale + 1 : 0;
  for (uint32_t c = after + lid; c <= p.cells; c += GAUSSIAN_GRID_THREADS) grid[p.pointStarts + c] = binned;
}

// The counts a thread of binPointsKernel's scan takes, and a block's chunk of them.
constexpr uint32_t kScanPer = 8, kScanChunk = kScanPer * GAUSSIAN_GRID_THREADS;

// Chunk `chunk`'s starts (of the grid's `used` cells), after `before` points in the chunks before it; returns the
// chunk's total. The whole block calls it.
__device__ uint32_t scanChunk(const uint32_t* counts, uint32_t* starts, uint32_t used, uint32_t chunk,
                              uint32_t before) {
  const uint32_t first = chunk * kScanChunk + threadIdx.x * kScanPer;
  uint32_t v[kScanPer], sum = 0, total;
#pragma unroll
  for (uint32_t k = 0; k < kScanPer; ++k) v[k] = first + k < used ? counts[first + k] : 0u, sum += v[k];
  uint32_t running = before + blockExclusiveScan<GAUSSIAN_GRID_THREADS>(sum, total);
#pragma unroll
  for (uint32_t k = 0; k < kScanPer; ++k) {
    if (first + k < used) starts[first + k] = running;
    running += v[k];
  }
  return total;
}

// CUDA's binning of the points in one cooperative launch (GAUSSIAN_GRID_BIN_POINTS): the clear, the count, the
// bucket scan and the fill of gaussian_grid.cpp's passes, the blocks meeting at grid barriers instead of at five
// kernels' ends. Each block bins the points binPoints gives it once and keeps their cells and offsets across the
// barriers, so the host launches it only where the GPU holds every block at once. Only the grid's used cells (the
// header's dims) are counted and scanned: up to kScanChunk of them by one block, more in chunks (each chunk's sum, a
// barrier, then the starts); up to one chunk every block scans them itself, so that no barrier waits for one block's
// scan. The rest of the layout's starts get the total, so every list past them is empty. The counts are left as
// counts, not cursors (nothing reads them after). Four blocks an SM keep ptxas within 64 registers, so that a
// million points' 489 blocks fit on an H200 at once.
__global__ void __launch_bounds__(GAUSSIAN_GRID_THREADS, 4)
    binPointsKernel(const float* __restrict__ points, uint32_t* __restrict__ grid, GaussianGridPush p) {
  releaseNext();  // the tiles may launch (they wait for this kernel's end)
  __shared__ uint32_t sStarts[kScanChunk];
  const cg::grid_group all = cg::this_grid();
  const GridHeader header(grid);
  const uint32_t lid = threadIdx.x, used = header.dims[0] * header.dims[1] * header.dims[2];
  const uint32_t chunks = (used + kScanChunk - 1) / kScanChunk;
  uint32_t* counts = grid + p.pointCounts;
  uint32_t* starts = grid + p.pointStarts;
  for (size_t c = all.thread_rank(); c < used; c += all.size()) counts[c] = 0;
  all.sync();
  uint32_t cell[kBinPer], offset[kBinPer];  // offset: among the cell's points
  binBlockPoints(points, header, counts, p.points, cell, offset);
  all.sync();
  const uint32_t base = blockIdx.x * GAUSSIAN_GRID_THREADS * kBinPer + lid;
  const uint32_t* cellStarts = starts;  // where the fill reads each cell's start: shared with one chunk
  uint32_t binned;
  if (chunks == 1) {
    binned = scanChunk(counts, sStarts, used, 0, 0);
    __syncthreads();
    if (blockIdx.x == 0) {
      for (uint32_t c = lid; c < used; c += GAUSSIAN_GRID_THREADS) starts[c] = sStarts[c];
      if (lid == 0) starts[used] = binned;
    }
    cellStarts = sStarts;
  } else {
    // Each chunk's sum, then each chunk's starts after the sums of the chunks before it.
    for (uint32_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
      uint32_t sum = 0, total;
      for (uint32_t c = chunk * kScanChunk + lid; c < min(used, (chunk + 1) * kScanChunk); c += GAUSSIAN_GRID_THREADS)
        sum += counts[c];
      blockExclusiveScan<GAUSSIAN_GRID_THREADS>(sum, total);
      if (lid == 0) grid[p.blockSums + chunk] = total;
    }
    all.sync();
    for (uint32_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
      uint32_t partial = 0, before, total;
      for (uint32_t j = lid; j < chunk; j += GAUSSIAN_GRID_THREADS) partial += grid[p.blockSums + j];
      blockExclusiveScan<GAUSSIAN_GRID_THREADS>(partial, before);
      total = scanChunk(counts, starts, used, chunk, before);
      if (chunk == chunks - 1 && lid == 0) starts[used] = before + total;
    }
    all.sync();
    binned = starts[used];
  }
  for (size_t c = used + 1 + all.thread_rank(); c <= p.cells; c += all.size()) starts[c] = binned;
#pragma unroll
  for (uint32_t k = 0; k < kBinPer; ++k)
    if (cell[k] != ~0u) grid[p.pointEntries + cellStarts[cell[k]] + offset[k]] = base + k * GAUSSIAN_GRID_THREADS;
}

__global__ void __launch_bounds__(GAUSSIAN_GRID_THREADS)
    gridKernel(const float* __restrict__ points, const float* __restrict__ means, const float* __restrict__ cholesky,
               const float* __restrict__ weights, uint32_t* __restrict__ grid, GaussianGridPush p) {
  const uint32_t t = blockIdx.x * GAUSSIAN_GRID_THREADS + threadIdx.x, mode = p.mode;
  const uint32_t paramCount = (p.flags & GAUSSIAN_ISOTROPIC) ? 1u : 6u;
  if (mode == GAUSSIAN_GRID_CLEAR) {
    if (t < p.gaussianCounts + p.cells + 1) grid[t] = t - GAUSSIAN_GRID_LO < 3u ? ~0u : 0u;
  } else if (mode == GAUSSIAN_GRID_CLEAR_POINTS) {
    if (t < p.cells) grid[p.pointCounts + t] = 0;
  } else if (mode == GAUSSIAN_GRID_PREPARE) {
    if (t >= p.gaussians) return;
    const uint32_t i = t, C = p.channels;
    float raw[6], a[6], h[3];
    for (uint32_t k = 0; k < 6; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0f;
    gaussianInverse(raw, paramCount == 1 ? 1u : 0u, a);
    float weightMax = 0.0f;
    for (uint32_t c = 0; c < C; ++c) weightMax = fmaxf(weightMax, fabsf(weights[i * C + c]));
    const float cut = gaussianCut(weightMax, p.epsilon);
    uint32_t* o = grid + p.prepared + size_t(i) * GAUSSIAN_PREPARED;
    for (int k = 0; k < 6; ++k) o[k] = __float_as_uint(a[k] * GAUSSIAN_EXP2_SCALE);
    for (int k = 0; k < 3; ++k) o[6 + k] = __float_as_uint(means[i * 3 + k]);
    o[GAUSSIAN_PREPARED_CUT] = __float_as_uint(cut >= 0.0f ? cut : -1.0f);  // NaN weights: no support
    if (!(cut >= 0.0f)) return;
    gaussianHalfExtents(raw, paramCount == 1 ? 1u : 0u, cut, h);
    float lo[3], hi[3];
    for (int k = 0; k < 3; ++k) lo[k] = means[i * 3 + k] - h[k], hi[k] = means[i * 3 + k] + h[k];
    if (!gaussianFinite3(lo[0], lo[1], lo[2]) || !gaussianFinite3(hi[0], hi[1], hi[2])) return;  // outsized
    for (int k = 0; k < 3; ++k) {
      atomicMin(&grid[GAUSSIAN_GRID_LO + k], gaussianOrderedBits(lo[k]));
      atomicMax(&grid[GAUSSIAN_GRID_HI + k], gaussianOrderedBits(hi[k]));
    }
    atomicAdd(&grid[p.histogram + gaussianSizeBin(2.0f * fmaxf(h[0], fmaxf(h[1], h[2])))], 1u);
    atomicAdd(&grid[GAUSSIAN_GRID_ACTIVE], 1u);
  } else if (mode == GAUSSIAN_GRID_PLAN) {
    if (t != 0) return;
    const uint32_t supported = grid[GAUSSIAN_GRID_ACTIVE];
    if (supported == 0) {
      for (int k = 0; k < 3; ++k) {
        grid[GAUSSIAN_GRID_LO + k] = grid[GAUSSIAN_GRID_HI + k] = gaussianOrderedBits(0.0f);
        grid[GAUSSIAN_GRID_DIMS + k] = 1;
      }
      grid[GAUSSIAN_GRID_EDGE] = __float_as_uint(1.0f);
      return;
    }
    // The smallest bin top that holds all but GAUSSIAN_GRID_OUTSIZED_PER_MILLE of the supports.
    const uint32_t wanted = supported - supported * GAUSSIAN_GRID_OUTSIZED_PER_MILLE / 1000u;
    uint32_t bin = 0;
    for (uint32_t seen = 0; bin < GAUSSIAN_GRID_HISTOGRAM_BINS - 1; ++bin) {
      seen += grid[p.histogram + bin];
      if (seen >= wanted) break;
    }
    float edge = gaussianBinTop(bin) / float(GAUSSIAN_GRID_SPAN - 1), d[3];
    // Grown until the cells fit (a non-finite extent makes the edge infinite: one cell).
    for (int round = 0; round < 64; ++round) {
      for (int k = 0; k < 3; ++k) {
        const float cells = (gaussianFromOrderedBits(grid[GAUSSIAN_GRID_HI + k]) -
                             gaussianFromOrderedBits(grid[GAUSSIAN_GRID_LO + k])) /
                            edge;
        d[k] = cells >= 1.0f ? ceilf(cells) : 1.0f;
      }
      const float total = d[0] * d[1] * d[2];
      if (total <= float(p.cells)) break;
      edge *= fmaxf(1.001f, powf(total / float(p.cells), 1.0f / 3.0f) * 1.001f);
    }
    grid[GAUSSIAN_GRID_EDGE] = __float_as_uint(edge);
    for (int k = 0; k < 3; ++k) grid[GAUSSIAN_GRID_DIMS + k] = uint32_t(d[k]);
  } else if (mode == GAUSSIAN_GRID_COUNT_GAUSSIANS || mode == GAUSSIAN_GRID_FILL_GAUSSIANS) {
    if (t >= p.gaussians) return;
    uint32_t* o = grid + p.prepared + size_t(t) * GAUSSIAN_PREPARED;
    const float cut = __uint_as_float(o[GAUSSIAN_PREPARED_CUT]);
    const bool supported = cut >= 0.0f;
    const GridHeader header(grid);
    uint32_t first[3] = {0, 0, 0}, last[3] = {0, 0, 0};
    bool inGrid = false;
    if (supported) {
      float raw[6], h[3], lo[3], hi[3];
      for (uint32_t k = 0; k < 6; ++k) raw[k] = k < paramCount ? cholesky[t * paramCount + k] : 0.0f;
      gaussianHalfExtents(raw, paramCount == 1 ? 1u : 0u, cut, h);
      for (int k = 0; k < 3; ++k) lo[k] = means[t * 3 + k] - h[k], hi[k] = means[t * 3 + k] + h[k];
      inGrid = gaussianFinite3(lo[0], lo[1], lo[2]) && gaussianFinite3(hi[0], hi[1], hi[2]) &&
               2.0f * fmaxf(h[0], fmaxf(h[1], h[2])) <= header.edge * float(GAUSSIAN_GRID_SPAN - 1);
      for (int k = 0; inGrid && k < 3; ++k) {
        first[k] = gaussianGridAxis(lo[k], header.lo[k], header.edge, header.dims[k]);
        last[k] = min(gaussianGridAxis(hi[k], header.lo[k], header.edge, header.dims[k]),
                      first[k] + GAUSSIAN_GRID_SPAN - 1);  // roundings
      }
    }
    if (mode == GAUSSIAN_GRID_COUNT_GAUSSIANS) {
      o[GAUSSIAN_PREPARED_FIRST_CELL] = (first[2] * header.dims[1] + first[1]) * header.dims[0] + first[0];
      o[GAUSSIAN_PREPARED_REACH] = !supported ? GAUSSIAN_REACH_NONE
                                   : !inGrid
                                       ? GAUSSIAN_REACH_OUTSIZED
                                       : gaussianReach(last[0] - first[0], last[1] - first[1], last[2] - first[2]);
    }
    if (!supported) return;
    for (uint32_t z = first[2]; z <= last[2]; ++z)
      for (uint32_t y = first[1]; y <= last[1]; ++y)
        for (uint32_t x = first[0]; x <= last[0]; ++x) {
          const uint32_t list = inGrid ? (z * header.dims[1] + y) * header.dims[0] + x : p.cells;
          const uint32_t slot = atomicAdd(&grid[p.gaussianCounts + list], 1u);
          if (mode == GAUSSIAN_GRID_FILL_GAUSSIANS) grid[p.gaussianEntries + slot] = t;
        }
  } else if (mode == GAUSSIAN_GRID_COUNT_POINTS || mode == GAUSSIAN_GRID_FILL_POINTS) {
    binPoints(points, grid, p, mode == GAUSSIAN_GRID_FILL_POINTS);
  } else if (mode == GAUSSIAN_GRID_BIN_FEW_POINTS) {
    binFewPoints(points, grid, p);
  }
}

// The prepared Gaussian i of the grid: A' (scaled), μ and the cut, read as three 16-byte words (the layout aligns
// the prepared words to 16 bytes): A' 0–3; A' 4–5, μ 0–1; μ 2, the cut, the first cell, the reach.
struct Prepared {
  float4 w[3];
  __device__ Prepared(const uint32_t* grid, const GaussianGridPush& p, uint32_t i) {
    const float4* o = reinterpret_cast<const float4*>(grid + p.prepared + size_t(i) * GAUSSIAN_PREPARED);
    for (int k = 0; k < 3; ++k) w[k] = o[k];
  }
  __device__ explicit Prepared(const float4* staged) {
    for (int k = 0; k < 3; ++k) w[k] = staged[k];
  }
  __device__ void unpack(float a[6], float mean[3], float& cut) const {
    a[0] = w[0].x, a[1] = w[0].y, a[2] = w[0].z, a[3] = w[0].w, a[4] = w[1].x, a[5] = w[1].y;
    mean[0] = w[1].z, mean[1] = w[1].w, mean[2] = w[2].x, cut = w[2].y;
  }
};

// One point's sum over Gaussians (gaussian_culled_points.glsl): the field, or (BACKWARD) the point's gradient.
template <int MAXC, bool BACKWARD>
struct PointSum {
  float x[3], acc[MAXC], g3[3] = {0.0f, 0.0f, 0.0f};  // acc: the field, or the field's gradient (backward)
  uint32_t C;
  __device__ PointSum(const float* points, const float* gradField, uint32_t b, uint32_t channels) : C(channels) {
    for (int k = 0; k < 3; ++k) x[k] = points[size_t(b) * 3 + k];
#pragma unroll
    for (int c = 0; c < MAXC; ++c) acc[c] = BACKWARD && c < C ? gradField[size_t(b) * C + c] : 0.0f;
  }
  // One Gaussian's term: A' (scaled, gaussian_io.h), μ, the cut, its weights (w[c], c < C). Without a branch: in
  // a warp some lane nearly always passes the cut, and the selects keep the sums a skipped term would leave.
  __device__ void add(const float a[6], const float mean[3], float cut, const float* w) {
    float z[3];
    const float m = gaussianDistance(a, x[0] - mean[0], x[1] - mean[1], x[2] - mean[2], z);
    const bool inside = m <= cut;
    const float term = gaussianTerm(m);
    if constexpr (BACKWARD) {
      float s = 0.0f;
#pragma unroll
      for (int c = 0; c < MAXC; ++c) s += c < C ? acc[c] * w[c] : 0.0f;
      const float q2 = -term * s;  // 2·dLoss/dm
      const float g[3] = {q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]), q2 * (a[2] * z[1] + a[4] * z[2]),
                          q2 * (a[5] * z[2])};
      for (int k = 0; k < 3; ++k) g3[k] = inside ? g3[k] + g[k] : g3[k];
    } else {
#pragma unroll
      for (int c = 0; c < MAXC; ++c)
        if (c < C) acc[c] = inside ? acc[c] + w[c] * term : acc[c];
    }
  }
  __device__ void add(const Prepared& g, const float* w) {
    float a[6], mean[3], cut;
    g.unpack(a, mean, cut);
    add(a, mean, cut, w);
  }
  // Adds the sums of the partner lane (lane ^ 1) of a pair that shares the point: the same bits in both lanes.
  __device__ void addPartner() {
    if constexpr (BACKWARD) {
      for (int k = 0; k < 3; ++k) g3[k] += __shfl_xor_sync(0xffffffffu, g3[k], 1);
    } else {
#pragma unroll
      for (int c = 0; c < MAXC; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], 1);
    }
  }
  __device__ void write(float* out, uint32_t b) const {
    if constexpr (BACKWARD) {
      // A'ᵀz' is the unscaled Aᵀz times the scale's square.
      for (int k = 0; k < 3; ++k) out[size_t(b) * 3 + k] = g3[k] * GAUSSIAN_UNSCALE;
    } else {
#pragma unroll
      for (int c = 0; c < MAXC; ++c)
        if (c < C) out[size_t(b) * C + c] = acc[c];
    }
  }
};

// The tiles' points (gaussian_grid_io.h): a pair of threads a point, whose two sums add to the same bits in either.
constexpr uint32_t kTileLanes = GAUSSIAN_CULLED_TILE_LANES, kTilePoints = GAUSSIAN_CULLED_TILE_POINTS;
static_assert(kTileLanes == 2, "PointSum::addPartner adds lane ^ 1's sums");

// A block per kTilePoints consecutive binned points (gaussian_culled_points.glsl's tiles), a pair of threads a point:
// for each of their cells in increasing order, then the outsized list, the list's Gaussians staged in shared
// memory a chunk at a time, each point summing its own cell's and the outsized ones in list order. Then the points
// kTilePoints · block … + kTilePoints − 1 that are off the grid sum the outsized ones alone.
template <int MAXC, bool BACKWARD>
__global__ void __launch_bounds__(GAUSSIAN_THREADS)
    culledTilesKernel(const float* __restrict__ points, const float* __restrict__ weights,
                      const float* __restrict__ gradField, float* __restrict__ out, const uint32_t* __restrict__ grid,
                      GaussianGridPush p) {
  __shared__ float4 sGaussians[GAUSSIAN_THREADS][3];  // Prepared's words
  __shared__ float sWeights[GAUSSIAN_THREADS * MAXC];
  __shared__ uint32_t sCells[kTilePoints], sRunStarts[kTilePoints / 32], sFirst[kTilePoints + 1],
      sLast[kTilePoints + 1];
  waitForPrevious();  // the points binned (launched as a dependent of the binning)
  const uint32_t lid = threadIdx.x, lane = lid % kTileLanes, binned = grid[p.pointStarts + p.cells], C = p.channels;
  const uint32_t e = blockIdx.x * kTilePoints + lid / kTileLanes;
  if (blockIdx.x * kTilePoints < binned) {  // the whole block
    const bool valid = e < binned;
    const uint32_t b = valid ? grid[p.pointEntries + e] : 0;
    PointSum<MAXC, BACKWARD> sum(points, gradField, b, C);
    uint32_t cell = 0;
    if (valid) GridHeader(grid).cellOf(sum.x, cell);  // binned, so on the grid
    auto sumStaged = [&](uint32_t first, uint32_t last, bool mine) {
      for (uint32_t base = first; base < last; base += GAUSSIAN_THREADS) {
        __syncthreads();  // the last chunk is summed
        if (base + lid < last) {
          const uint32_t i = grid[p.gaussianEntries + base + lid];
          const Prepared g(grid, p, i);
          for (int k = 0; k < 3; ++k) sGaussians[lid][k] = g.w[k];
#pragma unroll
          for (int c = 0; c < MAXC; ++c) sWeights[lid * MAXC + c] = c < int(C) ? weights[size_t(i) * C + c] : 0.0f;
        }
        __syncthreads();
        if (!mine) continue;
        const uint32_t n = min(uint32_t(GAUSSIAN_THREADS), last - base);
#pragma unroll 4
        for (uint32_t j = lane; j < n; j += kTileLanes) sum.add(Prepared(sGaussians[j]), &sWeights[j * MAXC]);
      }
    };
    // The block's entries are grouped by cell, cells ascending (the scan's starts), so its cells are runs of
    // sCells: each run's start is a bit of sRunStarts, and its list bounds (and the outsized list's, slot
    // kTilePoints) are loaded at once up front.
    const uint32_t me = lid / kTileLanes;
    if (lane == 0) sCells[me] = valid ? cell : ~0u;
    if (lid < kTilePoints / 32) sRunStarts[lid] = 0;
    __syncthreads();
    if (lane == 0 && valid && (me == 0 || sCells[me - 1] != cell)) {
      atomicOr(&sRunStarts[me / 32], 1u << (me % 32));
      sFirst[me] = grid[p.gaussianStarts + cell], sLast[me] = grid[p.gaussianStarts + cell + 1];
    }
    if (lid == 1)
      sFirst[kTilePoints] = grid[p.gaussianStarts + p.cells], sLast[kTilePoints] = grid[p.gaussianStarts + p.cells + 1];
    __syncthreads();
    auto nextRun = [&](uint32_t from) {  // the first run starting at or after `from`, or kTilePoints
      for (uint32_t w = from / 32; w < kTilePoints / 32; ++w) {
        const uint32_t bits = sRunStarts[w] & (w == from / 32 ? ~0u << (from % 32) : ~0u);
        if (bits != 0) return w * 32 + __ffs(bits) - 1;
      }
      return kTilePoints;
    };
    for (uint32_t j = nextRun(0); j < kTilePoints; j = nextRun(j + 1))
      sumStaged(sFirst[j], sLast[j], valid && cell == sCells[j]);
    sumStaged(sFirst[kTilePoints], sLast[kTilePoints], valid);  // the outsized Gaussians
    sum.addPartner();
    if (valid && lane == 0) sum.write(out, b);
  }
  // The point with index e, if it is off the grid: the pair walks the outsized list, a Gaussian each in turn.
  const uint32_t b = min(e, p.points - 1);
  PointSum<MAXC, BACKWARD> sum(points, gradField, b, C);
  uint32_t cell;
  const bool offGrid = e < p.points && !GridHeader(grid).cellOf(sum.x, cell);
  if (offGrid) {
    const uint32_t first = grid[p.gaussianStarts + p.cells], last = grid[p.gaussianStarts + p.cells + 1];
    for (uint32_t k = first + lane; k < last; k += kTileLanes) {
      const uint32_t i = grid[p.gaussianEntries + k];
      sum.add(Prepared(grid, p, i), &weights[size_t(i) * C]);
    }
  }
  sum.addPartner();
  if (offGrid && lane == 0) sum.write(out, b);
}

// The binned points gathered in list order with the field's gradient (shaders/gaussian_culled_gather.comp).
__global__ void __launch_bounds__(GAUSSIAN_THREADS)
    gatherKernel(const float* __restrict__ points, const float* __restrict__ gradField, float* __restrict__ out,
                 const uint32_t* __restrict__ grid, GaussianGridPush p) {
  const uint32_t e = blockIdx.x * GAUSSIAN_THREADS + threadIdx.x, C = p.channels;
  if (e >= grid[p.pointStarts + p.cells]) return;
  const uint32_t b = grid[p.pointEntries + e];
  reinterpret_cast<float4*>(out)[e] =
      make_float4(points[size_t(b) * 3], points[size_t(b) * 3 + 1], points[size_t(b) * 3 + 2], 0.0f);
  for (uint32_t c = 0; c < C; ++c) out[p.gatheredGrads + size_t(e) * C + c] = gradField[size_t(b) * C + c];
}

// A Gaussian per GAUSSIAN_CULLED_SLOTS threads over the points of the cells its support covers (or every binned
// point, outsized), slot k taking entries k, k + SLOTS, … of its cells' lists end to end; the slots' partial sums
// are added in slot order into its partial row (shaders/gaussian_culled_gaussians.glsl). `gathered` and
// `gradField`: the gathered points and their gradients, by entry.
template <int MAXC>
__global__ void __launch_bounds__(GAUSSIAN_THREADS)
    culledGaussiansKernel(const float4* __restrict__ gathered, const float* __restrict__ weights,
                          const float* __restrict__ gradField, float* __restrict__ out,
                          const uint32_t* __restrict__ grid, GaussianGridPush p) {
  constexpr uint32_t SLOTS = GAUSSIAN_CULLED_SLOTS, PER_GROUP = GAUSSIAN_CULLED_GAUSSIANS_PER_GROUP,
                     SUMS = GAUSSIAN_GAUSSIAN_GRADS + MAXC;
  __shared__ uint32_t sCellFirst[PER_GROUP][GAUSSIAN_CULLED_SPAN_CELLS],
      sCellCount[PER_GROUP][GAUSSIAN_CULLED_SPAN_CELLS];
  __shared__ float sPartial[PER_GROUP][SUMS][SLOTS + 1];  // padded: no bank conflicts
  __shared__ float sTotal[PER_GROUP][GAUSSIAN_GAUSSIAN_GRADS];
  const uint32_t local = threadIdx.x / SLOTS, slot = threadIdx.x % SLOTS, C = p.channels;
  for (uint32_t group = blockIdx.x; group * PER_GROUP < p.gaussians; group += gridDim.x) {
    const uint32_t i = group * PER_GROUP + local;
    const bool inRange = i < p.gaussians;
    float a[6], mean[3], cut = 0.0f, w[MAXC], gw[MAXC], D[3] = {0.0f, 0.0f, 0.0f},
                         S[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int c = 0; c < MAXC; ++c) w[c] = 0.0f, gw[c] = 0.0f;
    uint32_t reach = GAUSSIAN_REACH_NONE, cells = 0;
    if (inRange) {
      const uint32_t* o = grid + p.prepared + size_t(i) * GAUSSIAN_PREPARED;
      Prepared(grid, p, i).unpack(a, mean, cut);
#pragma unroll
      for (int c = 0; c < MAXC; ++c) w[c] = c < C ? weights[i * C + c] : 0.0f;
      reach = o[GAUSSIAN_PREPARED_REACH];
      if (reach != GAUSSIAN_REACH_NONE && reach != GAUSSIAN_REACH_OUTSIZED) {
        cells = gaussianReachCells(reach);
        if (slot < cells) {  // slot k looks up the k-th cell of the box
          const uint32_t cell = gaussianReachCell(o[GAUSSIAN_PREPARED_FIRST_CELL], reach, slot,
                                                  grid[GAUSSIAN_GRID_DIMS], grid[GAUSSIAN_GRID_DIMS + 1]);
          const uint32_t first = grid[p.pointStarts + cell];
          sCellFirst[local][slot] = first, sCellCount[local][slot] = grid[p.pointStarts + cell + 1] - first;
        }
      }
    }
    __syncthreads();
    auto accumulate = [&](uint32_t e) {  // entry e's term
      float z[3];
      const float4 x = gathered[e];
      const float dx = x.x - mean[0], dy = x.y - mean[1], dz = x.z - mean[2];
      const float m = gaussianDistance(a, dx, dy, dz, z);  // scaled (gaussian_io.h)
      // Without a branch (PointSum::add): q = 0 beyond the cut adds zeros, the sums a skipped term leaves.
      const bool inside = m <= cut;
      const float term = gaussianTerm(m);
      float s = 0.0f;
#pragma unroll
      for (int c = 0; c < MAXC; ++c) {
        const float gf = c < C ? gradField[size_t(e) * C + c] : 0.0f;
        s += gf * w[c];
        gw[c] = inside ? gw[c] + gf * term : gw[c];
      }
      gaussianAddSideTerm(inside ? -term * s : 0.0f, dx, dy, dz, D, S);  // q = 2·dLoss/dm
    };
    if (reach == GAUSSIAN_REACH_OUTSIZED) {  // every binned point (those off the grid are beyond every support)
      const uint32_t entries = grid[p.pointStarts + p.cells];
      for (uint32_t e = slot; e < entries; e += SLOTS) accumulate(e);
    } else if (cells > 0) {
      // Entry f of the cells' lists end to end, f ≡ slot (mod SLOTS), is entry f − before of cell k's list.
      for (uint32_t k = 0, before = 0; k < cells; ++k) {
        const uint32_t first = sCellFirst[local][k], count = sCellCount[local][k];
#pragma unroll 4
        for (uint32_t j = (slot - before) % SLOTS; j < count; j += SLOTS) accumulate(first + j);
        before += count;
      }
    }
    for (int k = 0; k < 3; ++k) sPartial[local][k][slot] = D[k];
    for (int k = 0; k < 6; ++k) sPartial[local][3 + k][slot] = S[k];
#pragma unroll
    for (int c = 0; c < MAXC; ++c) sPartial[local][GAUSSIAN_GAUSSIAN_GRADS + c][slot] = gw[c];
    __syncthreads();
    float* row = out + size_t(i) * (GAUSSIAN_GAUSSIAN_GRADS + C);
    for (uint32_t v = slot; v < GAUSSIAN_GAUSSIAN_GRADS + C; v += SLOTS) {  // sum v over the slots, in slot order
      float sum = 0.0f;
      for (uint32_t k = 0; k < SLOTS; ++k) sum += sPartial[local][v][k];
      if (v < GAUSSIAN_GAUSSIAN_GRADS)
        sTotal[local][v] = sum;
      else if (inRange)
        row[v] = sum;  // the weights' gradient
    }
    __syncthreads();
    if (inRange && slot == 0) {
      float ar[6], gMean[3], gA[6];
      for (int k = 0; k < 6; ++k) ar[k] = a[k] * (1.0f / GAUSSIAN_EXP2_SCALE), S[k] = sTotal[local][3 + k];
      for (int k = 0; k < 3; ++k) D[k] = sTotal[local][k];
      gaussianSideGrads(ar, D, S, gMean, gA);
      for (int k = 0; k < 3; ++k) row[k] = gMean[k];
      for (int k = 0; k < 6; ++k) row[3 + k] = gA[k];
    }
  }
}

template <int MAXC>
void launchCulled(const GaussianGridPass& p, cudaStream_t s) {
  using Kind = GaussianGridPass::Kind;
  const float *points = p.points.cuda<float>(), *weights = p.weights.cuda<float>(),
              *gradField = p.gradField.cuda<float>();
  float* out = p.out.cuda<float>();
  const uint32_t* grid = p.grid.cuda<uint32_t>();
  if (p.kind == Kind::Forward || p.kind == Kind::PointGrads) {
    const bool backward = p.kind == Kind::PointGrads;
    const auto kernel = backward ? culledTilesKernel<MAXC, true> : culledTilesKernel<MAXC, false>;
    launchAfterPrevious(deviceTraits().dependentLaunches, kernel, dim3(p.groups), dim3(GAUSSIAN_THREADS), s, points,
                        weights, gradField, out, grid, p.push);
  } else
    culledGaussiansKernel<MAXC><<<p.groups, GAUSSIAN_THREADS, 0, s>>>(reinterpret_cast<const float4*>(points), weights,
                                                                      gradField, out, grid, p.push);
}

}  // namespace

uint32_t gaussianBinBlocks() {
  // Once per device: every culled call asks, and its time before the first launch is on the call's clock.
  static std::mutex mutex;
  static std::map<int, uint32_t> perDevice;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = perDevice.find(device); it != perDevice.end()) return it->second;
  const DeviceTraits traits = deviceTraits();
  int perSm = 0;
  if (traits.cooperativeLaunches)
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, binPointsKernel, GAUSSIAN_GRID_THREADS, 0));
  return perDevice[device] = uint32_t(perSm * traits.multiprocessors);
}

void gaussianGridPass(const Exec& exec, const GaussianGridPass& p) {
  const cudaStream_t s = stream(exec);
  if (p.kind == GaussianGridPass::Kind::Grid && p.push.mode == GAUSSIAN_GRID_BIN_POINTS) {
    const float* points = p.points.cuda<float>();
    uint32_t* grid = p.grid.cuda<uint32_t>();
    GaussianGridPush push = p.push;
    void* args[] = {&points, &grid, &push};
    CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&binPointsKernel), p.groups,
                                           GAUSSIAN_GRID_THREADS, args, 0, s));
  } else if (p.kind == GaussianGridPass::Kind::Grid)
    gridKernel<<<p.groups, GAUSSIAN_GRID_THREADS, 0, s>>>(p.points.cuda<float>(), p.means.cuda<float>(),
                                                          p.cholesky.cuda<float>(), p.weights.cuda<float>(),
                                                          p.grid.cuda<uint32_t>(), p.push);
  else if (p.kind == GaussianGridPass::Kind::Gather)
    gatherKernel<<<p.groups, GAUSSIAN_THREADS, 0, s>>>(p.points.cuda<float>(), p.gradField.cuda<float>(),
                                                       p.out.cuda<float>(), p.grid.cuda<uint32_t>(), p.push);
  else if (p.maxChannels == 1)
    launchCulled<1>(p, s);
  else if (p.maxChannels == 8)
    launchCulled<8>(p, s);
  else
    launchCulled<32>(p, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
