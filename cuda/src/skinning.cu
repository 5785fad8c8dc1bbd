// Body skinning kernels. Forward, up to 8 items: one kernel (forwardFewKernel) in which a block per item runs the
// joint chain and publishes its transforms through device-side flags, while the other blocks build the items'
// pose features themselves, stream the blend matrix (pose correctives and shape/expression blends in one product)
// and skin their own vertex groups (weights from per-group records built once per model). More items: (1) the
// chain, one block per item, beside (2) a GEMM for the product (register-tiled fp32, or tensor cores at fp32
// accuracy beyond 64 items), then (3) one thread per vertex skins with the sparse weights. Backward mirrors it with
// fixed-order reductions.
#include "skinning.h"

#include "armature/ops/skinning.h"
#include "check.h"
#include "ops/skinning_backend.h"
#include "shared/skinning_io.h"

#include <algorithm>
#include <bit>
#include <type_traits>
#include <vector>

namespace armature::cuda {

namespace {

struct Dims {
  int B, V, J, P, K, S;
  int chunks, translChunks;  // the backward's per-joint vertex chunks, then the translation's vertex chunks
  int TS;  // floats per item of the transforms: J·12 rounded up to 128 bytes, so no cache line holds two items
  __host__ __device__ int F() const { return P + K; }  // features per item
};

// The shared header's Rodrigues (shaders/shared/skinning_io.h) on pointers into the parameter buffers.
__device__ void rodrigues(const float* r, float* R) {
  const SkinMat3 m = skinRodrigues(SkinVec3{{r[0], r[1], r[2]}});
  for (int e = 0; e < 9; ++e) R[e] = m.m[e];
}
__device__ void rodriguesBackward(const float* r, const float* gR, float* g) {
  SkinMat3 gm;
  for (int e = 0; e < 9; ++e) gm.m[e] = gR[e];
  const SkinVec3 d = skinRodriguesBackward(SkinVec3{{r[0], r[1], r[2]}}, gm);
  for (int i = 0; i < 3; ++i) g[i] = d.v[i];
}

struct GroupWeights;
struct Tables {
  const float *vTemplate, *blend, *jointTemplate, *jointDirs, *weightValue, *jointWeight;
  const uint32_t *weightStart, *weightJoint, *jointVertex;
  const int32_t* parents;  // the chain runs one tree level at a time: no topological order needed
  const uint32_t *chunkRange,
      *jointFirstChunk;              // chunk c: CSC entries [2c, 2c+1); joint j: chunks [first[j], first[j+1])
  const GroupWeights* groupWeights;  // per vertex group of the blend matrix (buildGroupWeights)
};

constexpr int kChunkEntries = 256, kTranslChunkVertices = 1024, kChunkThreads = 128;

constexpr int kSaved = 21;  // per joint: R (9), G (9), rest joint (3)

// The blend matrix's columns (and v_posed's) come in groups of 64: 21 whole vertices (63 columns) and one zero
// column. Every 64- or 128-column tile of the product then holds whole vertices and can skin them itself.
constexpr int kGroupVertices = 21, kGroupColumns = 64;
__host__ __device__ inline int posedColumn(int v) {
  return v / kGroupVertices * kGroupColumns + v % kGroupVertices * 3;
}
// The blend matrix (rows: features, columns: vertex groups) is stored group by group: a group's 64 columns of
// all rows are one contiguous range, so a block streaming a group reads DRAM sequentially.
__host__ __device__ inline size_t blendIndex(int row, int col, int rows) {
  return (size_t(col / kGroupColumns) * rows + row) * kGroupColumns + col % kGroupColumns;
}

// What the forward writes. The fused forward with its chain beside the product publishes each item's transforms by
// setting chainReady[b] to the launch's epoch; the product's blocks wait for that value before skinning. Epochs
// and block roles come from a cycling ticket counter on the device (takeRole), so nothing is reset
// at the end of a launch and nothing per call lives on the host: a captured CUDA graph replays safely.
struct ForwardOut {
  float *transforms, *saved, *joints, *vPosed, *vertices;
  unsigned* chainReady;  // null: no flags (separate kernels or launches, ordered by the stream)
  unsigned* tickets;     // the launch's ticket counter (takeRole); null: roles from blockIdx
};

__device__ unsigned loadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Called by the whole block: every thread's writes so far become visible before the flag (a release store of epoch).
__device__ void publish(unsigned* flag, unsigned epoch) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(epoch) : "memory");
}
// Called by the whole block: returns once flags[0 … count) all hold epoch (count ≤ blockDim.x); null flags: a
// barrier only.
__device__ void waitFor(const unsigned* flags, int count, unsigned epoch) {
  if (flags && int(threadIdx.x) < count)
    while (loadAcquire(flags + threadIdx.x) != epoch) __nanosleep(32);
  __syncthreads();
}

// Feature q of item b, q < J − 1: the 9 entries of R_{q+1} − I (Rodrigues), else shape/expression coefficient
// q − (J − 1); store(column, value). One definition for every kernel that builds the product's left side.
template <typename Store>
__device__ void itemFeature(const Dims& d, const SkinningInputs& in, int b, int q, Store store) {
  if (q < d.J - 1) {
    float R[9];
    rodrigues(in.pose + (size_t(b) * d.J + q + 1) * 3, R);
    for (int e = 0; e < 9; ++e) store(q * 9 + e, R[e] - (e % 4 == 0 ? 1.f : 0.f));
  } else {
    int k = q - (d.J - 1), E = d.K - d.S;
    store(d.P + k, k < d.S ? in.betas[b * d.S + k] : in.expression[b * E + (k - d.S)]);
  }
}

// (1a) The blend product's left side for many items, one thread per (item, feature group): pose features R_j − I
// (Rodrigues) and the shape/expression coefficients. (The fused forward's product blocks build their own.)
__global__ void featuresKernel(Dims d, SkinningInputs in, float* __restrict__ features) {
  const int perItem = d.J - 1 + d.K;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= size_t(d.B) * perItem) return;
  int b = int(i / perItem), q = int(i % perItem);
  float* feat = features + size_t(b) * d.F();
  itemFeature(d, in, b, q, [&](int k, float v) { feat[k] = v; });
}

// The rest joints' regression is split over kChainSlices coefficient slices (slice s: coefficients 8s + 32r + i,
// i < 8), summed in slice order: the same bits whether a block has a thread per (joint, slice) or per joint.
constexpr int kChainSlices = 4;
constexpr size_t chainSharedBytes() {
  return sizeof(float) * SKIN_MAX_JOINTS * (24 + 3 * kChainSlices) + sizeof(int) * (2 * SKIN_MAX_JOINTS + 1);
}

// (1b) Item b's joints, by a whole block of SKIN_MAX_JOINTS × 1, 2 or 4 threads (thread j: joint j % 64, slice
// j / 64): rotations, rest joints, the chain one tree level at a time, then transforms, posed joints and what the
// backward needs. smem: chainSharedBytes().
__device__ void chainItem(const Dims& d, const Tables& t, const SkinningInputs& in, int b, float* smem,
                          const ForwardOut& o, unsigned epoch = 0) {
  float *sR = smem, *sG = sR + SKIN_MAX_JOINTS * 9, *sJ = sG + SKIN_MAX_JOINTS * 9, *sT = sJ + SKIN_MAX_JOINTS * 3;
  float* sPart = sT + SKIN_MAX_JOINTS * 3;  // [slice][joint][3]: the regression's partial sums
  int* sParent = reinterpret_cast<int*>(sPart + kChainSlices * SKIN_MAX_JOINTS * 3);
  int *sDepth = sParent + SKIN_MAX_JOINTS, *sMaxDepth = sDepth + SKIN_MAX_JOINTS;
  const int j = threadIdx.x % SKIN_MAX_JOINTS, slice = threadIdx.x / SKIN_MAX_JOINTS,
            slices = blockDim.x / SKIN_MAX_JOINTS, E = d.K - d.S;
  const bool lead = slice == 0 && j < d.J;  // the joint's own thread
  // Every global load of the prologue is issued before anything waits: in the fused forward each round trip costs
  // microseconds under the product stream's memory load, and dependent round trips would make the chain, not the
  // stream, the kernel's critical path.
  float rest[3] = {};
  if (lead)
    for (int c = 0; c < 3; ++c) rest[c] = __ldg(t.jointTemplate + j * 3 + c);
  for (int s = slice; s < kChainSlices && j < d.J; s += slices) {
    float acc[3] = {};
    for (int k0 = 8 * s; k0 < d.K; k0 += 8 * kChainSlices) {
      float coef[8], dir[8][3];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int k = k0 + i;
        coef[i] = k >= d.K ? 0.f : k < d.S ? __ldg(in.betas + b * d.S + k) : __ldg(in.expression + b * E + (k - d.S));
#pragma unroll
        for (int c = 0; c < 3; ++c) dir[i][c] = k < d.K ? __ldg(t.jointDirs + (k * d.J + j) * 3 + c) : 0.f;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int c = 0; c < 3; ++c) acc[c] += coef[i] * dir[i][c];
    }
    for (int c = 0; c < 3; ++c) sPart[(s * SKIN_MAX_JOINTS + j) * 3 + c] = acc[c];
  }
  if (threadIdx.x == 0) *sMaxDepth = 0;
  if (lead) {
    sParent[j] = t.parents[j];
    rodrigues(in.pose + (size_t(b) * d.J + j) * 3, sR + j * 9);
  }
  __syncthreads();
  if (lead) {
    for (int s = 0; s < kChainSlices; ++s)
      for (int c = 0; c < 3; ++c) rest[c] += sPart[(s * SKIN_MAX_JOINTS + j) * 3 + c];
    for (int c = 0; c < 3; ++c) sJ[j * 3 + c] = rest[c];
    // The joint's depth in its tree (the model is a validated forest; the cap only guards the loop).
    int depth = 0;
    for (int p = sParent[j]; p >= 0 && depth < d.J; p = sParent[p]) ++depth;
    sDepth[j] = depth;
    atomicMax(sMaxDepth, depth);
  }
  __syncthreads();
  // The chain, one tree level at a time: the joints of a level are independent (their parents are done), so they
  // run in parallel — ~12 synchronised steps for SMPL-X instead of a 55-step serial walk. Same arithmetic per
  // joint as a serial walk: the same bits.
  const int maxDepth = *sMaxDepth;
  for (int level = 0; level <= maxDepth; ++level) {
    if (lead && sDepth[j] == level) {
      int q = j, par = sParent[q];
      const float* R = sR + q * 9;
      float *G = sG + q * 9, *T = sT + q * 3;
      if (par < 0) {
        for (int e = 0; e < 9; ++e) G[e] = R[e];
        for (int c = 0; c < 3; ++c) T[c] = sJ[q * 3 + c];
      } else {
        const float *Gp = sG + par * 9, *Tp = sT + par * 3;
        float rel[3] = {sJ[q * 3] - sJ[par * 3], sJ[q * 3 + 1] - sJ[par * 3 + 1], sJ[q * 3 + 2] - sJ[par * 3 + 2]};
        for (int r = 0; r < 3; ++r) {
          for (int c = 0; c < 3; ++c)
            G[r * 3 + c] = Gp[r * 3] * R[c] + Gp[r * 3 + 1] * R[3 + c] + Gp[r * 3 + 2] * R[6 + c];
          T[r] = Tp[r] + Gp[r * 3] * rel[0] + Gp[r * 3 + 1] * rel[1] + Gp[r * 3 + 2] * rel[2];
        }
      }
    }
    __syncthreads();
  }
  // The transforms first: the product blocks wait for them (publish's fence waits for these writes alone); the
  // posed joints and what the backward needs are written after.
  if (lead) {
    const float *G = sG + j * 9, *jr = sJ + j * 3;
    float* Aj = o.transforms + size_t(b) * d.TS + j * 12;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) Aj[r * 4 + c] = G[r * 3 + c];
      Aj[r * 4 + 3] = sT[j * 3 + r] - (G[r * 3] * jr[0] + G[r * 3 + 1] * jr[1] + G[r * 3 + 2] * jr[2]);
    }
  }
  if (o.chainReady) publish(o.chainReady + b, epoch);
  if (lead) {
    float* sv = o.saved + (size_t(b) * d.J + j) * kSaved;
    for (int e = 0; e < 9; ++e) sv[e] = sR[j * 9 + e], sv[9 + e] = sG[j * 9 + e];
    for (int c = 0; c < 3; ++c) {
      sv[18 + c] = sJ[j * 3 + c];
      o.joints[(size_t(b) * d.J + j) * 3 + c] = sT[j * 3 + c] + in.transl[b * 3 + c];
    }
  }
}

