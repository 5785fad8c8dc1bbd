// Deformable aggregation on CUDA: the passes of shaders/aggregation_*.comp (shared/aggregation_io.h), a thread per
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

__global__ void __launch_bounds__(AGGREGATION_THREADS)
    forwardKernel(Inputs in, float* __restrict__ out, AggregationPush p) {
  const uint32_t t = blockIndex() * AGGREGATION_THREADS + threadIdx.x, C = p.channels;
  if (t >= p.batch * p.anchors * C) return;
  const uint32_t c = t % C, ba = t / C, b = ba / p.anchors, group = c / (C / p.groups);
  float sum = 0.0f;
  for (uint32_t pt = 0; pt < p.points; ++pt)
    for (uint32_t cam = 0; cam < p.cameras; ++cam) {
      const uint32_t s = (ba * p.points + pt) * p.cameras + cam;
      const float x = in.locations[s * 2], y = in.locations[s * 2 + 1];
      for (uint32_t lvl = 0; lvl < p.levels; ++lvl) {
        const int3 map = in.map(p, cam, lvl);
        int corner[2];
        float coef[4], dh[4], dw[4];
        if (!aggregationCorners(x, y, map.x, map.y, corner, coef, dh, dw)) break;  // the same for every level
        float value = 0.0f;
        for (int k = 0; k < 4; ++k) {
          const int64_t row = Inputs::row(corner, k, map, b * p.features);
          if (row >= 0) value += coef[k] * in.features[size_t(row) * C + c];
        }
        sum += in.weights[(s * p.levels + lvl) * p.groups + group] * value;
      }
    }
  out[t] = sum;
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
      sProduct[lvl * C + c] = go * value;
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

__global__ void __launch_bounds__(AGGREGATION_THREADS)
    featureGradsKernel(Inputs in, const uint32_t* __restrict__ words, float* __restrict__ gradFeatures,
                       AggregationPush p) {
  const uint32_t t = blockIndex() * AGGREGATION_THREADS + threadIdx.x, C = p.channels;
  if (t >= p.batch * p.features * C) return;
  const uint32_t c = t % C, bucket = t / C, group = c / (C / p.groups);
  float sum = 0.0f;
  const uint32_t last = words[p.starts + bucket + 1];
  for (uint32_t e = words[p.starts + bucket]; e < last; ++e) {
    const uint32_t entry = words[p.entries + e], k = entry % 4, sampleLevel = entry / 4;
    const uint32_t lvl = sampleLevel % p.levels, s = sampleLevel / p.levels, cam = s % p.cameras;
    const uint32_t ba = s / (p.points * p.cameras);
    const int3 map = in.map(p, cam, lvl);
    int corner[2];
    float coef[4], dh[4], dw[4];
    aggregationCorners(in.locations[s * 2], in.locations[s * 2 + 1], map.x, map.y, corner, coef, dh, dw);
    sum += in.gradOut[ba * C + c] * in.weights[sampleLevel * p.groups + group] * coef[k];
  }
  gradFeatures[t] = sum;
}

}  // namespace

void aggregationPass(const Exec& exec, const AggregationPass& p) {
  using Kind = AggregationPass::Kind;
  const cudaStream_t s = stream(exec);
  const Inputs in{p.table.cuda<int32_t>(), p.features.cuda<float>(), p.locations.cuda<float>(), p.weights.cuda<float>(),
                  p.gradOut.cuda<float>()};
  const dim3 grid(p.groupsX, p.groupsY);
  if (p.kind == Kind::Forward)
    forwardKernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, p.outA.cuda<float>(), p.push);
  else if (p.kind == Kind::SampleGrads)
    sampleGradsKernel<<<grid, AGGREGATION_SAMPLE_THREADS, 0, s>>>(in, p.outA.cuda<float>(), p.outB.cuda<float>(),
                                                                  p.push);
  else if (p.kind == Kind::Pairs)
    pairsKernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, p.words.cuda<uint32_t>(), p.push);
  else
    featureGradsKernel<<<grid, AGGREGATION_THREADS, 0, s>>>(in, p.words.cuda<uint32_t>(), p.outA.cuda<float>(), p.push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
