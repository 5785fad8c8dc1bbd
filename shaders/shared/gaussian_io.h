// Anisotropic Gaussian fields on the GPU (GLSL and CUDA): f(x) = Σ_i w_i · exp(−½‖A_i(x − μ_i)‖²) with A_i = L_i⁻¹.
//
// Dense evaluation is an all-pairs sum, done like an N-body kernel from both sides:
//   - gaussian_points: an invocation per point (or several) walks the Gaussians, GAUSSIAN_TILE at a time staged in
//     shared memory (each Gaussian's A and μ computed once per stage): the field (forward) or the points' gradient
//     (backward);
//   - gaussian_gaussians (backward): an invocation per Gaussian (or several) walks the points the same way: the
//     gradients of μ, A and w;
//   - gaussian_finish: sums the partials, then turns A's gradient into the parameters'.
// When one side is too short to fill the GPU, the other side is cut into `chunks` chunks of `chunk` columns (a
// second grid dimension); each chunk writes a partial sum, which gaussian_finish adds in chunk order. The chunking
// depends on the sizes only, and every sum has a fixed order: the same bits on every run, no atomics.
//
// Parameters of L (lower triangular, rows (l00), (l10 l11), (l20 l21 l22)): anisotropic (log l00, l10, log l11,
// l20, l21, log l22); isotropic (log σ), L = σ·I. The log-diagonal is clamped to ±GAUSSIAN_LOG_SCALE_LIMIT so
// that A stays finite in float (its gradient is zero beyond, as a clamp's is).
#ifndef ARMATURE_GAUSSIAN_IO_H
#define ARMATURE_GAUSSIAN_IO_H
#include "common_io.h"

#define GAUSSIAN_THREADS 128  // a workgroup: one row (a point or a Gaussian) per invocation
#define GAUSSIAN_TILE 128     // columns staged per round: one per invocation
// Rows per invocation, a shader variant: with many rows (GAUSSIAN_MANY_ROWS_FROM) and few channels (registers
// allow), each column read from shared memory serves GAUSSIAN_MANY_ROWS rows, or GAUSSIAN_MOST_ROWS points with one
// channel (the points' passes hold the least per row); otherwise one.
#define GAUSSIAN_MANY_ROWS_FROM 32768u
#define GAUSSIAN_MANY_ROWS 4
#define GAUSSIAN_MOST_ROWS 8
#define GAUSSIAN_MAX_CHANNELS 32
#define GAUSSIAN_LOG_SCALE_LIMIT 30.0f
// Invocations × chunks a dispatch aims for: several waves of workgroups on a large GPU, so that the last, partly
// filled wave costs little (an H200 holds ~120,000 of these invocations at once). At most GAUSSIAN_MAX_CHUNKS
// chunks, which bounds the partials.
#define GAUSSIAN_TARGET_INVOCATIONS (1u << 20)
// The points' side (the field, the points' gradient) aims for twice as many: eight points an invocation make its
// workgroups the longest, so finer chunks shorten its partly filled last wave.
#define GAUSSIAN_TARGET_POINT_INVOCATIONS (1u << 21)
#define GAUSSIAN_MAX_CHUNKS 128u
#define GAUSSIAN_GAUSSIAN_GRADS 9  // per Gaussian before the channels: μ's gradient (3), then A's (6)

#define GAUSSIAN_BINDING_POINTS 0       // float (B,3)
#define GAUSSIAN_BINDING_MEANS 1        // float (N,3)
#define GAUSSIAN_BINDING_CHOLESKY 2     // float (N,6) or (N,1): L's parameters
#define GAUSSIAN_BINDING_WEIGHTS 3      // float (N,C)
#define GAUSSIAN_BINDING_GRAD_FIELD 4   // float (B,C) (backward)
#define GAUSSIAN_BINDING_OUT 5          // float: the field (B,C), the points' gradient (B,3), or partials
#define GAUSSIAN_BINDING_MAHALANOBIS 6  // float (B,N): squared distances (forward, optional)
#define GAUSSIAN_BINDINGS 7