// (1b, many items) One block per item on the chain stream, beside the features and the product.
__global__ void __launch_bounds__(SKIN_MAX_JOINTS)
    jointsForwardKernel(Dims d, Tables t, SkinningInputs in, ForwardOut o) {
  extern __shared__ float chainShared[];
  chainItem(d, t, in, blockIdx.x, chainShared, o);
}

// T = Σ_e w_e A_{j_e} over entries [begin, end) of a vertex's sparse weights; entry(e, j, w) gives joint and
// weight. A: one item's transforms, 12 floats per joint, 16-byte aligned (three 16-byte loads per joint).
template <typename Entry>
__device__ void blendTransforms(const float* A, uint32_t begin, uint32_t end, Entry entry, float T[12]) {
  for (int q = 0; q < 12; ++q) T[q] = 0;
#pragma unroll 4
  for (uint32_t e = begin; e < end; ++e) {
    int j;
    float w;
    entry(e, j, w);
    const float4* Aj = reinterpret_cast<const float4*>(A + j * 12);
    float4 r0 = Aj[0], r1 = Aj[1], r2 = Aj[2];
    float a[12] = {r0.x, r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w, r2.x, r2.y, r2.z, r2.w};
#pragma unroll
    for (int q = 0; q < 12; ++q) T[q] += w * a[q];
  }
}
__device__ void blendTransforms(const Tables& t, const float* A, int v, float T[12]) {
  blendTransforms(
      A, t.weightStart[v], t.weightStart[v + 1],
      [&](uint32_t e, int& j, float& w) { j = int(t.weightJoint[e]), w = t.weightValue[e]; }, T);
}

// Applies T (row-major 3×4) to posed position p, plus the translation.
__device__ void applyTransform(const float T[12], const float* p, const float* transl, float* out) {
  float x = p[0], y = p[1], z = p[2];
  for (int r = 0; r < 3; ++r) out[r] = T[r * 4] * x + T[r * 4 + 1] * y + T[r * 4 + 2] * z + T[r * 4 + 3] + transl[r];
}

// (2) C (M×N, row stride ldc) = A (M×K, row stride lda) · op(B) + bias, B the blend matrix (blendIndex): op(B) = B
// (K×N) or Bᵀ (B stored N×K). 128×128 tiles, 8 k per step, 256 threads of 8×8 outputs (two 4×4 quadrants 64
// apart, so shared-memory reads are 16-byte and conflict-free), the next step's tiles loaded into registers while
// this one is computed (double-buffered shared memory). Each output is summed in a fixed order: deterministic.
// TransB needs lda a multiple of 4 and A zero-padded up to K rounded to 4 (16-byte loads of A and B).
// With split-K (gridDim.z > 1) block z sums k in [z·kChunk, (z+1)·kChunk) into C + z·M·ldc; sumSlicesKernel then
// adds the slices in order, so the result stays deterministic.
constexpr int kTile = 128, kTileK = 8;
template <bool TransB>
__global__ void __launch_bounds__(256, 2)
    gemmKernel(int M, int N, int K, const float* __restrict__ A, int lda, const float* __restrict__ Bm,
               float* __restrict__ C, int ldc, const float* __restrict__ bias, int kChunk) {
  __shared__ __align__(16) float As[2][kTileK][kTile], Bs[2][kTileK][kTile];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  // The forward's blocks run row tiles fastest (grid x): the blocks resident together share a few column groups
  // of the blend matrix, read from DRAM once and then from L2. The backward's grid is (column, row, slice).
  const int m0 = (TransB ? blockIdx.y : blockIdx.x) * kTile, n0 = (TransB ? blockIdx.x : blockIdx.y) * kTile;
  const int kLimit = TransB ? (K + 3) / 4 * 4 : K;  // TransB: the zero padding is read as 16-byte groups
  const int kBegin = blockIdx.z * kChunk, kEnd = min(kLimit, kBegin + kChunk);
  C += size_t(blockIdx.z) * M * ldc;
  // This thread's share of a step's tiles: A row tid/2, k (tid%2)·4 … +3; B (K×N) row tid/32, columns (tid%32)·4 … +3;
  // Bᵀ: B row tid/2, k (tid%2)·4 … +3.
  const int aRow = tid / 2, aK = (tid % 2) * 4;
  const bool aVec = TransB;  // A rows are 16-byte aligned only in the transposed product (padded dL/dv_posed)
  float4 aReg, bReg;
  auto loadTiles = [&](int k0) {
    int m = m0 + aRow, k = k0 + aK;
    if (aVec) {
      aReg = (m < M && k < kEnd) ? __ldg(reinterpret_cast<const float4*>(A + size_t(m) * lda + k))
                                 : make_float4(0, 0, 0, 0);
    } else {
      const float* a = A + size_t(m) * lda;
      bool row = m < M;
      aReg.x = row && k < kEnd ? __ldg(a + k) : 0.f;
      aReg.y = row && k + 1 < kEnd ? __ldg(a + k + 1) : 0.f;
      aReg.z = row && k + 2 < kEnd ? __ldg(a + k + 2) : 0.f;
      aReg.w = row && k + 3 < kEnd ? __ldg(a + k + 3) : 0.f;
    }
    if (TransB) {
      int n = n0 + aRow;
      bReg = (n < N && k < kEnd) ? __ldg(reinterpret_cast<const float4*>(Bm + blendIndex(n, k, N)))
                                 : make_float4(0, 0, 0, 0);
    } else {
      int kb = k0 + tid / 32, n = n0 + (tid % 32) * 4;
      bReg = (kb < kEnd && n < N) ? __ldg(reinterpret_cast<const float4*>(Bm + blendIndex(kb, n, K)))
                                  : make_float4(0, 0, 0, 0);
    }
  };
  auto storeTiles = [&](int buf) {
    As[buf][aK][aRow] = aReg.x, As[buf][aK + 1][aRow] = aReg.y, As[buf][aK + 2][aRow] = aReg.z,
    As[buf][aK + 3][aRow] = aReg.w;
    if (TransB) {
      Bs[buf][aK][aRow] = bReg.x, Bs[buf][aK + 1][aRow] = bReg.y, Bs[buf][aK + 2][aRow] = bReg.z,
      Bs[buf][aK + 3][aRow] = bReg.w;
    } else {
      *reinterpret_cast<float4*>(&Bs[buf][tid / 32][(tid % 32) * 4]) = bReg;
    }
  };
  float acc[8][8] = {};
  int buf = 0;
  if (kBegin < kEnd) {
    loadTiles(kBegin);
    storeTiles(0);
  }
  __syncthreads();
  for (int k0 = kBegin; k0 < kEnd; k0 += kTileK) {
    const bool more = k0 + kTileK < kEnd;
    if (more) loadTiles(k0 + kTileK);
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float4 a0 = *reinterpret_cast<const float4*>(&As[buf][kk][ty * 4]);
      float4 a1 = *reinterpret_cast<const float4*>(&As[buf][kk][64 + ty * 4]);
      float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][kk][tx * 4]);
      float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][kk][64 + tx * 4]);
      float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * bv[j];
    }
    if (more) storeTiles(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
  const bool vecStore = ldc % 4 == 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    int m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (m >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int n = n0 + h * 64 + tx * 4;
      float v[4];
      for (int j = 0; j < 4; ++j) v[j] = acc[i][h * 4 + j] + (bias && n + j < N ? bias[n + j] : 0.f);
      float* c = C + size_t(m) * ldc + n;
      if (vecStore && n + 3 < N) {
        *reinterpret_cast<float4*>(c) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
        for (int j = 0; j < 4; ++j)
          if (n + j < N) c[j] = v[j];
      }
    }
  }
}

