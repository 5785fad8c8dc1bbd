#version 450
// Gaussian field backward, a Gaussian per invocation (shared/gaussian_io.h): the gradients of its mean, of A = L⁻¹
// and of its weights over this chunk's points in order, staged GAUSSIAN_TILE at a time, written as the chunk's
// partial row (μ 3, A 6, w C); gaussian_finish adds the chunks and turns A's gradient into L's parameters'.
// GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32).
#extension GL_GOOGLE_include_directive : require
#include "shared/gaussian_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
layout(std430, binding = GAUSSIAN_BINDING_POINTS) readonly buffer Points { float points[]; };
layout(std430, binding = GAUSSIAN_BINDING_MEANS) readonly buffer Means { float means[]; };
layout(std430, binding = GAUSSIAN_BINDING_CHOLESKY) readonly buffer Cholesky { float cholesky[]; };
layout(std430, binding = GAUSSIAN_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = GAUSSIAN_BINDING_GRAD_FIELD) readonly buffer GradField { float gradField[]; };
layout(std430, binding = GAUSSIAN_BINDING_OUT) writeonly buffer Out { float partials[]; };
layout(std430, binding = GAUSSIAN_BINDING_MAHALANOBIS) writeonly buffer Unused { float unused[]; };
layout(push_constant) uniform Push { GaussianPush p; };

shared float sPoint[GAUSSIAN_TILE * 3];
shared float sGrad[GAUSSIAN_TILE * GAUSSIAN_CHANNELS_MAX];

void main() {
  const uint lid = gl_LocalInvocationID.x, i = gl_WorkGroupID.x * GAUSSIAN_THREADS + lid;
  const bool inRange = i < p.gaussians;
  const uint C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
  const uint first = gl_WorkGroupID.y * p.chunk, last = min(first + p.chunk, p.points);
  float raw[6], a[6], w[GAUSSIAN_CHANNELS_MAX], gw[GAUSSIAN_CHANNELS_MAX];
  for (uint k = 0u; k < 6u; ++k) raw[k] = inRange && k < paramCount ? cholesky[i * paramCount + k] : 0.0;
  gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
  const float mx = inRange ? means[i * 3u] : 0.0, my = inRange ? means[i * 3u + 1u] : 0.0,
              mz = inRange ? means[i * 3u + 2u] : 0.0;
  for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c) w[c] = inRange && c < C ? weights[i * C + c] : 0.0, gw[c] = 0.0;
  float gMean[3] = float[3](0.0, 0.0, 0.0), gA[6] = float[6](0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  for (uint base = first; base < last; base += GAUSSIAN_TILE) {
    barrier();
    const uint b = base + lid;
    if (b < last) {
      for (uint k = 0u; k < 3u; ++k) sPoint[lid * 3u + k] = points[b * 3u + k];
      for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c)
        sGrad[lid * GAUSSIAN_CHANNELS_MAX + c] = c < C ? gradField[b * C + c] : 0.0;
    }
    barrier();
    const uint count = min(uint(GAUSSIAN_TILE), last - base);
    for (uint k = 0u; k < count; ++k) {
      float z[3];
      const float dx = sPoint[k * 3u] - mx, dy = sPoint[k * 3u + 1u] - my, dz = sPoint[k * 3u + 2u] - mz;
      const float m = gaussianDistance(a, dx, dy, dz, z);
      const float g = exp2(m * GAUSSIAN_HALF_LOG2E);
      if (g == 0.0) continue;  // no contribution (and z may be infinite)
      float s = 0.0;
      for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c) {
        const float gf = sGrad[k * GAUSSIAN_CHANNELS_MAX + c];
        s += gf * w[c];
        gw[c] += gf * g;
      }
      const float q2 = -g * s;  // 2·dLoss/dm
      gMean[0] -= q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]);
      gMean[1] -= q2 * (a[2] * z[1] + a[4] * z[2]);
      gMean[2] -= q2 * (a[5] * z[2]);
      gA[0] += q2 * z[0] * dx;
      gA[1] += q2 * z[1] * dx;
      gA[2] += q2 * z[1] * dy;
      gA[3] += q2 * z[2] * dx;
      gA[4] += q2 * z[2] * dy;
      gA[5] += q2 * z[2] * dz;
    }
  }
  if (!inRange) return;
  const uint width = GAUSSIAN_GAUSSIAN_GRADS + C, row = (gl_WorkGroupID.y * p.gaussians + i) * width;
  for (uint k = 0u; k < 3u; ++k) partials[row + k] = gMean[k];
  for (uint k = 0u; k < 6u; ++k) partials[row + 3u + k] = gA[k];
  for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c)
    if (c < C) partials[row + GAUSSIAN_GAUSSIAN_GRADS + c] = gw[c];
}