#define GAUSSIAN_FINISH_BINDING_CHOLESKY 0  // float (N,6|1)
#define GAUSSIAN_FINISH_BINDING_PARTIALS 1  // float (chunks, rows, width)
#define GAUSSIAN_FINISH_BINDING_OUT_A 2     // float: (rows, width) sums; or μ's gradient (N,3)
#define GAUSSIAN_FINISH_BINDING_OUT_B 3     // float: L's parameters' gradient (N,6|1)
#define GAUSSIAN_FINISH_BINDING_OUT_C 4     // float: w's gradient (N,C)
#define GAUSSIAN_FINISH_BINDINGS 5

#define GAUSSIAN_ISOTROPIC 1u    // flags: L = σ·I, one parameter
#define GAUSSIAN_MAHALANOBIS 2u  // forward: write the squared distances
#define GAUSSIAN_PARTIAL 4u      // write this chunk's partial sums (else the chunk is everything: the outputs)
#define GAUSSIAN_FINISH_SUM 8u   // finish: sum partials of (rows, width) into OUT_A
#define GAUSSIAN_GRAD_MEANS 16u  // finish: which Gaussian gradients to write
#define GAUSSIAN_GRAD_CHOLESKY 32u
#define GAUSSIAN_GRAD_WEIGHTS 64u

ARM_SHARED_STRUCT(GaussianPush) {
  uint points, gaussians, channels, flags;
  uint chunk;   // columns per chunk, a multiple of GAUSSIAN_TILE
  uint chunks;  // ceil(columns / chunk)
  uint width;   // finish: values per row of the partials
  uint rows;    // finish: rows of the partials
};

#ifdef __cplusplus
static_assert(sizeof(GaussianPush) == 32);
#endif

#if defined(__cplusplus) || defined(__CUDACC__)
#define GAUSSIAN_IN(name, n) const float name[n]
#define GAUSSIAN_OUT(name, n) float name[n]
#define GAUSSIAN_INOUT(name, n) float name[n]
#else
#define GAUSSIAN_IN(name, n) in float name[n]
#define GAUSSIAN_OUT(name, n) out float name[n]
#define GAUSSIAN_INOUT(name, n) inout float name[n]
#endif

// The kernels stage A' = √(½·log2 e)·A, so that a pair's term is exp2(−‖A'd‖²) with no multiply; its distance is
// m = ‖A'd‖²·2·ln 2. (On CUDA one ex2.approx instruction: ~2 ulp, tiny results flushed to zero, as GLSL's exp2 is.)
#define GAUSSIAN_EXP2_SCALE 0.84932180028801904f
#define GAUSSIAN_UNSCALE 1.38629436111989061f  // 1 / GAUSSIAN_EXP2_SCALE² = 2·ln 2
#if defined(__CUDACC__)
__device__ inline float gaussianTerm(float scaledDistance) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(-scaledDistance));
  return y;
}
#elif defined(__cplusplus)
inline float gaussianTerm(float scaledDistance) { return std::exp2(-scaledDistance); }
#else
float gaussianTerm(float scaledDistance) { return exp2(-scaledDistance); }
#endif

ARM_FN float gaussianClampLog(float raw) {
  return raw < -GAUSSIAN_LOG_SCALE_LIMIT ? -GAUSSIAN_LOG_SCALE_LIMIT
                                         : (raw > GAUSSIAN_LOG_SCALE_LIMIT ? GAUSSIAN_LOG_SCALE_LIMIT : raw);
}

