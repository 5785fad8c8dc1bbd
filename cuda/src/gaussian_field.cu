// The Gaussian field on CUDA: the passes of shaders/gaussian_points.glsl, gaussian_gaussians.glsl and
// gaussian_finish.comp (shared/gaussian_io.h), a thread per invocation, the same sums in the same order.
#include "check.h"
#include "ops/gaussian_field_backend.h"

namespace armature::cuda {
namespace {

// The forward unrolls its loop over a tile's columns this many times: the next columns' shared loads overlap the
// current ones' arithmetic, and the loop's own instructions spread over more pairs. (The shaders do not: on NVIDIA's
// Vulkan driver SPIR-V's partial-unroll hint changed nothing and unrolling by hand was slower; docs/gaussian_field.md.)
constexpr int kForwardUnroll = 8;

// ROWS points per thread over its chunk of Gaussians: the field (forward; with DISTANCES also the squared
// distances) or the points' gradient (backward). Row r is point firstRow + r·GAUSSIAN_THREADS. A staged Gaussian is
// two float4 (A' and the offset o's first two: see gaussianOffset), o's third and its weights, so that a column
// costs few shared loads. Coordinates are relative to the first Gaussian's mean.
// (Asking for one block per SM lets ptxas give the unrolled loop the registers it wants: without it, ptxas holds
// the kernel to 64, which made the forward slower.)
template <int MAXC, int ROWS, bool BACKWARD, bool DISTANCES = false>
__global__ void __launch_bounds__(GAUSSIAN_THREADS, 1)
    pointsKernel(const float* __restrict__ points, const float* __restrict__ means, const float* __restrict__ cholesky,
                 const float* __restrict__ weights, const float* __restrict__ gradField, float* __restrict__ out,
                 float* __restrict__ mahalanobis, GaussianPush p) {
  __shared__ float4 sShapeA[GAUSSIAN_TILE], sShapeB[GAUSSIAN_TILE];
  __shared__ float sOffsetZ[GAUSSIAN_TILE];
  __shared__ __align__(16) float sWeight[GAUSSIAN_TILE * MAXC];
  const uint32_t lid = threadIdx.x, firstRow = blockIdx.x * GAUSSIAN_THREADS * ROWS + lid;
  const uint32_t C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) ? 1u : 6u;
  const uint32_t first = blockIdx.y * p.chunk, last = min(first + p.chunk, p.gaussians);
  const float ox = p.gaussians > 0 ? means[0] : 0.0f, oy = p.gaussians > 0 ? means[1] : 0.0f;
  const float oz = p.gaussians > 0 ? means[2] : 0.0f;  // the origin
  float x[ROWS], y[ROWS], zc[ROWS], g3[ROWS][3];
  float acc[ROWS][MAXC];  // forward: the field's channels; backward: the field's gradient
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const uint32_t b = firstRow + r * GAUSSIAN_THREADS;
    const bool inRange = b < p.points;
    x[r] = inRange ? points[b * 3] - ox : 0.0f, y[r] = inRange ? points[b * 3 + 1] - oy : 0.0f;
    zc[r] = inRange ? points[b * 3 + 2] - oz : 0.0f;
    g3[r][0] = g3[r][1] = g3[r][2] = 0.0f;
#pragma unroll
    for (int c = 0; c < MAXC; ++c) acc[r][c] = BACKWARD && inRange && c < C ? gradField[b * C + c] : 0.0f;
  }
  for (uint32_t base = first; base < last; base += GAUSSIAN_TILE) {
    __syncthreads();
    const uint32_t i = base + lid;
    if (i < last) {
      float raw[6], a[6], o[3];
#pragma unroll
      for (int k = 0; k < 6; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0f;
      gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
#pragma unroll
      for (int k = 0; k < 6; ++k) a[k] *= GAUSSIAN_EXP2_SCALE;
      gaussianOffset(a, means[i * 3] - ox, means[i * 3 + 1] - oy, means[i * 3 + 2] - oz, o);
      sShapeA[lid] = make_float4(a[0], a[1], a[2], a[3]);
      sShapeB[lid] = make_float4(a[4], a[5], o[0], o[1]);
      sOffsetZ[lid] = o[2];
#pragma unroll
      for (int c = 0; c < MAXC; ++c) sWeight[lid * MAXC + c] = c < C ? weights[i * C + c] : 0.0f;
    }
    __syncthreads();
    const uint32_t count = min(uint32_t(GAUSSIAN_TILE), last - base);
#pragma unroll(BACKWARD ? 1 : kForwardUnroll)
    for (uint32_t k = 0; k < count; ++k) {
      const float4 sa = sShapeA[k], sb = sShapeB[k];
      const float a[6] = {sa.x, sa.y, sa.z, sa.w, sb.x, sb.y}, o0 = sb.z, o1 = sb.w, o2 = sOffsetZ[k];
      float w[MAXC];
      if constexpr (MAXC % 4 == 0) {
#pragma unroll
        for (int c = 0; c < MAXC; c += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&sWeight[k * MAXC + c]);
          w[c] = v.x, w[c + 1] = v.y, w[c + 2] = v.z, w[c + 3] = v.w;
        }
      } else {
#pragma unroll
        for (int c = 0; c < MAXC; ++c) w[c] = sWeight[k * MAXC + c];
      }
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        float z[3];
        const float m = gaussianDistanceFrom(a, o0, o1, o2, x[r], y[r], zc[r], z);  // scaled (gaussian_io.h)
        const float g = gaussianTerm(m);
        if constexpr (BACKWARD) {
          if (g == 0.0f) continue;  // no contribution (and z may be infinite)
          float s = 0.0f;
#pragma unroll
          for (int c = 0; c < MAXC; ++c) s += acc[r][c] * w[c];
          const float q2 = -g * s;  // 2·dLoss/dm
          g3[r][0] += q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]);
          g3[r][1] += q2 * (a[2] * z[1] + a[4] * z[2]);
          g3[r][2] += q2 * (a[5] * z[2]);
        } else {
          const uint32_t b = firstRow + r * GAUSSIAN_THREADS;
          if (DISTANCES && b < p.points) mahalanobis[size_t(b) * p.gaussians + base + k] = m * GAUSSIAN_UNSCALE;
#pragma unroll
          for (int c = 0; c < MAXC; ++c) acc[r][c] += w[c] * g;
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const uint32_t b = firstRow + r * GAUSSIAN_THREADS;
    if (b >= p.points) continue;
    const size_t row = size_t(blockIdx.y) * p.points + b;  // the chunk's row of the partials, or the output's
    if constexpr (BACKWARD) {
      // A'ᵀz' is the unscaled Aᵀz times the scale's square.
      out[row * 3] = g3[r][0] * GAUSSIAN_UNSCALE, out[row * 3 + 1] = g3[r][1] * GAUSSIAN_UNSCALE;
      out[row * 3 + 2] = g3[r][2] * GAUSSIAN_UNSCALE;
    } else {
#pragma unroll
      for (int c = 0; c < MAXC; ++c)
        if (c < C) out[row * C + c] = acc[r][c];
    }
  }
}

