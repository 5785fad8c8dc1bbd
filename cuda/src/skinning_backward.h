#pragma once
// The skinning backward's kernels: dL/dv_posed (1), the per-joint partial sums (2), the reverse chain (3) and the
// Rodrigues and coefficient gradients (4); the blend product's backward is gemm.h's, or skinnyGemmTransKernel for
// up to 4 items.
#include "skinning_layout.h"

namespace armature::cuda {
namespace {  // internal linkage: each .cu that includes this compiles its own copy (no relocatable device code)

// (2ᵀ, few items) C (M×N) = A·Bᵀ for M ≤ Rows, A (M×K, row stride lda, zero-padded to a multiple of 4) and B the
// blend matrix (N rows of K, BlendLayout). A block owns two output columns (B rows): 16-byte loads, 4 in flight per
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
}  // namespace
}  // namespace armature::cuda