// (2, a few dozen items) The same product for M ≤ 64: 32×128 tiles, 32 k per step, 128 threads of 8 rows × 4
// columns (a warp shares its rows: broadcast shared loads), the next step loaded into registers while this one is
// computed. Big steps keep enough of B in flight to stream it at full bandwidth with few items. Split-K as
// gemmKernel's.
constexpr int kMidRows = 32, kMidCols = 128, kMidK = 32, kMidThreads = 128;
template <bool TransB>
__global__ void __launch_bounds__(kMidThreads)
    gemmMidKernel(int M, int N, int K, const float* __restrict__ A, int lda, const float* __restrict__ Bm,
                  float* __restrict__ C, int ldc, const float* __restrict__ bias, int kChunk) {
  __shared__ __align__(16) float As[2][kMidK][kMidRows], Bs[2][kMidK][kMidCols];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int m0 = (TransB ? blockIdx.y : blockIdx.x) * kMidRows,
            n0 = (TransB ? blockIdx.x : blockIdx.y) * kMidCols;  // as gemmKernel
  const int kLimit = TransB ? (K + 3) / 4 * 4 : K;
  const int kBegin = blockIdx.z * kChunk, kEnd = min(kLimit, kBegin + kChunk);
  C += size_t(blockIdx.z) * M * ldc;
  // A: row tid/4, k (tid%4)·8 … +7. B (K×N): rows tid/32 + 4i, columns (tid%32)·4 … +3. Bᵀ: B row tid, k 0 … 31.
  const int aRow = tid / 4, aK = (tid % 4) * 8;
  float aReg[8];
  float4 bReg[8];
  auto loadTiles = [&](int k0) {
    int m = m0 + aRow;
    const float* a = A + size_t(m) * lda + k0 + aK;
#pragma unroll
    for (int i = 0; i < 8; ++i) aReg[i] = (m < M && k0 + aK + i < kEnd) ? __ldg(a + i) : 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (TransB) {
        int n = n0 + tid, k = k0 + 4 * i;
        bReg[i] = (n < N && k < kEnd) ? __ldg(reinterpret_cast<const float4*>(Bm + blendIndex(n, k, N)))
                                      : make_float4(0, 0, 0, 0);
      } else {
        int k = k0 + tid / 32 + 4 * i, n = n0 + (tid % 32) * 4;
        bReg[i] = (k < kEnd && n < N) ? __ldg(reinterpret_cast<const float4*>(Bm + blendIndex(k, n, K)))
                                      : make_float4(0, 0, 0, 0);
      }
    }
  };
  auto storeTiles = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 8; ++i) As[buf][aK + i][aRow] = aReg[i];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (TransB) {
        Bs[buf][4 * i][tid] = bReg[i].x, Bs[buf][4 * i + 1][tid] = bReg[i].y;
        Bs[buf][4 * i + 2][tid] = bReg[i].z, Bs[buf][4 * i + 3][tid] = bReg[i].w;
      } else {
        *reinterpret_cast<float4*>(&Bs[buf][tid / 32 + 4 * i][(tid % 32) * 4]) = bReg[i];
      }
    }
  };
  float acc[8][4] = {};
  int buf = 0;
  if (kBegin < kEnd) {
    loadTiles(kBegin);
    storeTiles(0);
  }
  __syncthreads();
  for (int k0 = kBegin; k0 < kEnd; k0 += kMidK) {
    const bool more = k0 + kMidK < kEnd;
    if (more) loadTiles(k0 + kMidK);
#pragma unroll
    for (int kk = 0; kk < kMidK; ++kk) {
      float4 a0 = *reinterpret_cast<const float4*>(&As[buf][kk][warp * 8]);
      float4 a1 = *reinterpret_cast<const float4*>(&As[buf][kk][warp * 8 + 4]);
      float4 bv = *reinterpret_cast<const float4*>(&Bs[buf][kk][lane * 4]);
      float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        acc[i][0] += a[i] * bv.x, acc[i][1] += a[i] * bv.y, acc[i][2] += a[i] * bv.z, acc[i][3] += a[i] * bv.w;
      }
    }
    if (more) storeTiles(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
  const int n = n0 + lane * 4;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    int m = m0 + warp * 8 + i;
    if (m >= M) continue;
    float v[4];
    for (int j = 0; j < 4; ++j) v[j] = acc[i][j] + (bias && n + j < N ? bias[n + j] : 0.f);
    float* c = C + size_t(m) * ldc + n;
    if (ldc % 4 == 0 && n + 3 < N) {
      *reinterpret_cast<float4*>(c) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      for (int j = 0; j < 4; ++j)
        if (n + j < N) c[j] = v[j];
    }
  }
}

__global__ void sumSlicesKernel(int slices, size_t count, const float* __restrict__ parts, float* __restrict__ C) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  float acc = 0;
  for (int z = 0; z < slices; ++z) acc += parts[z * count + i];
  C[i] = acc;
}

// (2, tensor cores, more than 64 items) gemmKernel's product, C = A·op(B) + bias with split-K, on the tensor cores
// at fp32 accuracy ("3xTF32"): each operand splits into its TF32 rounding and the TF32 rounding of the remainder,
// x = hi + lo with |x − hi − lo| ≤ 2⁻²²|x|, and three products lo·hi + hi·lo + hi·hi (lo·lo, ≤ 2⁻²²|ab|, is
// dropped) accumulate in fp32: the error of fp32 accumulation (measured in the CUDA test). Tiles 64 × 128, 32 k
// per stage, kTcStages stages in flight (cp.async, zero-filled past the edges); 8 warps of 32 × 32 outputs
// (mma.sync m16n8k8). Each output sums in a fixed order: deterministic. It beats the fp32-FMA gemmKernel on large
// batches; on small ones it is issue-bound and gemmMidKernel is faster.
// B's stage: [k][n] (row stride kTcStrideB) for op(B) = B, [n][k] (kTcStrideA) for Bᵀ (B's rows are then k-contiguous).
constexpr int kTcRows = 64, kTcCols = 128, kTcK = 32, kTcStages = 3, kTcThreads = kTcRows * 4;
constexpr int kTcStrideA = kTcK + 4, kTcStrideB = kTcCols + 8;  // pads: conflict-free fragment loads
constexpr int kTcStageB = kTcCols * kTcStrideA > kTcK* kTcStrideB ? kTcCols* kTcStrideA : kTcK* kTcStrideB;
constexpr size_t tensorSharedBytes() { return size_t(kTcStages) * (kTcRows * kTcStrideA + kTcStageB) * sizeof(float); }
__device__ inline void copyAsync16(float* smem, const float* gmem, bool valid) {
  unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "r"(valid ? 16 : 0) : "memory");
}
__device__ inline void copyAsync4(float* smem, const float* gmem, bool valid) {
  unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(gmem), "r"(valid ? 4 : 0) : "memory");
}
__device__ inline void splitTf32(float x, unsigned& hi, unsigned& lo) {
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(hi) : "f"(x));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(lo) : "f"(x - __uint_as_float(hi)));
}
__device__ inline void mmaTf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // the host launches this kernel only on compute capability ≥ 8.0
#endif
}
template <bool TransB>
__global__ void __launch_bounds__(kTcThreads)
    gemmTensorKernel(int M, int N, int K, const float* __restrict__ A, int lda, const float* __restrict__ Bm,
                     float* __restrict__ C, int ldc, const float* __restrict__ bias, int kChunk) {
  constexpr int Rows = kTcRows, kThreads = kTcThreads;
  extern __shared__ float4 tensorShared4[];
  float* As = reinterpret_cast<float*>(tensorShared4);  // [stage][Rows][kTcStrideA]
  float* Bs = As + kTcStages * Rows * kTcStrideA;       // [stage][kTcStageB]
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  // Row tiles fastest in the forward, as gemmKernel; the backward's grid is (column, row, slice).
  const int m0 = (TransB ? blockIdx.y : blockIdx.x) * Rows, n0 = (TransB ? blockIdx.x : blockIdx.y) * kTcCols;
  const int wm = warp / 4 * 32, wn = warp % 4 * 32;  // this warp's outputs within the tile
  const int kBegin = blockIdx.z * kChunk, kEnd = min(K, kBegin + kChunk);
  C += size_t(blockIdx.z) * M * ldc;
  auto loadStage = [&](int stage, int k0) {
    float* as = As + stage * Rows * kTcStrideA;
    if (TransB) {  // A rows 16-byte aligned (padded dL/dv_posed)
      for (int i = tid; i < Rows * kTcK / 4; i += kThreads) {
        int r = i / (kTcK / 4), k = i % (kTcK / 4) * 4;
        bool valid = m0 + r < M && k0 + k < kEnd;
        copyAsync16(as + r * kTcStrideA + k, valid ? A + size_t(m0 + r) * lda + k0 + k : A, valid);
      }
    } else {
      for (int i = tid; i < Rows * kTcK; i += kThreads) {  // A rows are not 16-byte aligned (lda = K): 4-byte copies
        int r = i / kTcK, k = i % kTcK;
        bool valid = m0 + r < M && k0 + k < kEnd;
        copyAsync4(as + r * kTcStrideA + k, valid ? A + size_t(m0 + r) * lda + k0 + k : A, valid);
      }
    }
    float* bs = Bs + stage * kTcStageB;
    for (int i = tid; i < kTcK * kTcCols / 4; i += kThreads) {
      if (TransB) {  // B row n, k … k + 3: within one 64-column group (k0 is a multiple of 32)
        int n = i / (kTcK / 4), k = i % (kTcK / 4) * 4;
        bool valid = n0 + n < N && k0 + k < kEnd;
        copyAsync16(bs + n * kTcStrideA + k, valid ? Bm + blendIndex(n0 + n, k0 + k, N) : Bm, valid);
      } else {
        int k = i / (kTcCols / 4), n = i % (kTcCols / 4) * 4;
        bool valid = k0 + k < kEnd && n0 + n < N;
        copyAsync16(bs + k * kTcStrideB + n, valid ? Bm + blendIndex(k0 + k, n0 + n, K) : Bm, valid);
      }
    }
  };
  const int steps = kBegin < kEnd ? (kEnd - kBegin + kTcK - 1) / kTcK : 0;
#pragma unroll
  for (int s = 0; s < kTcStages - 1; ++s) {
    if (s < steps) loadStage(s, kBegin + s * kTcK);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  float acc[2][4][4] = {};
  for (int step = 0; step < steps; ++step) {
    asm volatile("cp.async.wait_group %0;" ::"n"(kTcStages - 2) : "memory");
    __syncthreads();  // this step's stage has landed for every thread, and the previous step's stage is free
    const int ahead = step + kTcStages - 1;
    if (ahead < steps) loadStage(ahead % kTcStages, kBegin + ahead * kTcK);
    asm volatile("cp.async.commit_group;" ::: "memory");  // empty groups keep the wait count uniform
    const float* as = As + step % kTcStages * Rows * kTcStrideA;
    const float* bs = Bs + step % kTcStages * kTcStageB;
#pragma unroll
    for (int kk = 0; kk < kTcK; kk += 8) {
      unsigned aHi[2][4], aLo[2][4], bHi[4][2], bLo[4][2];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const float* a = as + (wm + mt * 16 + gid) * kTcStrideA + kk + tig;
        splitTf32(a[0], aHi[mt][0], aLo[mt][0]);
        splitTf32(a[8 * kTcStrideA], aHi[mt][1], aLo[mt][1]);
        splitTf32(a[4], aHi[mt][2], aLo[mt][2]);
        splitTf32(a[8 * kTcStrideA + 4], aHi[mt][3], aLo[mt][3]);
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int n = wn + nt * 8 + gid, k = kk + tig;
        const float* b = TransB ? bs + n * kTcStrideA + k : bs + k * kTcStrideB + n;
        splitTf32(b[0], bHi[nt][0], bLo[nt][0]);
        splitTf32(b[TransB ? 4 : 4 * kTcStrideB], bHi[nt][1], bLo[nt][1]);
      }
      // Small terms first; each pass over the 8 tiles issues 8 independent products (no back-to-back dependence).
#pragma unroll
      for (int t = 0; t < 8; ++t) mmaTf32(acc[t / 4][t % 4], aLo[t / 4], bHi[t % 4]);
#pragma unroll
      for (int t = 0; t < 8; ++t) mmaTf32(acc[t / 4][t % 4], aHi[t / 4], bLo[t % 4]);
#pragma unroll
      for (int t = 0; t < 8; ++t) mmaTf32(acc[t / 4][t % 4], aHi[t / 4], bHi[t % 4]);
    }
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const int n = n0 + wn + nt * 8 + 2 * tig;
      if (n >= N) continue;
      const bool pair = n + 1 < N;  // N (and ldc) may be odd in the backward (features)
      const float b0 = bias ? bias[n] : 0.f, b1 = bias && pair ? bias[n + 1] : 0.f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm + mt * 16 + gid + 8 * h;
        if (m >= M) continue;
        float* c = C + size_t(m) * ldc + n;
        if (pair && ldc % 2 == 0) {
          *reinterpret_cast<float2*>(c) = make_float2(acc[mt][nt][2 * h] + b0, acc[mt][nt][2 * h + 1] + b1);
        } else {
          c[0] = acc[mt][nt][2 * h] + b0;
          if (pair) c[1] = acc[mt][nt][2 * h + 1] + b1;
        }
      }
    }
}

