#pragma once
// The skinning forward's kernels: the features (1a), the joint chain (1b), the fused forward for up to 8 items
// (chain, product and skinning in one launch) and the per-vertex skinning (3) for more items; the product (2) for
// more items is gemm.h's.
#include <algorithm>
#include <bit>
#include <vector>

#include "async_copy.h"
#include "shared/joint_propagation_io.h"
#include "device_flags.h"
#include "skinning_layout.h"

namespace armature::cuda {
namespace {  // internal linkage: each .cu that includes this compiles its own copy (no relocatable device code)

// What the forward writes. The fused forward with its chain beside the product publishes each item's transforms by
// setting chainReady[b] to the launch's epoch; the product's blocks wait for that value before skinning. Epochs
// and block roles come from a cycling ticket counter on the device (takeRole), so nothing is reset
// at the end of a launch and nothing per call lives on the host: a captured CUDA graph replays safely.
struct ForwardOut {
  float *transforms, *saved, *joints, *vPosed, *vertices;
  unsigned* chainReady;  // null: no flags (separate kernels or launches, ordered by the stream)
  unsigned* tickets;     // the launch's ticket counter (takeRole); null: roles from blockIdx
};

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
        float rel[3] = {sJ[q * 3] - sJ[par * 3], sJ[q * 3 + 1] - sJ[par * 3 + 1], sJ[q * 3 + 2] - sJ[par * 3 + 2]};
        jointChainStep(sG + par * 9, sT + par * 3, R, rel, G, T);  // joint propagation's product
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
  const Role role = takeRole(o.tickets);
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
    const float4* B4 = reinterpret_cast<const float4*>(t.blend + BlendLayout::index(0, g * kGroupColumns, K)) + tx;
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
}  // namespace
}  // namespace armature::cuda
