#version 450
// Gaussian field: the chunks' partial sums added in chunk order (shared/gaussian_io.h). GAUSSIAN_FINISH_SUM: an
// invocation per value of (rows, width) into OUT_A. Otherwise an invocation per Gaussian: μ's gradient into OUT_A,
// L's parameters' (from A's, gaussianCholeskyGrad) into OUT_B, w's into OUT_C, each where its flag asks.
#extension GL_GOOGLE_include_directive : require
#include "shared/gaussian_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
layout(std430, binding = GAUSSIAN_FINISH_BINDING_CHOLESKY) readonly buffer Cholesky { float cholesky[]; };
layout(std430, binding = GAUSSIAN_FINISH_BINDING_PARTIALS) readonly buffer Partials { float partials[]; };
layout(std430, binding = GAUSSIAN_FINISH_BINDING_OUT_A) writeonly buffer OutA { float outA[]; };
layout(std430, binding = GAUSSIAN_FINISH_BINDING_OUT_B) writeonly buffer OutB { float outB[]; };
layout(std430, binding = GAUSSIAN_FINISH_BINDING_OUT_C) writeonly buffer OutC { float outC[]; };
layout(push_constant) uniform Push { GaussianPush p; };

float chunkSum(uint index, uint stride) {
  float s = 0.0;
  for (uint k = 0u; k < p.chunks; ++k) s += partials[k * stride + index];
  return s;
}

void main() {
  const uint item = gl_GlobalInvocationID.x;
  const uint stride = p.rows * p.width;
  if ((p.flags & GAUSSIAN_FINISH_SUM) != 0u) {
    if (item < stride) outA[item] = chunkSum(item, stride);
    return;
  }
  const uint i = item;
  if (i >= p.rows) return;
  const uint row = i * p.width, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
  if ((p.flags & GAUSSIAN_GRAD_MEANS) != 0u)
    for (uint k = 0u; k < 3u; ++k) outA[i * 3u + k] = chunkSum(row + k, stride);
  if ((p.flags & GAUSSIAN_GRAD_CHOLESKY) != 0u) {
    float raw[6], a[6], gA[6], g[6];
    for (uint k = 0u; k < 6u; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0;
    for (uint k = 0u; k < 6u; ++k) gA[k] = chunkSum(row + 3u + k, stride);
    gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
    gaussianCholeskyGrad(raw, a, gA, paramCount == 1u ? 1u : 0u, g);
    for (uint k = 0u; k < paramCount; ++k) outB[i * paramCount + k] = g[k];
  }
  if ((p.flags & GAUSSIAN_GRAD_WEIGHTS) != 0u)
    for (uint c = 0u; c < p.channels; ++c) outC[i * p.channels + c] = chunkSum(row + GAUSSIAN_GAUSSIAN_GRADS + c, stride);
}
