// Deformable aggregation on CUDA: the passes of shaders/aggregation_*.comp (shared/deformable_aggregation_io.h), a thread per
// invocation, the same sums in the same order.
#include "check.h"
#include "ops/deformable_aggregation_backend.h"

namespace armature::cuda {
namespace {

struct Inputs {
  const int32_t* table;
  const float *features, *locations, *weights, *gradOut;
  __device__ int3 map(const AggregationPush& p, uint32_t camera, uint32_t level) const {
    const uint32_t m = (camera * p.levels + level) * 3;
    return make_int3(table[m], table[m + 1], table[m + 2]);
  }
  // The feature row of corner k, or -1 off the map.
  __device__ static int64_t row(const int corner[2], int k, int3 map, uint32_t batchRow) {
    const int r = corner[0] + k / 2, col = corner[1] + k % 2;
    if (r < 0 || r >= map.x || col < 0 || col >= map.y) return -1;
    return int64_t(batchRow) + map.z + r * map.y + col;
  }
};

__device__ uint32_t blockIndex() { return blockIdx.y * gridDim.x + blockIdx.x; }

// A thread per anchor and kLanes channels (a slot; the entry point's lanes: 4 reads one float4 per corner, so an
// anchor's locations, weights and corners are read and worked out once per 4 channels). kSplits > 1: a block takes
// AGGREGATION_THREADS / kSplits slots, each over kSplits threads; split k sums samples k, k + kSplits, … and the
// partial sums are added in split order (shaders/deformable_aggregation_forward.comp).
template <int kLanes, int kSplits>
__global__ void __launch_bounds__(AGGREGATION_THREADS)
    forwardKernel(Inputs in, float* __restrict__ out, AggregationPush p) {
  constexpr uint32_t kSlotsPerBlock = AGGREGATION_THREADS / kSplits;
  const uint32_t C = p.channels, slots = C / kLanes, split = threadIdx.x / kSlotsPerBlock;
  const uint32_t t = blockIndex() * kSlotsPerBlock + threadIdx.x % kSlotsPerBlock;
  const bool valid = t < p.batch * p.anchors * slots;
  if (kSplits == 1 && !valid) return;
  const uint32_t c = t % slots * kLanes, ba = t / slots, b = ba / p.anchors, group = c / (C / p.groups);
  float sum[kLanes] = {};
  for (uint32_t ps = split; valid && ps < p.points * p.cameras; ps += kSplits) {
    const uint32_t s = ba * p.points * p.cameras + ps, cam = ps % p.cameras;
    const float x = in.locations[s * 2], y = in.locations[s * 2 + 1];
    for (uint32_t lvl = 0; lvl < p.levels; ++lvl) {
      const int3 map = in.map(p, cam, lvl);
      int corner[2];
      float coef[4], dh[4], dw[4];
      if (!aggregationCorners(x, y, map.x, map.y, corner, coef, dh, dw)) break;  // the same for every level
      float value[kLanes] = {};
      for (int k = 0; k < 4; ++k) {
        const int64_t row = Inputs::row(corner, k, map, b * p.features);
        if (row < 0) continue;
        const float* f = &in.features[size_t(row) * C + c];
        if constexpr (kLanes == 4) {
          const float4 v = *reinterpret_cast<const float4*>(f);
          value[0] += coef[k] * v.x, value[1] += coef[k] * v.y, value[2] += coef[k] * v.z, value[3] += coef[k] * v.w;
        } else {
          value[0] += coef[k] * f[0];
        }
      }
      const float w = in.weights[(s * p.levels + lvl) * p.groups + group];
#pragma unroll
      for (int l = 0; l < kLanes; ++l) sum[l] += w * value[l];
    }
  }
  if constexpr (kSplits > 1) {
    __shared__ float sPartial[kLanes][AGGREGATION_THREADS];
#pragma unroll
    for (int l = 0; l < kLanes; ++l) sPartial[l][threadIdx.x] = sum[l];
    __syncthreads();
    if (!valid || split != 0) return;
    for (uint32_t k = 1; k < kSplits; ++k)
#pragma unroll
      for (int l = 0; l < kLanes; ++l) sum[l] += sPartial[l][k * kSlotsPerBlock + threadIdx.x];
  }
#pragma unroll
  for (int l = 0; l < kLanes; ++l) out[size_t(ba) * C + c + l] = sum[l];
}

__global__ void __launch_bounds__(AGGREGATION_SAMPLE_THREADS)
    sampleGradsKernel(Inputs in, float* __restrict__ gradLocations, float* __restrict__ gradWeights,
                      AggregationPush p) {
  __shared__ float sProduct[AGGREGATION_MAX_LEVEL_CHANNELS];
  __shared__ float sDx[AGGREGATION_SAMPLE_THREADS], sDy[AGGREGATION_SAMPLE_THREADS];
  const uint32_t s = blockIndex(), lid = threadIdx.x, C = p.channels, perGroup = C / p.groups;
  if (s >= p.batch * p.anchors * p.points * p.cameras) return;  // whole blocks
  const uint32_t cam = s % p.cameras, ba = s / (p.points * p.cameras), b = ba / p.anchors;
  const float x = in.locations[s * 2], y = in.locations[s * 2 + 1];
  float dx = 0.0f, dy = 0.0f;
  for (uint32_t c = lid; c < C; c += AGGREGATION_SAMPLE_THREADS) {
    const float go = in.gradOut[ba * C + c];
    for (uint32_t lvl = 0; lvl < p.levels; ++lvl) {
      const int3 map = in.map(p, cam, lvl);
      int corner[2];
      float coef[4], dh[4], dw[4], value = 0.0f, vh = 0.0f, vw = 0.0f;
      if (aggregationCorners(x, y, map.x, map.y, corner, coef, dh, dw))
        for (int k = 0; k < 4; ++k) {
          const int64_t row = Inputs::row(corner, k, map, b * p.features);
          if (row < 0) continue;
          const float f = in.features[size_t(row) * C + c];
          value += coef[k] * f, vh += dh[k] * f, vw += dw[k] * f;
        }
      if (p.mode & AGGREGATION_GRAD_WEIGHTS) sProduct[lvl * C + c] = go * value;  // within its size then
      const float gw = go * in.weights[(s * p.levels + lvl) * p.groups + c / perGroup];
      dx += gw * vw * float(map.y), dy += gw * vh * float(map.x);
    }
  }
  sDx[lid] = dx, sDy[lid] = dy;
  __syncthreads();
  if (p.mode & AGGREGATION_GRAD_WEIGHTS)
    for (uint32_t t = lid; t < p.levels * p.groups; t += AGGREGATION_SAMPLE_THREADS) {
      const uint32_t lvl = t / p.groups, group = t % p.groups;
      float sum = 0.0f;
      for (uint32_t j = 0; j < perGroup; ++j) sum += sProduct[lvl * C + group * perGroup + j];
      gradWeights[size_t(s) * p.levels * p.groups + t] = sum;
    }
  if ((p.mode & AGGREGATION_GRAD_LOCATIONS) && lid == 0) {
    float sx = 0.0f, sy = 0.0f;
    for (int k = 0; k < AGGREGATION_SAMPLE_THREADS; ++k) sx += sDx[k], sy += sDy[k];
    gradLocations[s * 2] = sx, gradLocations[s * 2 + 1] = sy;
  }
}

// The same sample gradients with a warp per sample (the entry point's subgroupPerSample: channels in rounds of 128, a
// float4 per lane, a group a power of two of a round's lanes): each lane sums its 4 channels, and the group's weight
// gradient and the location's are sums over lanes by shuffles in a fixed tree, with no shared memory or barrier.
__global__ void __launch_bounds__(AGGREGATION_THREADS)
    sampleGradsWarpKernel(Inputs in, float* __restrict__ gradLocations, float* __restrict__ gradWeights,
                          AggregationPush p) {
  const uint32_t lane = threadIdx.x % 32, s = blockIndex() * (AGGREGATION_THREADS / 32) + threadIdx.x / 32;
  if (s >= p.batch * p.anchors * p.points * p.cameras) return;  // whole warps
  const uint32_t C = p.channels, perGroup = C / p.groups, groupLanes = perGroup / 4;
  const uint32_t cam = s % p.cameras, ba = s / (p.points * p.cameras), b = ba / p.anchors;
  const float x = in.locations[s * 2], y = in.locations[s * 2 + 1];
  float dx = 0.0f, dy = 0.0f;
  for (uint32_t round = 0; round < C / 128; ++round) {
    const uint32_t c = round * 128 + lane * 4, group = c / perGroup;
    const float4 go = *reinterpret_cast<const float4*>(&in.gradOut[size_t(ba) * C + c]);
    for (uint32_t lvl = 0; lvl < p.levels; ++lvl) {
      const int3 map = in.map(p, cam, lvl);
      int corner[2];
      float coef[4], dh[4], dw[4];
      float4 value = make_float4(0, 0, 0, 0), vh = value, vw = value;
      if (aggregationCorners(x, y, map.x, map.y, corner, coef, dh, dw))
        for (int k = 0; k < 4; ++k) {
          const int64_t row = Inputs::row(corner, k, map, b * p.features);
          if (row < 0) continue;
          const float4 f = *reinterpret_cast<const float4*>(&in.features[size_t(row) * C + c]);
          value.x += coef[k] * f.x, value.y += coef[k] * f.y, value.z += coef[k] * f.z, value.w += coef[k] * f.w;
          vh.x += dh[k] * f.x, vh.y += dh[k] * f.y, vh.z += dh[k] * f.z, vh.w += dh[k] * f.w;
          vw.x += dw[k] * f.x, vw.y += dw[k] * f.y, vw.z += dw[k] * f.z, vw.w += dw[k] * f.w;
        }
      if (p.mode & AGGREGATION_GRAD_WEIGHTS) {
        float product = go.x * value.x + go.y * value.y + go.z * value.z + go.w * value.w;
        for (uint32_t offset = 1; offset < groupLanes; offset <<= 1) product += __shfl_xor_sync(~0u, product, offset);
        if (lane % groupLanes == 0) gradWeights[(size_t(s) * p.levels + lvl) * p.groups + group] = product;
      }
      const float w = in.weights[(s * p.levels + lvl) * p.groups + group];
      dx += w * (go.x * vw.x + go.y * vw.y + go.z * vw.z + go.w * vw.w) * float(map.y);
      dy += w * (go.x * vh.x + go.y * vh.y + go.z * vh.z + go.w * vh.w) * float(map.x);
    }
  }
  if (!(p.mode & AGGREGATION_GRAD_LOCATIONS)) return;
  for (uint32_t offset = 16; offset > 0; offset >>= 1)
    dx += __shfl_xor_sync(~0u, dx, offset), dy += __shfl_xor_sync(~0u, dy, offset);
  if (lane == 0) gradLocations[s * 2] = dx, gradLocations[s * 2 + 1] = dy;
}

__global__ void __launch_bounds__(AGGREGATION_THREADS)
    pairsKernel(Inputs in, uint32_t* __restrict__ words, AggregationPush p) {
  const uint32_t t = blockIndex() * AGGREGATION_THREADS + threadIdx.x;
  if (t >= p.batch * p.anchors * p.points * p.cameras * p.levels) return;
  const uint32_t lvl = t % p.levels, s = t / p.levels, cam = s % p.cameras;
  const uint32_t b = s / (p.anchors * p.points * p.cameras);
  const int3 map = in.map(p, cam, lvl);
  int corner[2];
  float coef[4], dh[4], dw[4];
  if (!aggregationCorners(in.locations[s * 2], in.locations[s * 2 + 1], map.x, map.y, corner, coef, dh, dw)) return;
  for (int k = 0; k < 4; ++k) {
    const int64_t bucket = Inputs::row(corner, k, map, b * p.features);
    if (bucket < 0) continue;
    const uint32_t slot = atomicAdd(&words[p.counts + uint32_t(bucket)], 1u);
    if (p.mode == AGGREGATION_PAIRS_FILL) words[p.entries + slot] = t * 4 + uint32_t(k);
  }
}

// Each sorted entry's tap (shaders/deformable_aggregation_taps.comp).
__global__ void __launch_bounds__(AGGREGATION_THREADS)
    tapsKernel(Inputs in, uint32_t* __restrict__ words, AggregationPush p) {
  const uint32_t e = blockIndex() * AGGREGATION_THREADS + threadIdx.x;
  if (e >= words[p.starts + p.batch * p.features]) return;  // the buckets' total
  const uint32_t entry = words[p.entries + e], k = entry % 4, sampleLevel = entry / 4;
  const uint32_t lvl = sampleLevel % p.levels, s = sampleLevel / p.levels, cam = s % p.cameras;
  const int3 map = in.map(p, cam, lvl);
  int corner[2];
  float coef[4], dh[4], dw[4];
  aggregationCorners(in.locations[s * 2], in.locations[s * 2 + 1], map.x, map.y, corner, coef, dh, dw);
  uint32_t* tap = &words[p.taps + size_t(e) * AGGREGATION_TAP_WORDS];
  tap[0] = s / (p.points * p.cameras), tap[1] = sampleLevel, tap[2] = __float_as_uint(coef[k]);
}

// A thread per feature row and kLanes channels (as the forward's), each channel's sum over the row's taps in their
// sorted order either way.
template <int kLanes>
__global__ void __launch_bounds__(AGGREGATION_THREADS)
    featureGradsKernel(Inputs in, const uint32_t* __restrict__ words, float* __restrict__ gradFeatures,
                       AggregationPush p) {
  const uint32_t t = blockIndex() * AGGREGATION_THREADS + threadIdx.x, C = p.channels, slots = C / kLanes;
  if (t >= p.batch * p.features * slots) return;
  const uint32_t c = t % slots * kLanes, bucket = t / slots, group = c / (C / p.groups);
  float sum[kLanes] = {};
  const uint32_t last = words[p.starts + bucket + 1];
  for (uint32_t e = words[p.starts + bucket]; e < last; ++e) {
    const uint32_t* tap = &words[p.taps + size_t(e) * AGGREGATION_TAP_WORDS];
    const float scale = in.weights[tap[1] * p.groups + group] * __uint_as_float(tap[2]);
    const float* go = &in.gradOut[size_t(tap[0]) * C + c];
    if constexpr (kLanes == 4) {
      const float4 g = *reinterpret_cast<const float4*>(go);
      sum[0] += g.x * scale, sum[1] += g.y * scale, sum[2] += g.z * scale, sum[3] += g.w * scale;
    } else {
      sum[0] += go[0] * scale;
    }
  }
#pragma unroll
  for (int l = 0; l < kLanes; ++l) gradFeatures[size_t(bucket) * C + c + l] = sum[l];
}

}  // namespace

void aggregationPass(const Exec& exec, const AggregationPass& p) {
  using Kind = AggregationPass::Kind;
  const cudaStream_t s = stream(exec);
  const Inputs in{p.table.cuda<int32_t>(), p.features.cuda<float>(), p.locations.cuda<float>(), p.weights.cuda<float>(),
                  p.gradOut.cuda<float>()};
  const dim3 grid(p.groupsX, p.groupsY);
  const bool four = p.lanes == 4;
  float *outA = p.outA.cuda<float>(), *outB = p.outB.cuda<float>();
  uint32_t* words = p.words.cuda<uint32_t>();
  switch (p.kind) {
    case Kind::Forward: {
      constexpr int kSplit = AGGREGATION_FORWARD_SPLITS;
      const auto kernel = p.splits > 1 ? (four ? forwardKernel<4, kSplit> : forwardKernel<1, kSplit>)
                                       : (four ? forwardKernel<4, 1> : forwardKernel<1, 1>);
      kernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, outA, p.push);
      break;
    }
    case Kind::SampleGrads:
      if (p.subgroup == 32)
        sampleGradsWarpKernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, outA, outB, p.push);
      else
        sampleGradsKernel<<<grid, AGGREGATION_SAMPLE_THREADS, 0, s>>>(in, outA, outB, p.push);
      break;
    case Kind::Pairs: pairsKernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, words, p.push); break;
    case Kind::Taps: tapsKernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, words, p.push); break;
    case Kind::FeatureGrads:
      (four ? featureGradsKernel<4> : featureGradsKernel<1>)<<<grid, AGGREGATION_THREADS, 0, s>>>(in, words, outA,
                                                                                                  p.push);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
