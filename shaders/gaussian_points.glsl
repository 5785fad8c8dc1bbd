#version 450
// Gaussian field, one or several points per invocation (shared/gaussian_io.h): the field at the points
// (GAUSSIAN_BACKWARD 0) or their gradient (1), over this chunk's Gaussians in order, staged GAUSSIAN_TILE at a time.
// GAUSSIAN_CHANNELS_MAX: the channel arrays' size (1, 8 or 32), so that they stay in registers;
// GAUSSIAN_ROWS_PER_INVOCATION: 1, GAUSSIAN_MANY_ROWS or GAUSSIAN_MOST_ROWS.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "shared/gaussian_io.h"

#include "gaussian_buffers.glsl"

// A staged Gaussian: A' (a00, a10, a11, a20 | a21, a22) with the offset o's first two in two vec4 (gaussianOffset),
// o's third, its weights; so that a column costs few shared loads. Coordinates are relative to the first
// Gaussian's mean.
shared vec4 sShapeA[GAUSSIAN_TILE], sShapeB[GAUSSIAN_TILE];
shared float sOffsetZ[GAUSSIAN_TILE];
#if MAXC % 4 == 0
shared vec4 sWeight[GAUSSIAN_TILE * MAXC / 4];
#else
shared float sWeight[GAUSSIAN_TILE * MAXC];
#endif

float weightOf(uint i, uint c) { return c < p.channels ? weights[i * p.channels + c] : 0.0; }

void main() {
  const uint lid = gl_LocalInvocationID.x, firstRow = gl_WorkGroupID.x * GAUSSIAN_THREADS * ROWS + lid;
  const uint C = p.channels, paramCount = (p.flags & GAUSSIAN_ISOTROPIC) != 0u ? 1u : 6u;
  const uint first = gl_WorkGroupID.y * p.chunk, last = min(first + p.chunk, p.gaussians);
  // Row r is point firstRow + r·GAUSSIAN_THREADS (consecutive invocations: consecutive points).
  const vec3 origin = p.gaussians > 0u ? vec3(means[0], means[1], means[2]) : vec3(0.0);
  float x[ROWS], y[ROWS], zc[ROWS];
#if GAUSSIAN_BACKWARD
  float gradIn[ROWS * MAXC], gx[ROWS], gy[ROWS], gz[ROWS];
#else
  float acc[ROWS * MAXC];
#endif
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint b = firstRow + r * GAUSSIAN_THREADS;
    const bool inRange = b < p.points;
    x[r] = inRange ? points[b * 3u] - origin.x : 0.0, y[r] = inRange ? points[b * 3u + 1u] - origin.y : 0.0;
    zc[r] = inRange ? points[b * 3u + 2u] - origin.z : 0.0;
#if GAUSSIAN_BACKWARD
    [[unroll]] for (uint c = 0u; c < MAXC; ++c) gradIn[r * MAXC + c] = inRange && c < C ? gradField[b * C + c] : 0.0;
    gx[r] = 0.0, gy[r] = 0.0, gz[r] = 0.0;
#else
    [[unroll]] for (uint c = 0u; c < MAXC; ++c) acc[r * MAXC + c] = 0.0;
#endif
  }
  for (uint base = first; base < last; base += GAUSSIAN_TILE) {
    barrier();
    const uint i = base + lid;
    if (i < last) {
      float raw[6], a[6], o[3];
      for (uint k = 0u; k < 6u; ++k) raw[k] = k < paramCount ? cholesky[i * paramCount + k] : 0.0;
      gaussianInverse(raw, paramCount == 1u ? 1u : 0u, a);
      for (uint k = 0u; k < 6u; ++k) a[k] *= GAUSSIAN_EXP2_SCALE;
      gaussianOffset(a, means[i * 3u] - origin.x, means[i * 3u + 1u] - origin.y, means[i * 3u + 2u] - origin.z, o);
      sShapeA[lid] = vec4(a[0], a[1], a[2], a[3]);
      sShapeB[lid] = vec4(a[4], a[5], o[0], o[1]);
      sOffsetZ[lid] = o[2];
#if MAXC % 4 == 0
      [[unroll]] for (uint c = 0u; c < MAXC; c += 4u)
        sWeight[lid * (MAXC / 4u) + c / 4u] = vec4(weightOf(i, c), weightOf(i, c + 1u), weightOf(i, c + 2u), weightOf(i, c + 3u));
#else
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) sWeight[lid * MAXC + c] = weightOf(i, c);
#endif
    }
    barrier();
    const uint count = min(uint(GAUSSIAN_TILE), last - base);
    for (uint k = 0u; k < count; ++k) {
      const vec4 sa = sShapeA[k], sb = sShapeB[k];
      const float a[6] = float[6](sa.x, sa.y, sa.z, sa.w, sb.x, sb.y);
      const float o0 = sb.z, o1 = sb.w, o2 = sOffsetZ[k];
      float w[MAXC];
#if MAXC % 4 == 0
      [[unroll]] for (uint c = 0u; c < MAXC; c += 4u) {
        const vec4 v = sWeight[k * (MAXC / 4u) + c / 4u];
        w[c] = v.x, w[c + 1u] = v.y, w[c + 2u] = v.z, w[c + 3u] = v.w;
      }
#else
      [[unroll]] for (uint c = 0u; c < MAXC; ++c) w[c] = sWeight[k * MAXC + c];
#endif
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        float z[3];
        const float m = gaussianDistanceFrom(a, o0, o1, o2, x[r], y[r], zc[r], z);  // scaled (gaussian_io.h)
        const float g = gaussianTerm(m);
#if GAUSSIAN_BACKWARD
        if (g == 0.0) continue;  // no contribution (and z may be infinite)
        float s = 0.0;
        [[unroll]] for (uint c = 0u; c < MAXC; ++c) s += gradIn[r * MAXC + c] * w[c];
        const float q2 = -g * s;  // 2·dLoss/dm
        gx[r] += q2 * (a[0] * z[0] + a[1] * z[1] + a[3] * z[2]);
        gy[r] += q2 * (a[2] * z[1] + a[4] * z[2]);
        gz[r] += q2 * (a[5] * z[2]);
#else
        const uint b = firstRow + r * GAUSSIAN_THREADS;
        if (b < p.points && (p.flags & GAUSSIAN_MAHALANOBIS) != 0u) mahalanobis[b * p.gaussians + base + k] = m * GAUSSIAN_UNSCALE;
        [[unroll]] for (uint c = 0u; c < MAXC; ++c) acc[r * MAXC + c] += w[c] * g;
#endif
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint b = firstRow + r * GAUSSIAN_THREADS;
    if (b >= p.points) continue;
    const uint row = gl_WorkGroupID.y * p.points + b;  // the chunk's row of the partials; one chunk: the output's
#if GAUSSIAN_BACKWARD
    // A'ᵀz' is the unscaled Aᵀz times the scale's square.
    outValues[row * 3u] = gx[r] * GAUSSIAN_UNSCALE, outValues[row * 3u + 1u] = gy[r] * GAUSSIAN_UNSCALE;
    outValues[row * 3u + 2u] = gz[r] * GAUSSIAN_UNSCALE;
#else
    [[unroll]] for (uint c = 0u; c < MAXC; ++c)
      if (c < C) outValues[row * C + c] = acc[r * MAXC + c];
#endif
  }
}
