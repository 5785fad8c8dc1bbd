// The rasteriser's two passes on CUDA: the same arithmetic as shaders/raster_*.comp, from the shared header (stage
// 0's small-triangle fragments are scheduled differently: walkTogether; the results are the same bits).
// Built with -fmad=false so no multiply-add is fused differently from the CPU and GLSL paths.
#include <vector>

#include "armature/cuda/raster.h"
#include "check.h"
#include "launch.h"
#include "visibility_buffer.h"
#include "shared/raster_cover.h"
#include "shared/raster_weights.h"
#include "shared/render_io.h"

namespace armature::cuda {
namespace {

struct Params {
  RasterPush p;
  const float4* positions;
  const int32_t* faces;
  const float* prior;
  const int32_t* ranges;
  unsigned long long* zbuffer;
  uint32_t* queue;
  RasterQueued* records;
  const unsigned long long* vertices;  // a packed RasterVertex per position row, or null: set up from the positions
};

// Each vertex's grid position and depth level, computed once (by the clear kernel) instead of once per triangle
// corner (a closed mesh shares a vertex among ~6 triangles): 8 bytes, x and y less the guard band's low end (18
// bits each, as the band spans 2^18 steps), the level less its minimum (27 bits), bit 63 set for an invalid vertex.
// The clear kernel's extra work is smaller than what the triangle stage saves. They live in the barycentrics'
// buffer, which only the resolve writes, after the triangle stages.
static_assert(RASTER_GUARD_HI - RASTER_GUARD_LO == 1 << 18 &&
              RASTER_DEPTH_LEVEL_MAX - RASTER_DEPTH_LEVEL_MIN < 1 << 27);
__device__ __forceinline__ unsigned long long packVertex(RasterVertex v) {
  if (!v.valid) return ~0ull;
  return (unsigned long long)(v.x - RASTER_GUARD_LO) | (unsigned long long)(v.y - RASTER_GUARD_LO) << 18 |
         (unsigned long long)(v.d - RASTER_DEPTH_LEVEL_MIN) << 36;
}
__device__ __forceinline__ RasterVertex unpackVertex(unsigned long long r) {
  RasterVertex v;
  v.valid = r >> 63 ? 0u : 1u;
  v.x = int(r & 0x3ffffu) + RASTER_GUARD_LO;
  v.y = int((r >> 18) & 0x3ffffu) + RASTER_GUARD_LO;
  v.d = int((r >> 36) & 0x7ffffffu) + RASTER_DEPTH_LEVEL_MIN;
  return v;
}

// As shaders/raster_triangles.glsl: the setup, or an invalid triangle for out-of-range vertex ids.
__device__ RasterTri setupTriangle(const Params& a, uint32_t f, uint32_t image) {
  const RasterPush& p = a.p;
  int ia = a.faces[f * 3], ib = a.faces[f * 3 + 1], ic = a.faces[f * 3 + 2];
  if (ia < 0 || ib < 0 || ic < 0 || uint32_t(max(ia, max(ib, ic))) >= p.vertexCount) {
    RasterTri none;
    none.valid = 0;
    return none;
  }
  size_t base = p.instanced ? size_t(image) * p.vertexCount : 0;
  if (a.vertices)
    return rasterSetupVertices(unpackVertex(a.vertices[base + ia]), unpackVertex(a.vertices[base + ib]),
                               unpackVertex(a.vertices[base + ic]), p.width, p.height);
  float4 u = a.positions[base + ia], v = a.positions[base + ib], w = a.positions[base + ic];
  return rasterSetup(u.x, u.y, u.z, u.w, v.x, v.y, v.z, v.w, w.x, w.y, w.z, w.w, p.width, p.height);
}

// A covered pixel at depth `level`: the prior's and the near plane's tests, then the z-buffer.
__device__ void fragmentAt(const Params& a, uint32_t f, uint32_t image, int px, int py, int64_t level) {
  const RasterPush& p = a.p;
  uint32_t pix = (image * p.height + uint32_t(py)) * p.width + uint32_t(px);  // < 2^28 (checkRasterDesc)
  if (p.useDepthPrior && level < rasterPriorLevel(a.prior[pix], p.occlusionTruncation)) return;
  if (level < 0) return;  // in front of the near plane (the original's depth threshold 0)
  // No read first: an atomic whose result is unused does not wait for L2 (a reduction), while a read would stall
  // the thread's walk one round trip per pixel.
  atomicMin(a.zbuffer + pix, rasterToken(level, f, p.tokenTag));
}

__device__ void fragment(const Params& a, const RasterTri& t, uint32_t f, uint32_t image, int px, int py) {
  int64_t level = rasterCover(t, px, py);
  if (level != RASTER_MISS) fragmentAt(a, f, image, px, py, level);
}

// Box pixels first, first + step, ... below end, in row order; one division to start, none per pixel.
__device__ void walkBox(const Params& a, const RasterTri& t, uint32_t f, uint32_t image, uint32_t first, uint32_t end,
                        uint32_t step) {
  const uint32_t boxWidth = uint32_t(t.maxX - t.minX + 1), rowStep = step / boxWidth, columnStep = step % boxWidth;
  int x = t.minX + int(first % boxWidth), y = t.minY + int(first / boxWidth);
  for (uint32_t q = first; q < end; q += step) {
    fragment(a, t, f, image, x, y);
    x += int(columnStep), y += int(rowStep);
    if (x > t.maxX) x -= int(boxWidth), ++y;
  }
}

// A small box's covered pixels, from rasterSmallMask, for a narrow triangle too large for a plane (a big triangle
// clipped to a small box): depth and the atomic only where a fragment is. Small triangles go to walkTogether.
__device__ void walkMask(const Params& a, const RasterTri& t, uint32_t f, uint32_t image, RasterMask m) {
  const uint32_t boxWidth = uint32_t(t.maxX - t.minX + 1),
                 rowMagic = 65536u / boxWidth + 1u;  // exact q / width, q < 64
  for (uint32_t word = 0; word < 2; ++word)
    for (uint32_t bits = word ? m.hi : m.lo; bits; bits &= bits - 1) {
      uint32_t q = uint32_t(__ffs(int(bits)) - 1) + 32 * word, row = (q * rowMagic) >> 16, column = q - row * boxWidth;
      int px = t.minX + int(column), py = t.minY + int(row);
      fragmentAt(a, f, image, px, py, rasterNarrowDepth(t, px, py));
    }
}

// The block's shared walk of its small triangles' covered pixels. Each thread walking its own mask kept a warp busy
// as long as its most-covered triangle, with many lanes idle (small triangles cover a few of their box's pixels).
// Instead every thread lists its fragments (box pixel and owner) in shared
// memory, a cheap loop, and the block then takes the list 64 at a time: each thread one fragment, with its owner's
// plane from shared memory. The depth and the atomic, the costly part, run on every lane.
struct SharedPlane {
  RasterPlane plane;
  int minX, minY;
  uint32_t boxWidth, rowMagic, face;  // rowMagic: exact q / boxWidth for q < 64 as (q * rowMagic) >> 16
};
struct FragmentWalk {
  SharedPlane owners[RASTER_GROUP];
  uint16_t list[RASTER_GROUP * RASTER_SMALL_PIXELS];  // owner << 6 | box pixel
  uint32_t warpTotals[RASTER_GROUP / 32];
};

// Called by every thread of the block (barriers inside); mask empty for threads with nothing to add.
__device__ void walkTogether(const Params& a, FragmentWalk& w, const RasterTri& t, const RasterPlane& plane,
                             RasterMask m, uint32_t f, uint32_t image) {
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, count = __popc(m.lo) + __popc(m.hi);
  uint32_t inclusive = count;  // prefix sum over the warp, then over the block's two warps
  for (uint32_t d = 1; d < 32; d *= 2) {
    uint32_t below = __shfl_up_sync(~0u, inclusive, d);
    if (lane >= d) inclusive += below;
  }
  if (lane == 31) w.warpTotals[warp] = inclusive;
  if (count) {
    const uint32_t boxWidth = uint32_t(t.maxX - t.minX + 1);
    w.owners[threadIdx.x] = SharedPlane{plane, t.minX, t.minY, boxWidth, 65536u / boxWidth + 1u, f};
  }
  __syncthreads();
  const uint32_t total = w.warpTotals[0] + w.warpTotals[1];
  uint32_t slot = inclusive - count + (warp ? w.warpTotals[0] : 0u);
  for (uint32_t word = 0; word < 2; ++word)
    for (uint32_t bits = word ? m.hi : m.lo; bits; bits &= bits - 1)
      w.list[slot++] = uint16_t(threadIdx.x << 6 | (uint32_t(__ffs(int(bits)) - 1) + 32 * word));
  __syncthreads();
  for (uint32_t k = threadIdx.x; k < total; k += RASTER_GROUP) {
    const uint32_t entry = w.list[k], q = entry & 63u;
    const SharedPlane& o = w.owners[entry >> 6];
    const uint32_t row = (q * o.rowMagic) >> 16, column = q - row * o.boxWidth;
    fragmentAt(a, o.face, image, o.minX + int(column), o.minY + int(row),
               rasterPlaneDepth(o.plane, int(column), int(row)));
  }
  __syncthreads();  // the list is rewritten by the next round
}

// Stage 0: one thread per (triangle, image); small triangles walked here, big ones queued in chunks. The block
// reserves its queue entries and records with one global atomic each (as many threads contending for one address
// serialise in L2), so the loop runs uniformly over the block: every thread reaches the barriers. At most 64
// registers (16 blocks of 64): half occupancy beat fewer blocks with more registers (bench/RESULTS.md's scenes).
__global__ void __launch_bounds__(RASTER_GROUP, 16) trianglesKernel(Params a) {
  __shared__ uint32_t groupChunks, groupRecords, chunkBase, recordBase;
  __shared__ FragmentWalk together;
  waitForPrevious();  // the z-buffer cleared
  releaseNext();
  const RasterPush& p = a.p;
  const uint32_t image = blockIdx.y, capacity = p.queueCapacity;
  for (uint32_t start = blockIdx.x * RASTER_GROUP; start < p.triangleCount; start += gridDim.x * RASTER_GROUP) {
    uint32_t i = start + threadIdx.x, f = i;
    bool live = i < p.triangleCount;
    if (live && !p.instanced) {
      int first = a.ranges[image * 2];
      f = uint32_t(first) + i;
      live = int(i) < a.ranges[image * 2 + 1] && first >= 0 && f < p.triangleCount;  // a bad range draws nothing
    }
    RasterTri t;
    t.valid = 0;
    if (live) t = setupTriangle(a, f, image);
    const uint32_t box = t.valid ? uint32_t(t.maxX - t.minX + 1) * uint32_t(t.maxY - t.minY + 1) : 0u;
    const uint32_t chunkPixels = rasterChunkPixels(box);
    const uint32_t chunks = box > p.smallPixels ? (box + chunkPixels - 1) / chunkPixels : 0u;
    uint32_t chunkOffset = 0, recordOffset = 0;
    // Most blocks of a big scene queue nothing: one barrier tells them so, instead of the reservation's three.
    if (__syncthreads_or(chunks != 0)) {
      if (threadIdx.x == 0) groupChunks = groupRecords = 0;
      __syncthreads();
      if (chunks) chunkOffset = atomicAdd(&groupChunks, chunks), recordOffset = atomicAdd(&groupRecords, 1u);
      __syncthreads();
      if (threadIdx.x == 0) {
        // queue[0] and [1] count entries - 1 and records - 1 from ~0. Look before adding so an overflowing queue grows
        // only by what is in flight; what does not fit is walked here, and no slot before the end is left empty.
        chunkBase = recordBase = capacity;
        if (groupChunks && *(volatile uint32_t*)a.queue + 1u < capacity) {
          chunkBase = atomicAdd(a.queue, groupChunks) + 1u;
          recordBase = atomicAdd(a.queue + 1, groupRecords) + 1u;
        }
      }
      __syncthreads();
    }
    RasterMask shared{0u, 0u};  // covered pixels this thread hands to the block's walk
    RasterPlane plane;
    plane.valid = 0u;
    if (chunks) {
      uint32_t slot = chunkBase + chunkOffset, record = recordBase + recordOffset;
      // Every slot reserved inside the queue is written, even where the record did not fit (the two counters'
      // orders differ between blocks): stage 1 reads every slot below the count, and skips the unrecorded ones.
      const uint32_t reserved = slot < capacity ? min(chunks, capacity - slot) : 0u;
      const uint32_t queued = record < capacity ? reserved : 0u;
      if (queued) a.records[record] = RasterQueued{t, f, image};
      for (uint32_t c = 0; c < reserved; ++c) {
        uint32_t* e = a.queue + RASTER_QUEUE_HEADER + size_t(slot + c) * RASTER_QUEUE_ENTRY;
        e[0] = queued ? record : RASTER_NO_RECORD, e[1] = c;
      }
      walkBox(a, t, f, image, queued * chunkPixels, box, 1);
    } else if (box && t.narrow) {
      const RasterMask covered = rasterSmallMask(t);
      plane = rasterPlane(t);
      if (plane.valid)
        shared = covered;
      else
        walkMask(a, t, f, image, covered);  // a clipped big triangle: no plane, rare
    } else if (box) {
      walkBox(a, t, f, image, 0, box, 1);  // a wide triangle clipped to a small box
    }
    walkTogether(a, together, t, plane, shared, f, image);
  }
}

// Stage 1: one block of RASTER_GROUP threads per queued chunk, spread over its pixels.
__global__ void chunksKernel(Params a) {
  waitForPrevious();  // the queue filled
  releaseNext();
  uint32_t entries = min(a.queue[0] + 1u, a.p.queueCapacity);
  for (uint32_t e = blockIdx.x; e < entries; e += gridDim.x) {
    const uint32_t* entry = a.queue + RASTER_QUEUE_HEADER + size_t(e) * RASTER_QUEUE_ENTRY;
    if (entry[0] == RASTER_NO_RECORD) continue;  // its triangle was walked by its own thread
    const RasterQueued& queued = a.records[entry[0]];
    const RasterTri t = queued.tri;
    uint32_t chunk = entry[1], box = uint32_t(t.maxX - t.minX + 1) * uint32_t(t.maxY - t.minY + 1),
             chunkPixels = rasterChunkPixels(box);
    walkBox(a, t, queued.face, queued.image, chunk * chunkPixels + threadIdx.x, min(box, (chunk + 1) * chunkPixels),
            RASTER_GROUP);
  }
}

// 8 blocks of 256 (32 registers): full occupancy hides the chain of dependent loads (token, face, vertices). A block
// resolves tiles of 32 × 8 pixels (a warp per row): neighbouring rows share faces, so more of the face and vertex
// gathers hit L1 than in a strip of 256 pixels of one row, and less traffic reaches L2.
constexpr uint32_t kResolveTileW = 32, kResolveTileH = 256 / kResolveTileW;
__host__ __device__ size_t resolveTilesPerImage(uint32_t width, uint32_t height) {
  return size_t((width + kResolveTileW - 1) / kResolveTileW) * ((height + kResolveTileH - 1) / kResolveTileH);
}
// rasterPerspectiveWeights from the corners' NDC and w, for the pixels where the float form is not accurate. Not
// inlined: its doubles would make the resolve spill on every pixel, not only here.
__device__ __noinline__ RasterFloatWeights exactWeights(const float (&nx)[3], const float (&ny)[3], const float (&w)[3],
                                                        uint32_t x, uint32_t y, uint32_t W, uint32_t H) {
  const RasterWeights d = rasterPerspectiveWeights(
      rasterScreen(nx[0], W), rasterScreen(ny[0], H), rasterScreen(nx[1], W), rasterScreen(ny[1], H),
      rasterScreen(nx[2], W), rasterScreen(ny[2], H), w[0], w[1], w[2], double(x) + 0.5, double(y) + 0.5);
  return RasterFloatWeights{float(d.b0), float(d.b1), float(d.b2), true};
}

__global__ void __launch_bounds__(256, 8) resolveKernel(Params a, int32_t* findices, float* bary) {
  waitForPrevious();  // every fragment in the z-buffer
  releaseNext();      // interpolate, where it follows
  // Tile arithmetic in 32 bits (tiles < pixels <= 2^28, checkRasterDesc): a 64-bit division is a long sequence.
  const uint32_t W = a.p.width, H = a.p.height, tilesX = (W + kResolveTileW - 1) / kResolveTileW;
  const uint32_t imageTiles = uint32_t(resolveTilesPerImage(W, H)), tiles = imageTiles * a.p.images;
  const size_t imagePixels = size_t(W) * H;
  for (uint32_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint32_t image = tile / imageTiles, inImage = tile - image * imageTiles;
    const uint32_t x = inImage % tilesX * kResolveTileW + threadIdx.x % kResolveTileW,
                   y = inImage / tilesX * kResolveTileH + threadIdx.x / kResolveTileW;
    if (x >= W || y >= H) continue;
    const size_t pix = image * imagePixels + size_t(y) * W + x;
    const unsigned long long token = a.zbuffer[pix];
    // Every token back to empty, although tags would let earlier calls' tokens stay (as on Vulkan): in compressible
    // memory an empty z-buffer costs the next call's triangle stage fewer DRAM bytes.
    if (token != ~0ull) a.zbuffer[pix] = ~0ull;
    const int face1 = int(token & 0xffffffffull);
    // Another call's tag (~0, no fragment, has the highest) or a face beyond F (a misstated scratchCall).
    if (uint32_t(token >> (32 + RASTER_TAG_SHIFT)) != a.p.tokenTag || uint32_t(face1) - 1u >= a.p.triangleCount) {
      findices[pix] = 0;
      bary[pix * 3] = bary[pix * 3 + 1] = bary[pix * 3 + 2] = 0;
      continue;
    }
    findices[pix] = face1;
    size_t base = a.p.instanced ? size_t(image) * a.p.vertexCount : 0;
    float nx[3], ny[3], w[3];  // the reference's NDC
    for (int k = 0; k < 3; ++k) {
      float4 v = a.positions[base + a.faces[(face1 - 1) * 3 + k]];
      nx[k] = rasterDivide(v.x, v.w), ny[k] = rasterDivide(v.y, v.w), w[k] = v.w;
    }
    RasterFloatWeights b =
        rasterPerspectiveWeightsFloat(nx[0], ny[0], w[0], nx[1], ny[1], w[1], nx[2], ny[2], w[2], x, y, W, H);
    if (!b.accurate) b = exactWeights(nx, ny, w, x, y, W, H);  // ill-conditioned here: in double, as the reference
    bary[pix * 3] = b.b0, bary[pix * 3 + 1] = b.b1, bary[pix * 3 + 2] = b.b2;
  }
}

// The z-buffer (from firstPiece: past it where it is already clear) and the queue's counts to ~0 (the empty token,
// above every fragment; empty counts), and the vertices' setup where there is room for it. A kernel rather than a
// memset, so that the triangle stage can launch while it drains.
__global__ void clearScratchKernel(uint4* scratch, size_t firstPiece, size_t pieces, const float4* positions,
                                   uint32_t rows, uint32_t width, uint32_t height, unsigned long long* vertices) {
  releaseNext();
  if (vertices)
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x) {
      const float4 p = positions[i];
      vertices[i] = packVertex(rasterVertex(p.x, p.y, p.z, p.w, width, height));
    }
  for (size_t i = firstPiece + blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < pieces;
       i += size_t(gridDim.x) * blockDim.x)
    scratch[i] = make_uint4(~0u, ~0u, ~0u, ~0u);
}
// What a call's launches depend on about the current device: whether it runs programmatic dependent launches
// (compute capability 9.0+), and its multiprocessors. Asked of the driver once per device, not on every call.
// The rasteriser's backward, one thread per pixel: dL/dbarycentrics through x, y and w of the visible face's corners
// (rasterPerspectiveWeightsBackward, as shaders/raster_backward.glsl) into gradPositions, cleared before. A run of
// consecutive lanes on the same face (of the same image) sums its nine values first (a segmented scan over the
// warp) and its last lane issues the atomics: a big triangle's pixels otherwise send hundreds of atomics to the same
// nine addresses, which serialise. (Grouping lanes by face wherever they are in the warp costs more than it saves
// where small triangles put several faces in a warp.)
__global__ void __launch_bounds__(256)
    rasterBackwardKernel(Params a, const int32_t* ids, const float* gradBary, float* gradPositions) {
  const RasterPush& p = a.p;
  // Pixel arithmetic in 32 bits, as the resolve's (pixels <= 2^28, checkRasterDesc).
  const uint32_t imagePixels = p.width * p.height, pixels = imagePixels * p.images;
  const uint32_t lane = threadIdx.x % 32;
  // Warp-uniform loop: every lane reaches the shuffles below.
  for (uint32_t first = blockIdx.x * blockDim.x; first < pixels; first += gridDim.x * blockDim.x) {
    const uint32_t pix = first + threadIdx.x;
    const uint32_t image = pix / imagePixels, inImage = pix - image * imagePixels;
    const size_t base = p.instanced ? size_t(image) * p.vertexCount : 0;
    bool live = pix < pixels;  // and below: a covered pixel whose face and corners are inside F and the vertices
    size_t corner[3] = {0, 0, 0};
    for (int k = 0; k < 3 && live; ++k) {
      const int v = cornerVertex(ids, a.faces, p.triangleCount, p.vertexCount, pix, k);
      live = v >= 0;
      corner[k] = base + size_t(max(v, 0));
    }
    float grads[9] = {};
    if (live) {
      const float4 u = a.positions[corner[0]], v = a.positions[corner[1]], w = a.positions[corner[2]];
      const RasterCornerGrads r = rasterPerspectiveWeightsBackward(
          u.x, u.y, u.w, v.x, v.y, v.w, w.x, w.y, w.w, p.width, p.height, double(inImage % p.width) + 0.5,
          double(inImage / p.width) + 0.5, gradBary[pix * 3], gradBary[pix * 3 + 1], gradBary[pix * 3 + 2]);
      const double values[9] = {r.x0, r.y0, r.w0, r.x1, r.y1, r.w1, r.x2, r.y2, r.w2};
      for (int i = 0; i < 9; ++i) grads[i] = float(values[i]);
    }
    // Runs of lanes on one face: a lane starts a run where its face differs from the lane before.
    const unsigned long long face = live ? (unsigned long long)(image) << 32 | unsigned(ids[pix]) : ~0ull;
    const unsigned long long before = __shfl_up_sync(~0u, face, 1);  // every lane, outside the || below
    const bool head = lane == 0 || before != face;
    const unsigned heads = __ballot_sync(~0u, head);
    const uint32_t runStart = 31 - __clz(heads & (0xffffffffu >> (31 - lane)));
    for (uint32_t d = 1; d < 32; d *= 2)
      for (int i = 0; i < 9; ++i) {
        const float below = __shfl_up_sync(~0u, grads[i], d);
        if (lane >= runStart + d) grads[i] += below;
      }
    const bool tail = lane == 31 || (heads >> (lane + 1)) & 1u;
    if (live && tail)
      for (int k = 0; k < 3; ++k) {
        float* g = gradPositions + corner[k] * 4;
        atomicAdd(g, grads[k * 3]), atomicAdd(g + 1, grads[k * 3 + 1]), atomicAdd(g + 3, grads[k * 3 + 2]);
      }
  }
}

__global__ void setupProbeKernel(uint32_t width, uint32_t height, const float4* corners, uint32_t triangles,
                                 RasterTri* setups) {
  const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= triangles) return;
  const float4 a = corners[f * 3], b = corners[f * 3 + 1], c = corners[f * 3 + 2];
  setups[f] = rasterSetup(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w, width, height);
}

}  // namespace

