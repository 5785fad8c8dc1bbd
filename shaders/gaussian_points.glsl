#version 450
// Gaussian field, a point per invocation (shared/gaussian_io.h): the field at the point (GAUSSIAN_BACKWARD 0) or
// the point's gradient (1), over this chunk's Gaussians in order, staged GAUSSIAN_TILE at a time.
// GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32), so that they stay in registers.
#extension GL_GOOGLE_include_directive : require
#include "shared/gaussian_io.h"

layout(local_size_x = GAUSSIAN_THREADS) in;
layout(std430, binding = GAUSSIAN_BINDING_POINTS) readonly buffer Points { float points[]; };
layout(std430, binding = GAUSSIAN_BINDING_MEANS) readonly buffer Means { float means[]; };
layout(std430, binding = GAUSSIAN_BINDING_CHOLESKY) readonly buffer Cholesky { float cholesky[]; };
layout(std430, binding = GAUSSIAN_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = GAUSSIAN_BINDING_GRAD_FIELD) readonly buffer GradField { float gradField[]; };
layout(std430, binding = GAUSSIAN_BINDING_OUT) writeonly buffer Out { float outValues[]; };
layout(std430, binding = GAUSSIAN_BINDING_MAHALANOBIS) writeonly buffer Mahalanobis { float mahalanobis[]; };
layout(push_constant) uniform Push { GaussianPush p; };

shared float sA[GAUSSIAN_TILE * 6];
shared float sMean[GAUSSIAN_TILE * 3];
shared float sWeight[GAUSSIAN_TILE * GAUSSIAN_CHANNELS_MAX];

void main() {
  const uint lid = gl_LocalInvocationID.x, b = gl_WorkGroupID.x * GAUSSIAN_THREADS + lid;
  const bool inRange = b < p.points;
  const uint C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
  const uint first = gl_WorkGroupID.y * p.chunk, last = min(first + p.chunk, p.gaussians);
  const float x = inRange ? points[b * 3u] : 0.0, y = inRange ? points[b * 3u + 1u] : 0.0,
              zc = inRange ? points[b * 3u + 2u] : 0.0;
#if GAUSSIAN_BACKWARD
  float gradIn[GAUSSIAN_CHANNELS_MAX];
  for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c) gradIn[c] = inRange && c < C ? gradField[b * C + c] : 0.0;
  float gx = 0.0, gy = 0.0, gz = 0.0;
#else
  float acc[GAUSSIAN_CHANNELS_MAX];
  for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c) acc[c] = 0.0;
#endif
  for (uint base = first; base < last; base += GAUSSIAN_TILE) {
    barrier();
    const uint i = base + lid;
    if (i < last) {
      float raw[6], a[6];
      for (uint k = 0u; k < 6u; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0;
      gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
      for (uint k = 0u; k < 6u; ++k) sA[lid * 6u + k] = a[k];
      for (uint k = 0u; k < 3u; ++k) sMean[lid * 3u + k] = means[i * 3u + k];
      for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c)
        sWeight[lid * GAUSSIAN_CHANNELS_MAX + c] = c < C ? weights[i * C + c] : 0.0;
    }
    barrier();
    const uint count = min(uint(GAUSSIAN_TILE), last - base);
    for (uint k = 0u; k < count; ++k) {
      float a[6], z[3];
      for (uint e = 0u; e < 6u; ++e) a[e] = sA[k * 6u + e];
      const float dx = x - sMean[k * 3u], dy = y - sMean[k * 3u + 1u], dz = zc - sMean[k * 3u + 2u];
      const float m = gaussianDistance(a, dx, dy, dz, z);
      const float g = exp2(m * GAUSSIAN_HALF_LOG2E);
#if GAUSSIAN_BACKWARD
      if (g == 0.0) continue;  // no contribution (and z may be infinite)
      float s = 0.0;
      for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c) s += gradIn[c] * sWeight[k * GAUSSIAN_CHANNELS_MAX + c];
      const float q2 = -g * s;  // 2·dLoss/dm
      gx += q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]);
      gy += q2 * (a[2] * z[1] + a[4] * z[2]);
      gz += q2 * (a[5] * z[2]);
#else
      if (inRange && (p.flags & GAUSSIAN_MAHALANOBIS) != 0u) mahalanobis[b * p.gaussians + base + k] = m;
      for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c) acc[c] += sWeight[k * GAUSSIAN_CHANNELS_MAX + c] * g;
#endif
    }
  }
  if (!inRange) return;
  // The chunk's row of the partials; with one chunk, the output itself.
  const uint row = gl_WorkGroupID.y * p.points + b;
#if GAUSSIAN_BACKWARD
  outValues[row * 3u] = gx, outValues[row * 3u + 1u] = gy, outValues[row * 3u + 2u] = gz;
#else
  for (uint c = 0u; c < GAUSSIAN_CHANNELS_MAX; ++c)
    if (c < C) outValues[row * C + c] = acc[c];
#endif
}
