#pragma once
// fp32 GEMMs for products with a long, streamed operand B: C = A·op(B) + bias, deterministic (every output sums in a
// fixed order; split-K slices are added in order by sumSlicesKernel). Three shapes:
//   gemmKernel        128×128 tiles, fp32 FMAs: many rows;
//   gemmMidKernel     32×128 tiles, big k steps: up to a few dozen rows, enough of B in flight to stream it at
//                     full bandwidth;
//   gemmTensorKernel  64×128 tiles on the tensor cores at fp32 accuracy (3xTF32): many rows, compute capability ≥ 8.0.
// B's layout is a template parameter: Layout::index(row, col, rows) gives the offset of B[row][col] in a matrix of
// `rows` rows, and every run of 4 columns starting at a multiple of 4 must be contiguous and 16-byte aligned (the
// kernels load B in float4s). With Bᵀ, A's rows must be 16-byte aligned and zero-padded to K rounded up to 4.
#include "async_copy.h"

namespace armature::cuda {
namespace {  // internal linkage: each .cu that includes this compiles its own copy (no relocatable device code)

// C (M×N, row stride ldc) = A (M×K, row stride lda) · op(B) + bias: op(B) = B (K×N) or Bᵀ (B stored N×K), B laid out
// by Layout (above). 128×128 tiles, 8 k per step, 256 threads of 8×8 outputs (two 4×4 quadrants 64
// apart, so shared-memory reads are 16-byte and conflict-free), the next step's tiles loaded into registers while
// this one is computed (double-buffered shared memory). Each output is summed in a fixed order: deterministic.
// TransB needs lda a multiple of 4 and A zero-padded up to K rounded to 4 (16-byte loads of A and B).
// With split-K (gridDim.z > 1) block z sums k in [z·kChunk, (z+1)·kChunk) into C + z·M·ldc; sumSlicesKernel then
// adds the slices in order, so the result stays deterministic.
constexpr int kTile = 128, kTileK = 8;
template <bool TransB, typename Layout>
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
      bReg = (n < N && k < kEnd) ? __ldg(reinterpret_cast<const float4*>(Bm + Layout::index(n, k, N)))
                                 : make_float4(0, 0, 0, 0);
    } else {
      int kb = k0 + tid / 32, n = n0 + (tid % 32) * 4;
      bReg = (kb < kEnd && n < N) ? __ldg(reinterpret_cast<const float4*>(Bm + Layout::index(kb, n, K)))
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
template <bool TransB, typename Layout>
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
        bReg[i] = (n < N && k < kEnd) ? __ldg(reinterpret_cast<const float4*>(Bm + Layout::index(n, k, N)))
                                      : make_float4(0, 0, 0, 0);
      } else {
        int k = k0 + tid / 32 + 4 * i, n = n0 + (tid % 32) * 4;
        bReg[i] = (k < kEnd && n < N) ? __ldg(reinterpret_cast<const float4*>(Bm + Layout::index(k, n, K)))
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
template <bool TransB, typename Layout>
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
        copyAsync16(bs + n * kTcStrideA + k, valid ? Bm + Layout::index(n0 + n, k0 + k, N) : Bm, valid);
      } else {
        int k = i / (kTcCols / 4), n = i % (kTcCols / 4) * 4;
        bool valid = k0 + k < kEnd && n0 + n < N;
        copyAsync16(bs + k * kTcStrideB + n, valid ? Bm + Layout::index(k0 + k, n0 + n, K) : Bm, valid);
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
}  // namespace
}  // namespace armature::cuda