void rasterSetupProbe(uint32_t width, uint32_t height, const float* corners, uint32_t triangles, void* setups,
                      void* stream) {
  ARM_CHECK(corners && setups, "cuda::rasterSetupProbe: null pointer");
  if (!triangles) return;
  setupProbeKernel<<<(triangles + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      width, height, reinterpret_cast<const float4*>(corners), triangles, static_cast<RasterTri*>(setups));
  CUDA_CHECK_LAUNCH();
}

void rasterize(const Exec& exec, const RasterizeArgs& args) {
  const RasterDesc& d = args.desc;
  const uint32_t vertexCount = args.vertexCount, faceCount = args.faceCount;
  const float* positions = args.positions.cuda<float>();
  float* barycentrics = args.barycentrics.cuda<float>();
  void* scratch = args.scratch.cuda<void>();
  RasterScratchLayout layout = rasterScratchLayout(d, args.tuning);
  const bool instanced = d.batch == RasterBatch::Instanced;
  cudaStream_t s = stream(exec);
  auto* bytes = static_cast<unsigned char*>(scratch);
  // Per-vertex setup where the barycentrics' buffer holds it (8 bytes a vertex against 12 a pixel), else per corner.
  const size_t rows = rasterPositionRows(d, vertexCount);
  unsigned long long* vertices = rows * 8 <= d.pixels() * 12 && alignedTo(barycentrics, 8)
                                     ? reinterpret_cast<unsigned long long*>(barycentrics)
                                     : nullptr;
  Params a{rasterPush(d, vertexCount, faceCount, args.tuning),
           reinterpret_cast<const float4*>(positions),
           args.faces.cuda<int32_t>(),
           d.useDepthPrior ? args.depthPrior.cuda<float>() : nullptr,
           instanced ? nullptr : args.ranges.cuda<int32_t>(),
           reinterpret_cast<unsigned long long*>(bytes),
           reinterpret_cast<uint32_t*>(bytes + layout.queueOffset),
           reinterpret_cast<RasterQueued*>(bytes + layout.recordsOffset),
           vertices};
  static_assert(RASTER_QUEUE_HEADER * 4 == 16, "the clear covers the z-buffer and the queue's 16-byte header");
  const size_t pieces = (layout.queueOffset + 16) / 16;  // queueOffset is a multiple of 256
  const DeviceTraits device = deviceTraits();
  // At most 16 blocks per SM, looping: with the z-buffer in compressible memory the clear does not wait on DRAM,
  // and thousands of one-store blocks would cost more in block start-up than they store.
  const size_t firstPiece = rasterClearsZBuffer(d) ? 0 : pieces - 1;  // the queue's header is always cleared
  const unsigned clearBlocks =
      std::min(grid(std::max(pieces - firstPiece, vertices ? rows : 0)), unsigned(device.multiprocessors) * 16u);
  clearScratchKernel<<<clearBlocks, 256, 0, s>>>(reinterpret_cast<uint4*>(scratch), firstPiece, pieces, a.positions,
                                                 uint32_t(rows), d.width, d.height, vertices);
  CUDA_CHECK_LAUNCH();
  const bool dependent = device.dependentLaunches;
  if (faceCount) {
    // Small blocks: a scene of a few thousand triangles still spreads over every SM (each thread walks a box). At
    // most four rounds of the 16 resident blocks per SM, each block looping over its groups: a block's start-up is
    // then paid once per ~2 groups on big scenes (one round of blocks leaves its slowest blocks alone at the end).
    const unsigned triangleBlocks =
        unsigned(std::min<size_t>((faceCount + RASTER_GROUP - 1) / RASTER_GROUP, size_t(device.multiprocessors) * 64));
    launchAfterPrevious(dependent, trianglesKernel, dim3(triangleBlocks, d.images), dim3(RASTER_GROUP), s, a);
    launchAfterPrevious(dependent, chunksKernel, dim3(std::min<uint32_t>(layout.queueCapacity, RASTER_CHUNK_GROUPS)),
                        dim3(RASTER_GROUP), s, a);
  }
  // A block of 256 threads per 32 × 8 tile.
  launchAfterPrevious(dependent, resolveKernel, dim3(grid(resolveTilesPerImage(d.width, d.height) * d.images * 256)),
                      dim3(256), s, a, args.findices.cuda<int32_t>(), barycentrics);
}

void rasterizeBackward(const Exec& exec, const RasterizeBackwardArgs& args) {
  const RasterDesc& d = args.desc;
  cudaStream_t s = stream(exec);
  float* gradPositions = args.gradPositions.cuda<float>();
  CUDA_CHECK(cudaMemsetAsync(gradPositions, 0, rasterPositionRows(d, args.vertexCount) * 16, s));  // sums from zero
  Params a{rasterPush(d, args.vertexCount, args.faceCount),
           args.positions.cuda<float4>(),
           args.faces.cuda<int32_t>(),
           nullptr,
           nullptr,
           nullptr,
           nullptr,
           nullptr,
           nullptr};
  rasterBackwardKernel<<<grid(d.pixels()), 256, 0, s>>>(
      a, args.findices.cuda<int32_t>(), args.gradBarycentrics.cuda<float>(), gradPositions);  // after the memset
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
