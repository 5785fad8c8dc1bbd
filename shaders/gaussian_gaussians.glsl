#version 450
// Gaussian field backward, one or GAUSSIAN_MANY_ROWS Gaussians per invocation (shared/gaussian_io.h): the gradients
// of each one's mean, of A = L⁻¹ and of its weights over this chunk's points in order, staged GAUSSIAN_TILE at a time,
// written as the chunk's partial row (μ 3, A 6, w C); gaussian_finish adds the chunks and turns A's gradient into
// L's parameters'. GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32); GAUSSIAN_ROWS_PER_INVOCATION:
// 1 or GAUSSIAN_MANY_ROWS.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_io.h"

#include "gaussian_buffers.glsl"

// A staged point: x, y, z and, with one channel, the field's gradient there (else in sGrad): one shared load.
shared vec4 sPoint[GAUSSIAN_TILE];
#if MAXC > 1
shared float sGrad[GAUSSIAN_TILE * MAXC];
#endif

void main() {
  const uint lid = gl_LocalInvocationID.x, firstRow = gl_WorkGroupID.x * GAUSSIAN_THREADS * ROWS + lid;
  const uint C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
  const uint first = gl_WorkGroupID.y * p.chunk, last = min(first + p.chunk, p.points);
  // Row r is Gaussian firstRow + r·GAUSSIAN_THREADS.
  // a: A' (scaled, gaussian_io.h); D and S: the sums gaussianSideGrads turns into μ's and A's gradients.
  float a[ROWS * 6], mean[ROWS * 3], w[ROWS * MAXC], gw[ROWS * MAXC], D[ROWS * 3], S[ROWS * 6];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint i = firstRow + r * GAUSSIAN_THREADS;
    const bool inRange = i < p.gaussians;
    float raw[6], ar[6];
    for (uint k = 0u; k < 6u; ++k) raw[k] = inRange && k < paramCount ? cholesky[i * paramCount + k] : 0.0;
    gaussianInverse(raw, paramCount == 1u ? 1u : 0u, ar);
    for (uint k = 0u; k < 6u; ++k) a[r * 6u + k] = ar[k] * GAUSSIAN_EXP2_SCALE, S[r * 6u + k] = 0.0;
    for (uint k = 0u; k < 3u; ++k) mean[r * 3u + k] = inRange ? means[i * 3u + k] : 0.0, D[r * 3u + k] = 0.0;
    [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[r * MAXC + c] = inRange && c < C ? weights[i * C + c] : 0.0, gw[r * MAXC + c] = 0.0;
  }
  for (uint base = first; base < last; base += GAUSSIAN_TILE) {
    barrier();
    const uint b = base + lid;
    if (b < last) {
#if MAXC == 1
      sPoint[lid] = vec4(points[b * 3u], points[b * 3u + 1u], points[b * 3u + 2u], gradField[b]);
#else
      sPoint[lid] = vec4(points[b * 3u], points[b * 3u + 1u], points[b * 3u + 2u], 0.0);
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) sGrad[lid * MAXC + c] = c < C ? gradField[b * C + c] : 0.0;
#endif
    }
    barrier();
    const uint count = min(uint(GAUSSIAN_TILE), last - base);
    for (uint k = 0u; k < count; ++k) {
      const vec4 point = sPoint[k];
      const float px = point.x, py = point.y, pz = point.z;
      float gf[MAXC];
#if MAXC == 1
      gf[0] = point.w;
#else
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) gf[c] = sGrad[k * MAXC + c];
#endif
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        float ar[6], z[3];
        [[unroll]] for (uint e = 0u; e < 6u; ++e) ar[e] = a[r * 6u + e];
        const float dx = px - mean[r * 3u], dy = py - mean[r * 3u + 1u], dz = pz - mean[r * 3u + 2u];
        const float m = gaussianDistance(ar, dx, dy, dz, z);  // scaled (gaussian_io.h)
        const float g = gaussianTerm(m);
        if (g == 0.0) continue;  // no contribution
        float s = 0.0;
        [[unroll]] for (uint c = 0u; c < MAXC; ++c) {
          s += gf[c] * w[r * MAXC + c];
          gw[r * MAXC + c] += gf[c] * g;
        }
        const float q = -g * s;  // 2·dLoss/dm
        const float qx = q * dx, qy = q * dy, qz = q * dz;
        D[r * 3u] += qx, D[r * 3u + 1u] += qy, D[r * 3u + 2u] += qz;
        S[r * 6u] += qx * dx;
        S[r * 6u + 1u] += qy * dx;
        S[r * 6u + 2u] += qy * dy;
        S[r * 6u + 3u] += qz * dx;
        S[r * 6u + 4u] += qz * dy;
        S[r * 6u + 5u] += qz * dz;
      }
    }
  }
  const uint width = GAUSSIAN_GAUSSIAN_GRADS + C;
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint i = firstRow + r * GAUSSIAN_THREADS;
    if (i >= p.gaussians) continue;
    const uint row = (gl_WorkGroupID.y * p.gaussians + i) * width;
    float ar[6], Dr[3], Sr[6], gMean[3], gA[6];
    [[unroll]] for (uint k = 0u; k < 6u; ++k) ar[k] = a[r * 6u + k] * (1.0 / GAUSSIAN_EXP2_SCALE), Sr[k] = S[r * 6u + k];
    [[unroll]] for (uint k = 0u; k < 3u; ++k) Dr[k] = D[r * 3u + k];
    gaussianSideGrads(ar, Dr, Sr, gMean, gA);
    for (uint k = 0u; k < 3u; ++k) outValues[row + k] = gMean[k];
    for (uint k = 0u; k < 6u; ++k) outValues[row + 3u + k] = gA[k];
    [[unroll]] for (uint c = 0u; c < MAXC; ++c)
      if (c < C) outValues[row + GAUSSIAN_GAUSSIAN_GRADS + c] = gw[r * MAXC + c];
  }
}