// A = L⁻¹ (lower triangle by rows: a00, a10, a11, a20, a21, a22) from L's parameters `raw` (isotropic: raw[0]).
ARM_FN void gaussianInverse(GAUSSIAN_IN(raw, 6), uint isotropic, GAUSSIAN_OUT(a, 6)) {
  if (isotropic != 0u) {
    const float s = exp(-gaussianClampLog(raw[0]));
    a[0] = s, a[1] = 0.0f, a[2] = s, a[3] = 0.0f, a[4] = 0.0f, a[5] = s;
    return;
  }
  const float l11 = exp(gaussianClampLog(raw[2]));
  const float i00 = exp(-gaussianClampLog(raw[0])), i11 = 1.0f / l11, i22 = exp(-gaussianClampLog(raw[5]));
  a[0] = i00;
  a[1] = -raw[1] * i00 * i11;
  a[2] = i11;
  a[3] = (raw[1] * raw[4] - l11 * raw[3]) * i00 * i11 * i22;
  a[4] = -raw[4] * i11 * i22;
  a[5] = i22;
}

// z = A·d; returns ‖z‖².
ARM_FN float gaussianDistance(GAUSSIAN_IN(a, 6), float dx, float dy, float dz, GAUSSIAN_OUT(z, 3)) {
  z[0] = a[0] * dx;
  z[1] = a[1] * dx + a[2] * dy;
  z[2] = a[3] * dx + a[4] * dy + a[5] * dz;
  return z[0] * z[0] + z[1] * z[1] + z[2] * z[2];
}

// The points' passes stage a Gaussian as A' and o = −A'·μ, so that z = A'·x + o is six multiply-adds a pair
// instead of the differences and six more. Its rounding grows with ‖x‖ and ‖μ‖ over the Gaussian's size where the
// differences' grows with ‖x − μ‖: an error of a few ulps of the coordinates themselves, which the inputs carry
// anyway. Points and means are taken relative to the first Gaussian's mean, so that a field far from the origin
// loses nothing. The Gaussians' side keeps the differences, which its sums need; culled mode keeps them too, as its
// tiles are bound by latency, not by instructions (docs/gaussian_field.md).
ARM_FN void gaussianOffset(GAUSSIAN_IN(a, 6), float mx, float my, float mz, GAUSSIAN_OUT(o, 3)) {
  o[0] = -(a[0] * mx);
  o[1] = -(a[1] * mx + a[2] * my);
  o[2] = -(a[3] * mx + a[4] * my + a[5] * mz);
}

// z = A·x + o, as fused multiply-adds; returns ‖z‖².
ARM_FN float gaussianDistanceFrom(GAUSSIAN_IN(a, 6), float o0, float o1, float o2, float x, float y, float z,
                                  GAUSSIAN_OUT(d, 3)) {
  d[0] = fma(a[0], x, o0);
  d[1] = fma(a[2], y, fma(a[1], x, o1));
  d[2] = fma(a[5], z, fma(a[4], y, fma(a[3], x, o2)));
  return d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
}

// The Gaussian side's sums, turned into the gradients of μ and A (A unscaled): the kernel accumulates, over its
// points, D = Σ q·d and S = Σ q·d·dᵀ (lower triangle as a), q = −g·s twice the loss's derivative by the distance;
// then A's gradient is Σ q·z·dᵀ = A·S (lower triangle) and μ's is −Σ q·Aᵀz = −Aᵀ·A·D.
ARM_FN void gaussianSideGrads(GAUSSIAN_IN(a, 6), GAUSSIAN_IN(D, 3), GAUSSIAN_IN(S, 6), GAUSSIAN_OUT(gMean, 3),
                              GAUSSIAN_OUT(gA, 6)) {
  const float s00 = S[0], s10 = S[1], s11 = S[2], s20 = S[3], s21 = S[4], s22 = S[5];
  gA[0] = a[0] * s00;
  gA[1] = a[1] * s00 + a[2] * s10;
  gA[2] = a[1] * s10 + a[2] * s11;
  gA[3] = a[3] * s00 + a[4] * s10 + a[5] * s20;
  gA[4] = a[3] * s10 + a[4] * s11 + a[5] * s21;
  gA[5] = a[3] * s20 + a[4] * s21 + a[5] * s22;
  const float ad0 = a[0] * D[0], ad1 = a[1] * D[0] + a[2] * D[1], ad2 = a[3] * D[0] + a[4] * D[1] + a[5] * D[2];
  gMean[0] = -(a[0] * ad0 + a[1] * ad1 + a[3] * ad2);
  gMean[1] = -(a[2] * ad1 + a[4] * ad2);
  gMean[2] = -(a[5] * ad2);
}