// A vertex group's skinning weights (CSR of its 21 vertices) and the joints they name (neighbouring vertices name
// few), built once per model (buildGroupWeights). The fused forward copies a group's record into shared memory with
// cp.async beside its product stream, and its epilogue loads those joints' transforms for its items into shared
// memory in one pass, then skins from shared memory alone. A group with more entries or joints than fit reads them
// from global memory instead. (Staging the record on the device before the stream would put three dependent round
// trips and three barriers on each block's critical path.)
constexpr int kGroupEntries = 8 * kGroupVertices, kStagedJoints = 16;
struct alignas(16) GroupWeights {
  uint32_t start[kGroupVertices + 1];  // weightStart of the group's vertices
  int slot[kGroupEntries];             // entry → the joint's slot in the staged transforms
  float weight[kGroupEntries];
  int jointOfSlot[SKIN_MAX_JOINTS];
  int slots;  // the number of joints named; 0 when the entries or joints did not fit (read from global)
};
std::vector<GroupWeights> buildGroupWeights(const SkinningTables& h, int groups) {
  std::vector<GroupWeights> out(static_cast<size_t>(groups));
  const int V = int(h.vertexCount);
  for (int g = 0; g < groups; ++g) {
    GroupWeights& w = out[size_t(g)];
    w = {};
    const int v0 = std::min(g * kGroupVertices, V), count = std::min(kGroupVertices, V - v0);  // padding groups: none
    for (int i = 0; i <= count; ++i) w.start[i] = h.weightStart[size_t(v0 + i)];
    const uint32_t base = w.start[0], entries = w.start[count] - base;
    if (entries > uint32_t(kGroupEntries)) continue;
    unsigned long long mask = 0;
    for (uint32_t i = 0; i < entries; ++i) mask |= 1ull << h.weightJoint[base + i];
    const int named = std::popcount(mask);
    if (named > kStagedJoints) continue;
    for (uint32_t i = 0; i < entries; ++i) {
      w.slot[i] = std::popcount(mask & ((1ull << h.weightJoint[base + i]) - 1));
      w.weight[i] = h.weightValue[base + i];
    }
    for (int j = 0, s = 0; j < SKIN_MAX_JOINTS; ++j)
      if (mask >> j & 1) w.jointOfSlot[s++] = j;
    w.slots = named;
  }
  return out;
}
// Whole block: starts copying group g's record into w (cp.async). The caller waits (cp.async.wait_all) and syncs
// before reading it.
__device__ void fetchGroupWeights(const Tables& t, int g, GroupWeights& w) {
  constexpr int kChunks = sizeof(GroupWeights) / 16;
  const float* src = reinterpret_cast<const float*>(t.groupWeights + g);
  for (int i = threadIdx.x; i < kChunks; i += blockDim.x)
    copyAsync16(reinterpret_cast<float*>(&w) + 4 * i, src + 4 * i, true);
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// The fused forward's epilogue: skins group g's vertices for items [0, items), from posed positions in shared
// memory (kGroupColumns per item), once the items' transforms are published. staged: kStagedJoints × 12 floats
// per item of shared memory; transl: the items' translations, 4 floats apart (shared memory).
__device__ void skinGroup(const Dims& d, const Tables& t, const ForwardOut& o, const float* posed, const float* transl,
                          int items, int g, const GroupWeights& w, float* staged) {
  const int slots = w.slots, perItem = slots * 12, v0 = g * kGroupVertices;
  if (slots) {  // 16-byte loads of the named joints' transforms, all in flight together
    for (int i = threadIdx.x; i < items * slots * 3; i += blockDim.x) {
      int r = i / (slots * 3), s = i / 3 % slots, q = i % 3;
      reinterpret_cast<float4*>(staged)[i] =
          reinterpret_cast<const float4*>(o.transforms + size_t(r) * d.TS + w.jointOfSlot[s] * 12)[q];
    }
    __syncthreads();
  }
  for (int p = threadIdx.x; p < items * kGroupVertices; p += blockDim.x) {
    int r = p / kGroupVertices, local = p % kGroupVertices, v = v0 + local;
    if (v >= d.V) continue;
    float T[12];
    if (slots) {
      uint32_t base = w.start[0];
      blendTransforms(
          staged + r * perItem, w.start[local] - base, w.start[local + 1] - base,
          [&](uint32_t e, int& j, float& wt) { j = w.slot[e], wt = w.weight[e]; }, T);
    } else {
      blendTransforms(t, o.transforms + size_t(r) * d.TS, v, T);
    }
    applyTransform(T, posed + r * kGroupColumns + posedColumn(local), transl + r * 4,
                   o.vertices + (size_t(r) * d.V + v) * 3);
  }
}

// A fused kernel's block takes its role from a ticket (the order blocks start in), not from blockIdx: roles
// [0, chainBlocks) run the items' chains, the rest the product. The chains then run on blocks that are already
// resident and wait for nothing, so the product blocks' waits always end, whatever the GPU's block scheduling
// (no cooperative launch needed, any grid size). Every launch on one counter has the same grid (one counter per
// item count), and the counter cycles through a whole number of grids, so launch n takes tickets [n·grid,
// (n+1)·grid): the ticket gives the role and the launch's epoch, n + 1 (≥ 1, never the previous launch's), and
// nothing is reset when a launch ends (a reset by the launch's last block would need a fence and an atomic on
// every block's critical path).
struct Role {
  int index;
  unsigned epoch;  // what this launch's chain blocks publish
};
__device__ Role takeRole(const ForwardOut& o) {
  if (!o.tickets) return {int(blockIdx.x), 0u};
  __shared__ unsigned ticket;
  if (threadIdx.x == 0) ticket = atomicInc(o.tickets, gridDim.x * (~0u / gridDim.x) - 1u);  // then back to 0
  __syncthreads();
  return {int(ticket % gridDim.x), ticket / gridDim.x + 1u};
}

// (1–3 fused, ≤ 8 items) One kernel, bandwidth-bound on the 64 MB blend matrix: chainBlocks blocks run the items'
// chains (chainItem) and publish the transforms; the others build the items' features (54 rotations each: cheaper
// than waiting for a chain block to publish them), stream the product
// (features · blend + template) one 64-column group (21 vertices) at a time and skin the group's vertices
// themselves. A product block holds all of A (transposed in shared memory: one 16-byte load gives 4 rows), 4
// columns per thread (16-byte loads of the group's contiguous range, kInFlight per thread in flight); its 16 slices of
// 16 threads split K and add their partial sums in a fixed order (deterministic). Without the chain overlap, two
// launches: chain blocks only, then product blocks only (chainBlocks = 0), ordered by the stream.
constexpr int kSkinnyThreadsPerSlice = 16, kSkinnyCols = 4 * kSkinnyThreadsPerSlice, kSkinnySlices = 16, kInFlight = 4;
static_assert(kSkinnyCols == kGroupColumns, "a skinny block's columns are one vertex group");
template <int Rows>
size_t fewSharedBytes(int F) {  // enough for the chain blocks too
  return std::max(
      chainSharedBytes(),
      (size_t(Rows) * F + (kSkinnySlices + Rows + 1) * kSkinnyCols + Rows * (kStagedJoints * 12 + 4)) * sizeof(float) +
          sizeof(GroupWeights));
}
// 4 rows: ≤ 64 registers, so 4 blocks per SM hold all 500 groups of an SMPL-X-sized model at once.
template <int Rows>
__global__ void __launch_bounds__(256, Rows == 4 ? 4 : 3)
    forwardFewKernel(Dims d, Tables t, SkinningInputs in, ForwardOut o, int chainBlocks, int ldb) {
  extern __shared__ float4 shared4[];
  float* smem = reinterpret_cast<float*>(shared4);
  const Role role = takeRole(o);
  const int productBlocks = gridDim.x - chainBlocks;
  if (role.index < chainBlocks) {
    chainItem(d, t, in, role.index, smem, o, role.epoch);
    return;
  }
  const int M = d.B, K = d.F(), groups = ldb / kGroupColumns;
  float* aT = smem;                                    // K × Rows (A transposed, zero rows beyond M)
  float* part = aT + K * Rows;                         // [slice][kSkinnyCols] partial sums
  float* posed = part + kSkinnySlices * kSkinnyCols;   // [Rows][kSkinnyCols]
  float* staged = posed + Rows * kSkinnyCols;          // the epilogue's transforms: kStagedJoints per item
  float* transl = staged + Rows * kStagedJoints * 12;  // [Rows][4]: the items' translations
  float* bias = transl + Rows * 4;                     // the group's template columns
  GroupWeights& weights = *reinterpret_cast<GroupWeights*>(bias + kSkinnyCols);
  const int tx = threadIdx.x % kSkinnyThreadsPerSlice, slice = threadIdx.x / kSkinnyThreadsPerSlice;
  bool haveA = false;
  for (int g = role.index - chainBlocks; g < groups; g += productBlocks) {
    const float4* B4 = reinterpret_cast<const float4*>(t.blend + blendIndex(0, g * kGroupColumns, K)) + tx;
    constexpr int ldb4 = kGroupColumns / 4;
    float4 next[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      int k = slice + kSkinnySlices * u;
      next[u] = k < K ? __ldg(B4 + k * ldb4) : make_float4(0, 0, 0, 0);
    }
    // Everything the epilogue reads from global memory but the transforms is on its way before the stream, so that
    // no round trip follows it: the group's weights record and template columns, the items' translations.
    if (threadIdx.x < kSkinnyCols / 4)
      copyAsync16(bias + 4 * threadIdx.x, t.vTemplate + g * kSkinnyCols + 4 * threadIdx.x, true);
    fetchGroupWeights(t, g, weights);
    if (!haveA) {  // the first group's loads are in flight while the block builds the items' features
      for (int i = threadIdx.x; i < M * 3; i += blockDim.x) transl[i / 3 * 4 + i % 3] = __ldg(in.transl + i);
      const int perItem = d.J - 1 + d.K;
      for (int i = threadIdx.x; i < M * perItem; i += blockDim.x) {
        const int r = i / perItem;
        itemFeature(d, in, r, i % perItem, [aT, r](int k, float v) { aT[k * Rows + r] = v; });
      }
      for (int i = threadIdx.x; i < K * Rows; i += blockDim.x)
        if (i % Rows >= M) aT[i] = 0.f;  // rows beyond M
      __syncthreads();
      haveA = true;
    }
    // Each consumed load is replaced at once by the one kInFlight steps ahead: kInFlight loads stay in flight.
    float acc[Rows][4] = {};
    for (int k0 = slice; k0 < K; k0 += kSkinnySlices * kInFlight) {
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int k = k0 + kSkinnySlices * u, ahead = k + kSkinnySlices * kInFlight;
        const float4 b = next[u];
        next[u] = ahead < K ? __ldg(B4 + ahead * ldb4) : make_float4(0, 0, 0, 0);
        if (k >= K) break;
        const float4* a4 = reinterpret_cast<const float4*>(aT + k * Rows);
#pragma unroll
        for (int r4 = 0; r4 < Rows / 4; ++r4) {
          float4 x = a4[r4];
          float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            float* a = acc[r4 * 4 + i];
            a[0] += xs[i] * b.x, a[1] += xs[i] * b.y, a[2] += xs[i] * b.z, a[3] += xs[i] * b.w;
          }
        }
      }
    }
    const int n = g * kSkinnyCols + 4 * tx;           // this thread's first column
    asm volatile("cp.async.wait_all;" ::: "memory");  // this thread's part of the bias and the record (long done)
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      if (r >= M) break;  // uniform across the block
      for (int c = 0; c < 4; ++c) part[slice * kSkinnyCols + 4 * tx + c] = acc[r][c];
      __syncthreads();  // (the first also makes the bias and the record visible)
      if (slice == 0)
        for (int c = 0; c < 4; ++c) {
          float sum = bias[4 * tx + c];
          for (int z = 0; z < kSkinnySlices; ++z) sum += part[z * kSkinnyCols + 4 * tx + c];
          posed[r * kSkinnyCols + 4 * tx + c] = sum;
          o.vPosed[size_t(r) * ldb + n + c] = sum;
        }
      __syncthreads();
    }
    // The items' transforms (the flags keep this launch's epoch: later groups pass at once).
    waitFor(o.chainReady, M, role.epoch);
    skinGroup(d, t, o, posed, transl, M, g, weights, staged);
    __syncthreads();  // the next group reuses part and posed
  }
}