// ROWS Gaussians per thread over its chunk of points: the partial gradients of μ, A and w. Row r is
// Gaussian firstRow + r·GAUSSIAN_THREADS.
template <int MAXC, int ROWS>
__global__ void __launch_bounds__(GAUSSIAN_THREADS)
    gaussiansKernel(const float* __restrict__ points, const float* __restrict__ means,
                    const float* __restrict__ cholesky, const float* __restrict__ weights,
                    const float* __restrict__ gradField, float* __restrict__ partials, GaussianPush p) {
  // A staged point: x, y, z and, with one channel, the field's gradient there (else in sGrad): one shared load.
  __shared__ float4 sPoint[GAUSSIAN_TILE];
  __shared__ float sGrad[MAXC > 1 ? GAUSSIAN_TILE * MAXC : 1];
  const uint32_t lid = threadIdx.x, firstRow = blockIdx.x * GAUSSIAN_THREADS * ROWS + lid;
  const uint32_t C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) ? 1u : 6u;
  const uint32_t first = blockIdx.y * p.chunk, last = min(first + p.chunk, p.points);
  // a: A' (scaled, gaussian_io.h); D and S: the sums gaussianSideGrads turns into μ's and A's gradients.
  float a[ROWS][6], mean[ROWS][3], w[ROWS][MAXC], gw[ROWS][MAXC], D[ROWS][3], S[ROWS][6];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const uint32_t i = firstRow + r * GAUSSIAN_THREADS;
    const bool inRange = i < p.gaussians;
    float raw[6];
#pragma unroll
    for (int k = 0; k < 6; ++k) raw[k] = inRange && k < paramCount ? cholesky[i * paramCount + k] : 0.0f;
    gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a[r]);