// One point's part of gaussianSideGrads' sums: q·d into D, q·d·dᵀ into S (d = (dx, dy, dz)).
ARM_FN void gaussianAddSideTerm(float q, float dx, float dy, float dz, GAUSSIAN_INOUT(D, 3), GAUSSIAN_INOUT(S, 6)) {
  const float qx = q * dx, qy = q * dy, qz = q * dz;
  D[0] += qx, D[1] += qy, D[2] += qz;
  S[0] += qx * dx, S[1] += qy * dx, S[2] += qy * dy, S[3] += qz * dx, S[4] += qz * dy, S[5] += qz * dz;
}

// The gradient of L's parameters from A's (gA, lower triangle as a): L's is −Aᵀ·gA·Aᵀ (A = L⁻¹), kept on the lower
// triangle, then through exp on the diagonal (the entry itself) or, isotropic, σ·(its trace); zero where clamped.
ARM_FN void gaussianCholeskyGrad(GAUSSIAN_IN(raw, 6), GAUSSIAN_IN(a, 6), GAUSSIAN_IN(gA, 6), uint isotropic,
                                 GAUSSIAN_OUT(g, 6)) {
  // Full 3×3 row-major forms of A and gA.
  float m[9], h[9], t[9];
  m[0] = a[0], m[1] = 0.0f, m[2] = 0.0f, m[3] = a[1], m[4] = a[2], m[5] = 0.0f, m[6] = a[3], m[7] = a[4],
  m[8] = a[5];
  h[0] = gA[0], h[1] = 0.0f, h[2] = 0.0f, h[3] = gA[1], h[4] = gA[2], h[5] = 0.0f, h[6] = gA[3], h[7] = gA[4],
  h[8] = gA[5];
  // t = Aᵀ·gA, then G = −t·Aᵀ (only its lower triangle is used).
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) t[r * 3 + c] = m[r] * h[c] + m[3 + r] * h[3 + c] + m[6 + r] * h[6 + c];
  float G[9];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) G[r * 3 + c] = -(t[r * 3] * m[c * 3] + t[r * 3 + 1] * m[c * 3 + 1] + t[r * 3 + 2] * m[c * 3 + 2]);
  if (isotropic != 0u) {
    const float r0 = raw[0], inside = r0 > -GAUSSIAN_LOG_SCALE_LIMIT && r0 < GAUSSIAN_LOG_SCALE_LIMIT ? 1.0f : 0.0f;
    g[0] = inside * exp(r0) * (G[0] + G[4] + G[8]);
    g[1] = 0.0f, g[2] = 0.0f, g[3] = 0.0f, g[4] = 0.0f, g[5] = 0.0f;
    return;
  }
  const float in0 = raw[0] > -GAUSSIAN_LOG_SCALE_LIMIT && raw[0] < GAUSSIAN_LOG_SCALE_LIMIT ? 1.0f : 0.0f;
  const float in2 = raw[2] > -GAUSSIAN_LOG_SCALE_LIMIT && raw[2] < GAUSSIAN_LOG_SCALE_LIMIT ? 1.0f : 0.0f;
  const float in5 = raw[5] > -GAUSSIAN_LOG_SCALE_LIMIT && raw[5] < GAUSSIAN_LOG_SCALE_LIMIT ? 1.0f : 0.0f;
  g[0] = in0 * exp(raw[0]) * G[0];
  g[1] = G[3];
  g[2] = in2 * exp(raw[2]) * G[4];
  g[3] = G[6];
  g[4] = G[7];
  g[5] = in5 * exp(raw[5]) * G[8];
}

#endif