// (2ᵀ, few items) C (M×N) = A·Bᵀ for M ≤ Rows, A (M×K, row stride lda, zero-padded to a multiple of 4) and B the
// blend matrix (N rows of K, blendIndex). A block owns two output columns (B rows): 16-byte loads, 4 in flight per
// thread, each A load serving both; warp shuffles then the 8 warps in order: a fixed-order sum (deterministic).
template <int Rows>
__global__ void __launch_bounds__(256) skinnyGemmTransKernel(int M, int N, int K, const float* __restrict__ A, int lda,
                                                             const float* __restrict__ Bm, float* __restrict__ C) {
  __shared__ float red[2][Rows][8];
  const int n = blockIdx.x * 2, K4 = (K + 3) / 4;
  const bool second = n + 1 < N;
  constexpr int kGroup4 = kGroupColumns / 4;  // 16-byte units per group row; row n + 1 follows row n in a group
  const float4* B4 = reinterpret_cast<const float4*>(Bm);
  const float4* A4 = reinterpret_cast<const float4*>(A);
  float acc0[Rows] = {}, acc1[Rows] = {};
#pragma unroll 4
  for (int k = threadIdx.x; k < K4; k += 256) {
    const size_t i0 = (size_t(k / kGroup4) * N + n) * kGroup4 + k % kGroup4;
    float4 b0 = __ldg(B4 + i0), b1 = __ldg(B4 + i0 + (second ? kGroup4 : 0));
#pragma unroll
    for (int r = 0; r < Rows; ++r)
      if (r < M) {
        float4 a = __ldg(A4 + size_t(r) * (lda / 4) + k);
        acc0[r] += a.x * b0.x + a.y * b0.y + a.z * b0.z + a.w * b0.w;
        acc1[r] += a.x * b1.x + a.y * b1.y + a.z * b1.z + a.w * b1.w;
      }
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    for (int o = 16; o > 0; o >>= 1) {
      acc0[r] += __shfl_down_sync(0xffffffffu, acc0[r], o);
      acc1[r] += __shfl_down_sync(0xffffffffu, acc1[r], o);
    }
    if (lane == 0) red[0][r][warp] = acc0[r], red[1][r][warp] = acc1[r];
  }
  __syncthreads();
  if (threadIdx.x < 2 * M) {
    int col = threadIdx.x / M, r = threadIdx.x % M;
    if (col == 1 && !second) return;
    float sum = 0;
    for (int w = 0; w < 8; ++w) sum += red[col][r][w];
    C[size_t(r) * N + n + col] = sum;
  }
}

// (3, many items) One thread per (item, vertex): blend the transforms of the vertex's joints and apply.
__global__ void skinForwardKernel(Dims d, Tables t, const float* __restrict__ vPosed, int stride,
                                  const float* __restrict__ transforms, const float* __restrict__ transl,
                                  float* __restrict__ out) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= size_t(d.B) * d.V) return;
  int b = int(i / d.V), v = int(i % d.V);
  float T[12];
  blendTransforms(t, transforms + size_t(b) * d.TS, v, T);
  applyTransform(T, vPosed + size_t(b) * stride + posedColumn(v), transl + b * 3, out + i * 3);
}

// Backward (1): dL/dv_posed = Tᵀ dL/dv, item rows `stride` floats apart (the padding stays zero).
__global__ void skinBackwardVertexKernel(Dims d, Tables t, const float* __restrict__ transforms,
                                         const float* __restrict__ gradV, float* __restrict__ gradVPosed, int stride) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= size_t(d.B) * d.V) return;
  int b = int(i / d.V), v = int(i % d.V);
  float T[12];
  blendTransforms(t, transforms + size_t(b) * d.TS, v, T);
  const float* g = gradV + i * 3;
  float* out = gradVPosed + size_t(b) * stride + posedColumn(v);
  for (int c = 0; c < 3; ++c) out[c] = T[c] * g[0] + T[4 + c] * g[1] + T[8 + c] * g[2];
}

// Backward (2): per (chunk, item) block: a chunk's share of dL/dA_j = Σ_v w_vj g_v [p_v; 1]ᵀ over up to 256 of
// the joint's vertices (CSC), or (the last chunks) of Σ_v dL/dv for the translation; partial sums per chunk, summed
// per joint in chunk order by chainBackwardKernel: a fixed order, and enough blocks for the big joints at batch 1.
__global__ void __launch_bounds__(kChunkThreads)
    skinBackwardJointKernel(Dims d, Tables t, const float* __restrict__ vPosed, int stride,
                            const float* __restrict__ gradV, float* __restrict__ parts) {
  __shared__ float red[12][kChunkThreads / 32];
  int chunk = blockIdx.x, b = blockIdx.y;
  float acc[12] = {};
  const float* g = gradV + size_t(b) * d.V * 3;
  if (chunk < d.chunks) {
    const float* p = vPosed + size_t(b) * stride;
    uint32_t end = t.chunkRange[2 * chunk + 1];
    for (uint32_t e = t.chunkRange[2 * chunk] + threadIdx.x; e < end; e += kChunkThreads) {
      uint32_t v = t.jointVertex[e];
      float w = t.jointWeight[e];
      const float* pv = p + posedColumn(int(v));
      float ph[4] = {pv[0], pv[1], pv[2], 1.f};
      for (int r = 0; r < 3; ++r) {
        float wg = w * g[v * 3 + r];
        for (int c = 0; c < 4; ++c) acc[r * 4 + c] += wg * ph[c];
      }
    }
  } else {
    int v0 = (chunk - d.chunks) * kTranslChunkVertices, v1 = min(d.V, v0 + kTranslChunkVertices);
    for (int v = v0 + threadIdx.x; v < v1; v += kChunkThreads)
      for (int r = 0; r < 3; ++r) acc[r] += g[v * 3 + r];
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int q = 0; q < 12; ++q) {
    for (int o = 16; o > 0; o >>= 1) acc[q] += __shfl_down_sync(0xffffffffu, acc[q], o);
    if (lane == 0) red[q][warp] = acc[q];
  }
  __syncthreads();
  if (threadIdx.x < 12) {
    float sum = 0;
    for (int w = 0; w < kChunkThreads / 32; ++w) sum += red[threadIdx.x][w];
    parts[(size_t(b) * (d.chunks + d.translChunks) + chunk) * 12 + threadIdx.x] = sum;
  }
}