#pragma unroll
    for (int k = 0; k < 6; ++k) a[r][k] *= GAUSSIAN_EXP2_SCALE, S[r][k] = 0.0f;
#pragma unroll
    for (int k = 0; k < 3; ++k) mean[r][k] = inRange ? means[i * 3 + k] : 0.0f, D[r][k] = 0.0f;
#pragma unroll
    for (int c = 0; c < MAXC; ++c) w[r][c] = inRange && c < C ? weights[i * C + c] : 0.0f, gw[r][c] = 0.0f;
  }
  for (uint32_t base = first; base < last; base += GAUSSIAN_TILE) {
    __syncthreads();
    const uint32_t b = base + lid;
    if (b < last) {
      sPoint[lid] = make_float4(points[b * 3], points[b * 3 + 1], points[b * 3 + 2], MAXC == 1 ? gradField[b] : 0.0f);
      if constexpr (MAXC > 1) {
#pragma unroll
        for (int c = 0; c < MAXC; ++c) sGrad[lid * MAXC + c] = c < C ? gradField[b * C + c] : 0.0f;
      }
    }
    __syncthreads();
    const uint32_t count = min(uint32_t(GAUSSIAN_TILE), last - base);
    for (uint32_t k = 0; k < count; ++k) {
      const float4 point = sPoint[k];
      const float px = point.x, py = point.y, pz = point.z;
      float gf[MAXC];
#pragma unroll
      for (int c = 0; c < MAXC; ++c) gf[c] = MAXC == 1 ? point.w : sGrad[k * MAXC + c];
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        float z[3];
        const float dx = px - mean[r][0], dy = py - mean[r][1], dz = pz - mean[r][2];
        const float m = gaussianDistance(a[r], dx, dy, dz, z);  // scaled (gaussian_io.h)
        const float g = gaussianTerm(m);
        if (g == 0.0f) continue;  // no contribution
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < MAXC; ++c) {
          s += gf[c] * w[r][c];
          gw[r][c] += gf[c] * g;
        }
        const float q = -g * s;  // 2·dLoss/dm
        const float qx = q * dx, qy = q * dy, qz = q * dz;
        D[r][0] += qx, D[r][1] += qy, D[r][2] += qz;
        S[r][0] += qx * dx;
        S[r][1] += qy * dx;
        S[r][2] += qy * dy;
        S[r][3] += qz * dx;
        S[r][4] += qz * dy;
        S[r][5] += qz * dz;
      }
    }
  }
  const uint32_t width = GAUSSIAN_GAUSSIAN_GRADS + C;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const uint32_t i = firstRow + r * GAUSSIAN_THREADS;
    if (i >= p.gaussians) continue;
    float* row = partials + (size_t(blockIdx.y) * p.gaussians + i) * width;
    float ar[6], gMean[3], gA[6];
#pragma unroll
    for (int k = 0; k < 6; ++k) ar[k] = a[r][k] * (1.0f / GAUSSIAN_EXP2_SCALE);
    gaussianSideGrads(ar, D[r], S[r], gMean, gA);
#pragma unroll
    for (int k = 0; k < 3; ++k) row[k] = gMean[k];
#pragma unroll
    for (int k = 0; k < 6; ++k) row[3 + k] = gA[k];
#pragma unroll
    for (int c = 0; c < MAXC; ++c)
      if (c < C) row[GAUSSIAN_GAUSSIAN_GRADS + c] = gw[r][c];
  }
}

__device__ float chunkSum(const float* partials, uint32_t chunks, size_t index, size_t stride) {
  float s = 0.0f;
  for (uint32_t k = 0; k < chunks; ++k) s += partials[k * stride + index];
  return s;
}

