#pragma once
// What the skinning kernels share: the problem's dimensions, the model's tables on the device, the blend matrix's
// grouped column layout and the per-vertex transform blend. One translation unit (skinning.cu) includes it.
#include <cstdint>

#include "shared/skinning_io.h"
#include "skinning.h"

namespace armature::cuda {
namespace {  // internal linkage: each .cu that includes this compiles its own copy (no relocatable device code)

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
// all rows are one contiguous range, so a block streaming a group reads DRAM sequentially. (gemm.h's Layout.)
struct BlendLayout {
  __host__ __device__ static size_t index(int row, int col, int rows) {
    return (size_t(col / kGroupColumns) * rows + row) * kGroupColumns + col % kGroupColumns;
  }
};

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
}  // namespace
}  // namespace armature::cuda