// Backward (3): one block per item, beside the blend product's backward (it needs only the per-joint sums). The
// forward's per-joint values go to shared memory; the reverse chain runs one tree level at a time, deepest first,
// with 9 threads per joint (one per 3×3 entry): a joint first gathers its children's shares (final: they are one
// level deeper) in a fixed order, then adds its own rotation and rest-joint gradients. Out: per joint, the chain's
// share of dL/dR (9) and dL/drest-joint (3) in chainGrads; the translation's gradient.
constexpr int kJointsBackwardThreads = 9 * SKIN_MAX_JOINTS;
__global__ void __launch_bounds__(kJointsBackwardThreads, 2)
    chainBackwardKernel(Dims d, Tables t, const float* saved, const float* parts, const float* gradJoints,
                        float* chainGrads, float* gradTransl) {
  __shared__ float sv[SKIN_MAX_JOINTS * kSaved];  // per joint: R (9), G (9), rest joint (3)
  __shared__ float wk[SKIN_MAX_JOINTS * 24];      // per joint: gG (9), gT (3), gJrest (3), gR (9)
  __shared__ int sParent[SKIN_MAX_JOINTS], sDepth[SKIN_MAX_JOINTS], sMaxDepth;
  __shared__ unsigned long long sChildren[SKIN_MAX_JOINTS];  // bit c: joint c is a child
  const int b = blockIdx.x, tid = threadIdx.x;
  for (int i = tid; i < d.J * kSaved; i += blockDim.x) sv[i] = saved[size_t(b) * d.J * kSaved + i];
  if (tid < d.J) sParent[tid] = t.parents[tid], sChildren[tid] = 0;
  if (tid == 0) sMaxDepth = 0;
  __syncthreads();
  const float* itemParts = parts + size_t(b) * (d.chunks + d.translChunks) * 12;
  if (tid < d.J) {
    const int j = tid;
    int depth = 0;  // the model is a validated forest; the cap only guards the loop
    for (int p = sParent[j]; p >= 0 && depth < d.J; p = sParent[p]) ++depth;
    sDepth[j] = depth;
    atomicMax(&sMaxDepth, depth);
    if (sParent[j] >= 0) atomicOr(&sChildren[sParent[j]], 1ull << j);
    float gA[12] = {};  // dL/dA_j: the joint's chunks in order
#pragma unroll 4
    for (uint32_t c = t.jointFirstChunk[j]; c < t.jointFirstChunk[j + 1]; ++c)
#pragma unroll
      for (int q = 0; q < 12; ++q) gA[q] += itemParts[c * 12 + q];
    const float *G = sv + j * kSaved + 9, *jr = sv + j * kSaved + 18;
    float *gG = wk + j * 24, *gT = gG + 9, *gJ = gG + 12, *gR = gG + 15;
    for (int c = 0; c < 3; ++c) gJ[c] = 0;
    for (int r = 0; r < 3; ++r) {
      float gt = gA[r * 4 + 3];
      gT[r] = gt + (gradJoints ? gradJoints[(size_t(b) * d.J + j) * 3 + r] : 0.f);
      for (int c = 0; c < 3; ++c) {
        gG[r * 3 + c] = gA[r * 4 + c] - gt * jr[c];
        gJ[c] -= G[r * 3 + c] * gt;
      }
    }
    for (int e = 0; e < 9; ++e) gR[e] = 0;  // dL/dfeatures joins in paramsBackwardKernel
  }
  __syncthreads();
  const int q = tid / 9, e = tid % 9, r = e / 3, c = e % 3;
  for (int level = sMaxDepth; level >= 0; --level) {
    const bool mine = q < d.J && sDepth[q] == level;
    float *gG = wk + q * 24, *gT = gG + 9, *gJ = gG + 12, *gR = gG + 15;
    if (mine) {
      const float *Gq = sv + q * kSaved + 9, *jq = sv + q * kSaved + 18;
      float accG = 0, accT = 0, accJ = 0;
      for (unsigned long long kids = sChildren[q]; kids; kids &= kids - 1) {  // children in increasing index
        int ch = __ffsll(kids) - 1;
        const float *gGc = wk + ch * 24, *gTc = gGc + 9, *Rc = sv + ch * kSaved, *jc = sv + ch * kSaved + 18;
        accG += gGc[r * 3] * Rc[c * 3] + gGc[r * 3 + 1] * Rc[c * 3 + 1] + gGc[r * 3 + 2] * Rc[c * 3 + 2] +
                gTc[r] * (jc[c] - jq[c]);
        if (e < 3) {
          accT += gTc[e];
          accJ -= Gq[e] * gTc[0] + Gq[3 + e] * gTc[1] + Gq[6 + e] * gTc[2];
        }
      }
      gG[e] += accG;
      if (e < 3) gT[e] += accT, gJ[e] += accJ;
    }
    __syncthreads();  // the joint's gG/gT are complete
    if (mine) {
      int par = sParent[q];
      if (par < 0) {
        gR[e] += gG[e];
        if (e < 3) gJ[e] += gT[e];
      } else {
        const float* Gp = sv + par * kSaved + 9;
        gR[e] += Gp[r] * gG[c] + Gp[3 + r] * gG[3 + c] + Gp[6 + r] * gG[6 + c];
        if (e < 3) gJ[e] += Gp[e] * gT[0] + Gp[3 + e] * gT[1] + Gp[6 + e] * gT[2];
      }
    }
    // No barrier needed here: the next level reads only this level's gG/gT (complete) and writes its own.
  }
  __syncthreads();
  if (tid < d.J) {
    float* g = chainGrads + (size_t(b) * d.J + tid) * 12;
    for (int e = 0; e < 9; ++e) g[e] = wk[tid * 24 + 15 + e];
    for (int c = 0; c < 3; ++c) g[9 + c] = wk[tid * 24 + 12 + c];
  }
  // Translation: Σ dL/dv (the translation chunks, in order) + Σ_j dL/djoint_j; warp w sums coordinate w.
  const int warp = tid / 32, lane = tid % 32;
  if (warp < 3) {
    float acc = 0;
    if (gradJoints)
      for (int j = lane; j < d.J; j += 32) acc += gradJoints[(size_t(b) * d.J + j) * 3 + warp];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) {
      float v = 0;
      for (int ch = 0; ch < d.translChunks; ++ch) v += itemParts[(d.chunks + ch) * 12 + warp];
      gradTransl[b * 3 + warp] = v + acc;
    }
  }
}

// Backward (4): one block per item, after the blend product's backward: the Rodrigues backward per joint (the
// chain's share of dL/dR plus dL/dfeatures) and the shape/expression gradients, each coefficient a fixed-order sum
// over 16 lanes (the loads in flight together, not one after another).
__global__ void __launch_bounds__(kJointsBackwardThreads, 2)
    paramsBackwardKernel(Dims d, Tables t, SkinningInputs in, const float* chainGrads, const float* gradFeatures,
                         SkinningGrads out) {
  __shared__ float gJrest[SKIN_MAX_JOINTS * 3];
  const int b = blockIdx.x, tid = threadIdx.x;
  if (tid < d.J) {
    const float* g = chainGrads + (size_t(b) * d.J + tid) * 12;
    float gR[9];
    for (int e = 0; e < 9; ++e) gR[e] = g[e] + (tid > 0 ? gradFeatures[size_t(b) * d.F() + (tid - 1) * 9 + e] : 0.f);
    for (int c = 0; c < 3; ++c) gJrest[tid * 3 + c] = g[9 + c];
    rodriguesBackward(in.pose + (size_t(b) * d.J + tid) * 3, gR, out.pose + (size_t(b) * d.J + tid) * 3);
  }
  __syncthreads();
  // Coefficient k: dL/dfeature + Σ_j,c gJrest[j][c] · jointDirs[k][j][c], 16 lanes per k, then a shuffle tree.
  const int E = d.K - d.S, lane16 = tid % 16, terms = d.J * 3;
  for (int k0 = 0; k0 < d.K; k0 += kJointsBackwardThreads / 16) {
    int k = k0 + tid / 16;
    float acc = 0;
    for (int i0 = lane16; i0 < terms; i0 += 4 * 16) {  // 4 loads in flight, summed in the same order
      float dir[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        dir[u] = k < d.K && i0 + 16 * u < terms ? __ldg(t.jointDirs + size_t(k) * terms + i0 + 16 * u) : 0.f;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        int i = i0 + 16 * u;
        if (i < terms) acc += gJrest[i] * dir[u];
      }
    }
    for (int o = 8; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o, 16);
    if (k < d.K && lane16 == 0) {
      acc += gradFeatures[size_t(b) * d.F() + d.P + k];
      if (k < d.S)
        out.betas[b * d.S + k] = acc;
      else
        out.expression[b * E + (k - d.S)] = acc;
    }
  }
}

unsigned blocks(size_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace

// A CUDA event without timing (fork/join between the caller's stream and the chain's).
struct SyncEvent {
  cudaEvent_t handle = nullptr;
  SyncEvent() { CUDA_CHECK(cudaEventCreateWithFlags(&handle, cudaEventDisableTiming)); }
  ~SyncEvent() { cudaEventDestroy(handle); }
  SyncEvent(const SyncEvent&) = delete;
  SyncEvent& operator=(const SyncEvent&) = delete;
};

// A fused forward kernel's launch shape: threads, dynamic shared memory, blocks resident on the whole GPU.
struct FusedLaunch {
  unsigned threads = 0;
  size_t shared = 0;
  int capacity = 0;
  template <typename Kernel>
  static FusedLaunch of(Kernel kernel, unsigned threads, size_t shared, int smCount, int sharedLimit) {
    if (shared > size_t(sharedLimit)) return {};  // unusable (capacity 0): forward() takes another kernel
    if (shared > 48 * 1024)
      CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    int perSm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, int(threads), shared));
    return {threads, shared, perSm * smCount};
  }
};