__global__ void finishKernel(const float* __restrict__ cholesky, const float* __restrict__ partials,
                             float* __restrict__ outA, float* __restrict__ outB, float* __restrict__ outC,
                             GaussianPush p) {
  const size_t item = size_t(blockIdx.x) * GAUSSIAN_THREADS + threadIdx.x, stride = size_t(p.rows) * p.width;
  if (p.flags & GAUSSIAN_FINISH_SUM) {
    if (item < stride) outA[item] = chunkSum(partials, p.chunks, item, stride);
    return;
  }
  if (item >= p.rows) return;
  const size_t i = item, row = i * p.width;
  const uint32_t paramCount = (p.flags & GAUSSIAN_ISOTROPIC) ? 1u : 6u;
  if (p.flags & GAUSSIAN_GRAD_MEANS)
    for (int k = 0; k < 3; ++k) outA[i * 3 + k] = chunkSum(partials, p.chunks, row + k, stride);
  if (p.flags & GAUSSIAN_GRAD_CHOLESKY) {
    float raw[6], a[6], gA[6], g[6];
    for (int k = 0; k < 6; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0f;
    for (int k = 0; k < 6; ++k) gA[k] = chunkSum(partials, p.chunks, row + 3 + k, stride);
    gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
    gaussianCholeskyGrad(raw, a, gA, paramCount == 1u ? 1u : 0u, g);
    for (uint32_t k = 0; k < paramCount; ++k) outB[i * paramCount + k] = g[k];
  }
  if (p.flags & GAUSSIAN_GRAD_WEIGHTS)
    for (uint32_t c = 0; c < p.channels; ++c)
      outC[i * p.channels + c] = chunkSum(partials, p.chunks, row + GAUSSIAN_GAUSSIAN_GRADS + c, stride);
}

// The points' passes (the field, the points' gradient) of one variant.
template <int MAXC, int ROWS>
void launchPoints(const GaussianPass& p, cudaStream_t s) {
  const dim3 grid(p.groupsX, p.groupsY);
  const float *points = p.points.cuda<float>(), *means = p.means.cuda<float>(), *chol = p.cholesky.cuda<float>(),
              *weights = p.weights.cuda<float>(), *gradField = p.gradField.cuda<float>();
  if (p.kind == GaussianPass::Kind::Forward && (p.push.flags & GAUSSIAN_MAHALANOBIS))
    pointsKernel<MAXC, ROWS, false, true><<<grid, GAUSSIAN_THREADS, 0, s>>>(
        points, means, chol, weights, gradField, p.out.cuda<float>(), p.mahalanobis.cuda<float>(), p.push);
  else if (p.kind == GaussianPass::Kind::Forward)
    pointsKernel<MAXC, ROWS, false><<<grid, GAUSSIAN_THREADS, 0, s>>>(points, means, chol, weights, gradField,
                                                                      p.out.cuda<float>(), nullptr, p.push);
  else
    pointsKernel<MAXC, ROWS, true><<<grid, GAUSSIAN_THREADS, 0, s>>>(points, means, chol, weights, gradField,
                                                                     p.out.cuda<float>(), nullptr, p.push);
}

// The Gaussians' side of one variant.
template <int MAXC, int ROWS>
void launchGaussians(const GaussianPass& p, cudaStream_t s) {
  gaussiansKernel<MAXC, ROWS><<<dim3(p.groupsX, p.groupsY), GAUSSIAN_THREADS, 0, s>>>(
      p.points.cuda<float>(), p.means.cuda<float>(), p.cholesky.cuda<float>(), p.weights.cuda<float>(),
      p.gradField.cuda<float>(), p.out.cuda<float>(), p.push);
}

}  // namespace

// The variant a pass was planned with (gaussian_field.cpp): 1, 8 or 32 channels; one row per invocation or
// several (the points' passes GAUSSIAN_MOST_ROWS with one channel, else GAUSSIAN_MANY_ROWS).
void gaussianPass(const Exec& exec, const GaussianPass& p) {
  const cudaStream_t s = stream(exec);
  const bool many = p.rowsPerInvocation > 1;
  if (p.kind == GaussianPass::Kind::Finish)
    finishKernel<<<p.groupsX, GAUSSIAN_THREADS, 0, s>>>(p.cholesky.cuda<float>(), p.partials.cuda<float>(),
                                                        p.outA.cuda<float>(), p.outB.cuda<float>(),
                                                        p.outC.cuda<float>(), p.push);
  else if (p.kind == GaussianPass::Kind::GaussianGrads)
    p.maxChannels == 1   ? (many ? launchGaussians<1, GAUSSIAN_MANY_ROWS>(p, s) : launchGaussians<1, 1>(p, s))
    : p.maxChannels == 8 ? (many ? launchGaussians<8, GAUSSIAN_MANY_ROWS>(p, s) : launchGaussians<8, 1>(p, s))
                         : launchGaussians<32, 1>(p, s);
  else
    p.maxChannels == 1   ? (many ? launchPoints<1, GAUSSIAN_MOST_ROWS>(p, s) : launchPoints<1, 1>(p, s))
    : p.maxChannels == 8 ? (many ? launchPoints<8, GAUSSIAN_MANY_ROWS>(p, s) : launchPoints<8, 1>(p, s))
                         : launchPoints<32, 1>(p, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