struct Skinning::Impl {
  Stream chainStream;  // the joint chain runs here, beside the blend product (setChainOverlap)
  bool chainOverlap = true;
  SyncEvent chainFork, chainJoin;
  size_t tableBytes = 0;
  Dims dims{};
  uint32_t maxBatch;
  DeviceMemory vTemplate, blend, jointTemplate, jointDirs, weightStart, weightJoint, weightValue, jointVertex,
      jointWeight, parents, chunkRange, jointFirstChunk, groupWeights;
  DeviceMemory features, transforms, saved, vPosed, chunkParts, chainGrads, gradVPosed, gradFeatures, splitParts;
  static constexpr int kSplitRows = 8192;  // split-K partial sums: slices × items ≤ this
  int smCount = 132;
  int blendStride = 0;  // row stride of the blend matrix and v_posed: vertex groups (posedColumn), 128-column tiles
  // The fused forward: its kernels' launch shapes; per item count (1 … kFusedItems), the chain's ready flags and
  // the ticket counter of its launches with the chain beside the product (takeRole).
  static constexpr int kFusedItems = 8;
  FusedLaunch few4, few8;
  DeviceMemory chainReady, tickets;
  SkinningInputs lastInputs{};  // backward reads the pose the forward used
  uint32_t lastBatch = 0;
  // L2 residency (setL2Residency): as much of the blend matrix as the device sets aside for persisting lines is
  // marked persisting on the launches that stream it. For more than kSpreadItems items the window is the matrix's
  // leading part (the large GEMMs' tiles stream it in order). For up to kSpreadItems the persisting lines are spread
  // over the whole matrix (a fraction of every group's lines), so that all of the blocks streaming it
  // (the fused forward's, the 32-row GEMM's column tiles), not half of them, draw on DRAM at once and none idles
  // early; for large batches the leading part serves better. A call's forward and backward use the same window:
  // alternating windows would re-mark the lines on every launch.
  static constexpr int kSpreadItems = 64;
  cudaAccessPolicyWindow residency{}, spreadResidency{};
  bool residencyOn = false;
  bool tensorCapable = false, tensorCores = false;  // setTensorCores: the large blend products on tensor cores
  // A kernel that reads the blend matrix for a call of `items` items, launched with the residency window when it is
  // on (the same window for a call's forward and backward).
  template <typename... Params, typename... Args>
  void launchBlend(int items, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t s,
                   Args... args) {
    cudaLaunchAttribute window{};
    window.id = cudaLaunchAttributeAccessPolicyWindow;
    window.val.accessPolicyWindow = items <= kSpreadItems ? spreadResidency : residency;
    cudaLaunchConfig_t config{grid, block, shared, s, &window, residencyOn ? 1u : 0u};
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
  }
  Tables tables() const {
    return {vTemplate.as<float>(),          blend.as<float>(),          jointTemplate.as<float>(),
            jointDirs.as<float>(),          weightValue.as<float>(),    jointWeight.as<float>(),
            weightStart.as<uint32_t>(),     weightJoint.as<uint32_t>(), jointVertex.as<uint32_t>(),
            parents.as<int32_t>(),          chunkRange.as<uint32_t>(),  jointFirstChunk.as<uint32_t>(),
            groupWeights.as<GroupWeights>()};
  }
  // out (M × blendStride) = A (M × F) · blend + vTemplate, for more items than the fused forward serves (> 8).
  void blendForward(int M, const float* A, float* out, cudaStream_t s) {
    const int N = blendStride, K = dims.F();
    if (M <= 64) {  // (the tensor-core kernel is issue-bound and slower here)
      dim3 grid(blocks(size_t(M), kMidRows), blocks(size_t(N), kMidCols));  // row tiles fastest
      launchBlend(M, gemmMidKernel<false>, grid, kMidThreads, 0, s, M, N, K, A, K, blend.as<float>(), out, N,
                  vTemplate.as<float>(), K);
    } else if (tensorCores) {
      dim3 grid(blocks(size_t(M), kTcRows), blocks(size_t(N), kTcCols));  // row tiles fastest
      launchBlend(M, gemmTensorKernel<false>, grid, kTcThreads, tensorSharedBytes(), s, M, N, K, A, K,
                  blend.as<float>(), out, N, vTemplate.as<float>(), K);
    } else {
      dim3 grid(blocks(size_t(M), kTile), blocks(size_t(N), kTile));  // row tiles fastest
      launchBlend(M, gemmKernel<false>, grid, 256, 0, s, M, N, K, A, K, blend.as<float>(), out, N,
                  vTemplate.as<float>(), K);
    }
    CUDA_CHECK_LAUNCH();
  }
  // The fused forward for ≤ 8 items (forwardFewKernel): one launch, or (chain overlap off) the chain blocks then
  // the product blocks.
  template <typename Kernel>
  void fusedForward(Kernel kernel, const FusedLaunch& launch, Dims d, SkinningInputs in, ForwardOut o, cudaStream_t s) {
    Tables t = tables();
    const int ldb = blendStride, groups = ldb / kGroupColumns;
    const int productBlocks = std::max(1, std::min(groups, launch.capacity - d.B));  // the rest stay resident
    auto run = [&](int chainBlocks, int grid) {
      launchBlend(d.B, kernel, unsigned(grid), launch.threads, launch.shared, s, d, t, in, o, chainBlocks, ldb);
      CUDA_CHECK_LAUNCH();
    };
    if (chainOverlap) {  // the same grid for every launch of d.B items: one ticket counter and set of flags each
      o.chainReady = chainReady.as<unsigned>() + (d.B - 1) * kFusedItems;
      o.tickets = tickets.as<unsigned>() + (d.B - 1);
      run(d.B, d.B + productBlocks);
    } else {  // the stream orders the two launches: no flags, roles from blockIdx
      run(d.B, d.B);
      run(0, productBlocks);
    }
  }
  // out (M × F) = G (M × blendStride, zero padding) · blendᵀ
  void blendBackward(int M, const float* G, float* out, cudaStream_t s) {
    int N = dims.F(), K = blendStride;
    if (M <= 4) {
      launchBlend(M, skinnyGemmTransKernel<4>, blocks(size_t(N), 2), 256, 0, s, M, N, K, G, blendStride,
                  blend.as<float>(), out);
    } else {
      // Few output tiles and a long K (V·3): split K so the whole GPU works (a few blocks per SM), then add the
      // slices in order.
      // Tensor cores from 1,024 items: below that the split-K slices of 64-row tiles are too few to gain.
      const bool mid = M <= 64, tensor = M >= 1024 && tensorCores;
      const int rowsPerTile = mid      ? kMidRows
                              : tensor ? kTcRows
                                       : kTile,
                colsPerTile = mid      ? kMidCols
                              : tensor ? kTcCols
                                       : kTile;
      const int step = mid ? kMidK : tensor ? kTcK : kTileK;
      dim3 grid(blocks(size_t(N), colsPerTile), blocks(size_t(M), rowsPerTile), 1);
      int tiles = int(grid.x * grid.y), Kp = (K + 3) / 4 * 4, perSm = mid ? 4 : 2;
      int slices = std::max(1, std::min({(perSm * smCount + tiles - 1) / tiles, kSplitRows / M, Kp / (4 * step)}));
      int kChunk = ((Kp + slices - 1) / slices + step - 1) / step * step;
      slices = (Kp + kChunk - 1) / kChunk;
      grid.z = unsigned(slices);
      float* target = slices > 1 ? splitParts.as<float>() : out;
      if (mid)
        launchBlend(M, gemmMidKernel<true>, grid, kMidThreads, 0, s, M, N, K, G, blendStride, blend.as<float>(), target,
                    N, nullptr, kChunk);
      else if (tensor)
        launchBlend(M, gemmTensorKernel<true>, grid, kTcThreads, tensorSharedBytes(), s, M, N, K, G, blendStride,
                    blend.as<float>(), target, N, nullptr, kChunk);
      else
        launchBlend(M, gemmKernel<true>, grid, 256, 0, s, M, N, K, G, blendStride, blend.as<float>(), target, N,
                    nullptr, kChunk);
      if (slices > 1) {
        CUDA_CHECK_LAUNCH();
        size_t count = size_t(M) * N;
        sumSlicesKernel<<<blocks(count, 256), 256, 0, s>>>(slices, count, splitParts.as<float>(), out);
      }
    }
    CUDA_CHECK_LAUNCH();
  }
};

Skinning::Skinning(const SkinningTables& h, uint32_t maxBatch, bool l2Residency) : m(std::make_unique<Impl>()) {
  ARM_CHECK(maxBatch >= 1, "cuda::Skinning: maxBatch must be >= 1");
  m->tableBytes = h.deviceBytes();
  m->dims = {0, int(h.vertexCount), int(h.jointCount), int(h.featureCount), int(h.coefCount()), int(h.shapeCount)};
  m->maxBatch = maxBatch;
  // Columns in vertex groups (posedColumn), rows a whole number of 128-column tiles.
  const size_t groups = (h.vertexCount + kGroupVertices - 1) / kGroupVertices;
  m->blendStride = int((groups + 1) / 2 * 2 * kGroupColumns);
  m->dims.TS = int((h.jointCount * 12 + 31) / 32 * 32);
  m->groupWeights = DeviceMemory::from(buildGroupWeights(h, m->blendStride / kGroupColumns));
  m->tableBytes += m->groupWeights.bytes();
  size_t B = maxBatch, J = h.jointCount, F = h.featureCount + h.coefCount(), stride = size_t(m->blendStride);
  size_t chunksPerItem = h.jointVertex.size() / kChunkEntries + J + size_t(h.vertexCount) / kTranslChunkVertices + 1;
  size_t need = h.deviceBytes() + F * stride * 4 +
                B * (F * 2 + J * (12 + kSaved) + m->dims.TS + stride * 2 + chunksPerItem * 12 + 2) * 4 +
                size_t(Impl::kSplitRows) * F * 4;
  size_t freeBytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&freeBytes, &total));
  ARM_CHECK(need < freeBytes, "cuda::Skinning: the model and a batch of %u need %.1f MiB, the device has %.1f MiB free",
            maxBatch, need / 1048576.0, freeBytes / 1048576.0);
  {
    auto toGroups = [&](const float* src, float* dst) {  // one row of V·3 columns into the grouped layout
      for (uint32_t v = 0; v < h.vertexCount; ++v)
        for (int c = 0; c < 3; ++c) dst[posedColumn(int(v)) + c] = src[v * 3 + c];
    };
    std::vector<float> bias(stride, 0.f), padded(F * stride, 0.f);
    toGroups(h.vTemplate.data(), bias.data());
    std::vector<float> row(stride);
    for (size_t r = 0; r < F; ++r) {
      std::fill(row.begin(), row.end(), 0.f);
      toGroups(h.blendMatrix.data() + r * h.vertexCount * 3, row.data());
      for (size_t c = 0; c < stride; ++c) padded[blendIndex(int(r), int(c), int(F))] = row[c];
    }
    m->vTemplate = DeviceMemory::from(bias);
    m->blend = DeviceMemory::from(padded);
  }
  m->jointTemplate = DeviceMemory::from(h.jointTemplate);
  m->jointDirs = DeviceMemory::from(h.jointDirs.empty() ? std::vector<float>{0} : h.jointDirs);
  m->weightStart = DeviceMemory::from(h.weightStart);
  m->weightJoint = DeviceMemory::from(h.weightJoint);
  m->weightValue = DeviceMemory::from(h.weightValue);
  m->jointVertex = DeviceMemory::from(h.jointVertex);
  m->jointWeight = DeviceMemory::from(h.jointWeight);
  m->parents = DeviceMemory::from(h.parents);
  {  // each joint's CSC entries in chunks of ≤ kChunkEntries (the backward's per-joint sums), then the translation's
    std::vector<uint32_t> range, first{0};
    for (uint32_t j = 0; j < h.jointCount; ++j) {
      for (uint32_t e = h.jointStart[j]; e < h.jointStart[j + 1]; e += kChunkEntries)
        range.push_back(e), range.push_back(std::min<uint32_t>(h.jointStart[j + 1], e + kChunkEntries));
      first.push_back(uint32_t(range.size() / 2));
    }
    m->dims.chunks = int(range.size() / 2);
    m->dims.translChunks = int((h.vertexCount + kTranslChunkVertices - 1) / kTranslChunkVertices);
    m->chunkRange = DeviceMemory::from(range.empty() ? std::vector<uint32_t>{0, 0} : range);
    m->jointFirstChunk = DeviceMemory::from(first);
  }
  m->features = DeviceMemory(B * F * 4);
  m->transforms = DeviceMemory(B * size_t(m->dims.TS) * 4);
  m->saved = DeviceMemory(B * J * kSaved * 4);
  m->vPosed = DeviceMemory(B * size_t(m->blendStride) * 4);  // rows padded like the blend matrix's
  m->chainGrads = DeviceMemory(B * J * 12 * 4);
  m->chunkParts = DeviceMemory(B * size_t(m->dims.chunks + m->dims.translChunks) * 12 * 4);
  // dL/dv_posed rows padded like the blend matrix's (16-byte loads in the transposed product); padding zero.
  m->gradVPosed = DeviceMemory(B * size_t(m->blendStride) * 4);
  CUDA_CHECK(cudaMemset(m->gradVPosed.data(), 0, B * size_t(m->blendStride) * 4));
  m->gradFeatures = DeviceMemory(B * F * 4);
  // Split-K partial sums for the backward's blend product: enough slices to fill the GPU at any batch.
  m->splitParts = DeviceMemory(size_t(Impl::kSplitRows) * F * 4);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&m->smCount, cudaDevAttrMultiProcessorCount, device));
  int sharedLimit = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sharedLimit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  m->few4 = FusedLaunch::of(forwardFewKernel<4>, 256, fewSharedBytes<4>(int(F)), m->smCount, sharedLimit);
  m->few8 = FusedLaunch::of(forwardFewKernel<8>, 256, fewSharedBytes<8>(int(F)), m->smCount, sharedLimit);
  int major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  cudaFuncAttributes tensorKernel{};  // compiled for ≥ sm_80 too (a build for older GPUs JIT-run here traps instead)
  CUDA_CHECK(cudaFuncGetAttributes(&tensorKernel, gemmTensorKernel<false>));
  m->tensorCapable =
      major >= 8 && tensorKernel.ptxVersion >= 80 && size_t(sharedLimit) >= tensorSharedBytes();  // mma.sync TF32
  if (m->tensorCapable) {
    CUDA_CHECK(cudaFuncSetAttribute(gemmTensorKernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(tensorSharedBytes())));
    CUDA_CHECK(cudaFuncSetAttribute(gemmTensorKernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(tensorSharedBytes())));
  }
  setTensorCores(true);
  m->chainReady = DeviceMemory(Impl::kFusedItems * Impl::kFusedItems * sizeof(unsigned));
  CUDA_CHECK(cudaMemset(m->chainReady.data(), 0, m->chainReady.bytes()));
  m->tickets = DeviceMemory(Impl::kFusedItems * sizeof(unsigned));
  CUDA_CHECK(cudaMemset(m->tickets.data(), 0, m->tickets.bytes()));
  setL2Residency(l2Residency);
}

Skinning::~Skinning() {
  if (m->residencyOn) cudaCtxResetPersistingL2Cache();  // the lines go back to normal (best effort, no throw)
}
void Skinning::setChainOverlap(bool on) { m->chainOverlap = on; }
bool Skinning::setTensorCores(bool on) { return m->tensorCores = on && m->tensorCapable; }
size_t Skinning::l2ResidentBytes() const { return m->residencyOn ? m->residency.num_bytes : 0; }
bool Skinning::setL2Residency(bool on) {
  if (m->residencyOn && !on) CUDA_CHECK(cudaCtxResetPersistingL2Cache());  // earlier calls' lines back to normal
  m->residencyOn = false;
  if (!on) return false;
  int device = 0, maxPersisting = 0, maxWindow = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&maxPersisting, cudaDevAttrMaxPersistingL2CacheSize, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&maxWindow, cudaDevAttrMaxAccessPolicyWindowSize, device));
  if (maxPersisting <= 0 || maxWindow <= 0) return false;  // no persisting L2 on this device (or under MIG/MPS)
  size_t limit = 0;
  CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  if (limit < size_t(maxPersisting) &&
      cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(maxPersisting)) != cudaSuccess) {
    cudaGetLastError();  // not sticky: residency stays off
    return false;
  }
  // The window holds a little less than the set-aside part, so its lines never evict one another.
  size_t bytes = std::min({m->blend.bytes(), size_t(maxWindow), size_t(maxPersisting) / 16 * 15});
  m->residency.base_ptr = m->blend.data();
  m->residency.num_bytes = bytes;
  m->residency.hitRatio = 1.0f;
  m->residency.hitProp = cudaAccessPropertyPersisting;
  m->residency.missProp = cudaAccessPropertyStreaming;
  // Spread: the whole matrix, each line persisting with probability hitRatio (chosen by address, the same lines
  // on every call). 3/4 of the set-aside part: persisting lines then rarely evict one another where the pick
  // fills a cache set unevenly (nearby fractions perform the same).
  m->spreadResidency = m->residency;
  m->spreadResidency.num_bytes = std::min(m->blend.bytes(), size_t(maxWindow));
  m->spreadResidency.hitRatio = float(std::min(1.0, 0.75 * maxPersisting / double(m->spreadResidency.num_bytes)));
  m->residencyOn = true;
  return true;
}
size_t Skinning::deviceBytes() const { return m->tableBytes; }

void Skinning::forward(uint32_t batch, const SkinningInputs& in, float* vertices, float* joints, cudaStream_t stream) {
  ARM_CHECK(batch >= 1 && batch <= m->maxBatch, "cuda::Skinning::forward: batch %u outside [1, %u]", batch,
            m->maxBatch);
  ARM_CHECK(in.pose && in.transl && vertices && joints && (in.betas || m->dims.S == 0) &&
                (in.expression || m->dims.K == m->dims.S),
            "cuda::Skinning::forward: null input or output pointer");
  Dims d = m->dims;
  d.B = int(batch);
  cudaStream_t s = stream;
  Tables t = m->tables();
  ForwardOut o{
      m->transforms.as<float>(), m->saved.as<float>(), joints, m->vPosed.as<float>(), vertices, nullptr, nullptr};
  // Few items: one fused kernel (chain blocks beside product blocks that skin their own vertex groups).
  auto usable = [&](const FusedLaunch& l) { return l.capacity > d.B; };
  const int fused = batch <= 4 && usable(m->few4) ? 4 : batch <= Impl::kFusedItems && usable(m->few8) ? 8 : 0;
  if (fused) {
    if (fused == 4)
      m->fusedForward(forwardFewKernel<4>, m->few4, d, in, o, s);
    else
      m->fusedForward(forwardFewKernel<8>, m->few8, d, in, o, s);
  } else {
    // More items: the chain does not feed the blend product, so with overlap it runs on a second stream beside it
    // (forked after the caller's earlier work, joined before skinning; GPU-side waits only). The caller's stream
    // gets its kernels enqueued first: the product is the critical path, the chain has slack.
    cudaStream_t chain = m->chainOverlap ? raw(m->chainStream) : s;
    if (m->chainOverlap) CUDA_CHECK(cudaEventRecord(m->chainFork.handle, s));
    featuresKernel<<<blocks(size_t(batch) * (d.J - 1 + d.K), 128), 128, 0, s>>>(d, in, m->features.as<float>());
    CUDA_CHECK_LAUNCH();
    m->blendForward(d.B, m->features.as<float>(), m->vPosed.as<float>(), s);
    if (m->chainOverlap) CUDA_CHECK(cudaStreamWaitEvent(chain, m->chainFork.handle, 0));
    jointsForwardKernel<<<batch, SKIN_MAX_JOINTS, chainSharedBytes(), chain>>>(d, t, in, o);
    CUDA_CHECK_LAUNCH();
    if (m->chainOverlap) {
      CUDA_CHECK(cudaEventRecord(m->chainJoin.handle, chain));
      CUDA_CHECK(cudaStreamWaitEvent(s, m->chainJoin.handle, 0));
    }
    skinForwardKernel<<<blocks(size_t(batch) * d.V, SKIN_VERTEX_GROUP), SKIN_VERTEX_GROUP, 0, s>>>(
        d, t, m->vPosed.as<float>(), m->blendStride, m->transforms.as<float>(), in.transl, vertices);
    CUDA_CHECK_LAUNCH();
  }
  m->lastInputs = in;
  m->lastBatch = batch;
}

void Skinning::backward(uint32_t batch, const float* gradVertices, const float* gradJoints, const SkinningGrads& out,
                        cudaStream_t stream) {
  ARM_CHECK(batch == m->lastBatch, "cuda::Skinning::backward: batch %u differs from the last forward's %u", batch,
            m->lastBatch);
  ARM_CHECK(out.pose && out.transl && (out.betas || m->dims.S == 0) && (out.expression || m->dims.K == m->dims.S),
            "cuda::Skinning::backward: null gradient pointer");
  Dims d = m->dims;
  d.B = int(batch);
  cudaStream_t s = stream;
  Tables t = m->tables();
  size_t n = size_t(batch) * d.V;
  // Two lanes: the per-joint sums and the reverse chain (chain stream) beside the per-vertex gradient and the blend
  // product's backward (caller's stream); the Rodrigues and coefficient gradients need both. GPU-side waits only.
  cudaStream_t chain = m->chainOverlap ? raw(m->chainStream) : s;
  if (!gradVertices) {
    CUDA_CHECK(cudaMemsetAsync(m->chunkParts.data(), 0, size_t(batch) * (d.chunks + d.translChunks) * 12 * 4, s));
    CUDA_CHECK(cudaMemsetAsync(m->gradFeatures.data(), 0, size_t(batch) * d.F() * 4, s));
  }
  if (m->chainOverlap) {
    CUDA_CHECK(cudaEventRecord(m->chainFork.handle, s));
    CUDA_CHECK(cudaStreamWaitEvent(chain, m->chainFork.handle, 0));
  }
  if (gradVertices) {
    skinBackwardJointKernel<<<dim3(d.chunks + d.translChunks, batch), kChunkThreads, 0, chain>>>(
        d, t, m->vPosed.as<float>(), m->blendStride, gradVertices, m->chunkParts.as<float>());
    CUDA_CHECK_LAUNCH();
  }
  chainBackwardKernel<<<batch, kJointsBackwardThreads, 0, chain>>>(
      d, t, m->saved.as<float>(), m->chunkParts.as<float>(), gradJoints, m->chainGrads.as<float>(), out.transl);
  CUDA_CHECK_LAUNCH();
  if (m->chainOverlap) CUDA_CHECK(cudaEventRecord(m->chainJoin.handle, chain));
  if (gradVertices) {
    skinBackwardVertexKernel<<<blocks(n, SKIN_VERTEX_GROUP), SKIN_VERTEX_GROUP, 0, s>>>(
        d, t, m->transforms.as<float>(), gradVertices, m->gradVPosed.as<float>(), m->blendStride);
    CUDA_CHECK_LAUNCH();
    m->blendBackward(d.B, m->gradVPosed.as<float>(), m->gradFeatures.as<float>(), s);
  }
  if (m->chainOverlap) CUDA_CHECK(cudaStreamWaitEvent(s, m->chainJoin.handle, 0));
  paramsBackwardKernel<<<batch, kJointsBackwardThreads, 0, s>>>(d, t, m->lastInputs, m->chainGrads.as<float>(),
                                                                m->gradFeatures.as<float>(), out);
  CUDA_CHECK_LAUNCH();
}

namespace {
class CudaSkinning : public SkinningBackend {
 public:
  CudaSkinning(const SkinningTables& tables, uint32_t maxBatch, const SkinningTuning& tuning)
      : m_impl(tables, maxBatch, tuning.l2Residency) {}
  void forward(const Exec& exec, const SkinningForwardArgs& a) override {
    m_impl.forward(a.batch,
                   {a.pose.cuda<float>(), a.betas.cuda<float>(), a.expression.cuda<float>(), a.transl.cuda<float>()},
                   a.vertices.cuda<float>(), a.joints.cuda<float>(), stream(exec));
  }
  void backward(const Exec& exec, const SkinningBackwardArgs& a) override {
    m_impl.backward(a.batch, a.gradVertices.cuda<float>(), a.gradJoints.cuda<float>(),
                    {a.gradPose.cuda<float>(), a.gradBetas.cuda<float>(), a.gradExpression.cuda<float>(),
                     a.gradTransl.cuda<float>()},
                    stream(exec));
  }
  SkinningTuning setTuning(const SkinningTuning& t) override {
    m_impl.setChainOverlap(t.chainOverlap);
    return {t.chainOverlap, m_impl.setL2Residency(t.l2Residency), m_impl.setTensorCores(t.tensorCores)};
  }
  size_t deviceBytes() const override { return m_impl.deviceBytes(); }
  size_t l2ResidentBytes() const override { return m_impl.l2ResidentBytes(); }

 private:
  Skinning m_impl;
};
}  // namespace

std::unique_ptr<SkinningBackend> makeSkinning(Device&, const SkinningTables& tables, uint32_t maxBatch,
                                              const SkinningTuning& tuning) {
  return std::make_unique<CudaSkinning>(tables, maxBatch, tuning);
}

}  // namespace armature::cuda
