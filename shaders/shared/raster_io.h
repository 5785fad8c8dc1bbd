// Triangle rasteriser (visibility buffer): layouts and the per-pixel arithmetic shared by the CPU reference,
// CUDA and GLSL, so every backend computes bit-identical coverage, depth tokens and face indices.
//
// Semantics follow Hunyuan3D-2's custom_rasterizer (viewport, depth packing, tie-breaking, depth prior), with these
// deliberate differences, all about robustness and backends agreeing bit for bit:
//  * Coverage is decided on a 1/16-pixel fixed-point grid with exact integer edge functions and a top-left rule,
//    so a pixel centre on an edge shared by two triangles is covered exactly once (the original's inclusive float
//    test covers it twice, or neither when rounding disagrees).
//  * Triangles with a vertex at w <= 0 (crossing or behind the eye plane) are rejected; the original has no
//    clipping and rasterises garbage for them. So are triangles reaching more than 4096 pixels beyond the image
//    (the guard band below; exact integer arithmetic needs bounded coordinates). Clipping both is not implemented.
//  * Vertices snap to the grid, and depth maps to fixed-point levels, as exact floors of rational functions of the
//    clip floats (the same bits on every backend, with or without doubles; below), and depth is interpolated
//    exactly on the grid; z/w is clamped to [-2, 2]. The prior's threshold is its level plus the truncation's (the
//    original adds them in float first).
#ifndef ARMATURE_RASTER_IO_H
#define ARMATURE_RASTER_IO_H
#include "common_io.h"

#define RASTER_SUBPIXEL_BITS 4        // 1/16 pixel
// Guard band: a triangle with a vertex outside grid coordinates [LO, HI) — 4096 pixels beyond an 8192-pixel image
// on every side — is rejected, like one crossing the eye plane. Its extent then stays under 2^18 grid steps, so
// twice its area (< 2^36) times a depth level (< 2^26.6) fits int64: every product below is exact.
#define RASTER_GUARD_LO (-65536)
#define RASTER_GUARD_HI 196608
#define RASTER_GROUP 64
// Bindings. Triangles: positions, faces, prior, z-buffer, ranges, queue, records. Resolve: positions, faces, z-buffer,
// findices, barycentrics. Backward: positions, faces, findices, gradBary, gradPositions.
#define RASTER_BINDING_POSITIONS 0
#define RASTER_BINDING_FACES 1
#define RASTER_BINDING_PRIOR 2
#define RASTER_BINDING_ZBUFFER 3
#define RASTER_BINDING_RANGES 4
#define RASTER_BINDING_QUEUE 5
#define RASTER_BINDING_RECORDS 6
#define RASTER_TRIANGLES_BINDINGS 7
#define RASTER_RESOLVE_BINDING_ZBUFFER 2
#define RASTER_RESOLVE_BINDING_FINDICES 3
#define RASTER_RESOLVE_BINDING_BARY 4
#define RASTER_RESOLVE_BINDINGS 5
#define RASTER_BACKWARD_BINDING_FINDICES 2
#define RASTER_BACKWARD_BINDING_GRAD_BARY 3
#define RASTER_BACKWARD_BINDING_GRAD_POSITIONS 4
#define RASTER_BACKWARD_BINDINGS 5
#define RASTER_RESOLVE_GROUP 128  // the Vulkan resolve's workgroup (the fastest of 32-256 on the benchmark's scenes)
// Binning by size: one invocation walks a triangle whose pixel box has at most RasterPush::smallPixels pixels
// (RASTER_SMALL_PIXELS for scenes that fill the GPU, fewer for small ones: rasterSmallPixels); larger ones go to a
// queue of chunks of at least RASTER_CHUNK_PIXELS box pixels, one workgroup per chunk, so a big triangle is spread
// over many invocations instead of serialising on one (the original's slow case).
#define RASTER_SMALL_PIXELS 64        // at most 64: rasterSmallMask's bits
#define RASTER_CHUNK_PIXELS 512
#define RASTER_MAX_CHUNKS 4096        // per triangle: chunks grow beyond 512 pixels for boxes over 2M pixels
#define RASTER_QUEUE_HEADER 4         // uints before the queue's entries: [0] = entries - 1, [1] = records - 1 (from ~0)
#define RASTER_QUEUE_ENTRY 2          // uints per entry: the triangle's record, the chunk
#define RASTER_NO_RECORD 0xffffffffu  // an entry whose triangle's record did not fit: stage 1 skips it
#define RASTER_CHUNK_GROUPS 4096      // stage 1's workgroups: enough to drain any queue; idle ones exit at once
// Vulkan stage 0's workgroups at most, each looping over its groups of triangles: a 1M-triangle mesh then runs as ~2
// groups per workgroup, as CUDA's cap of four rounds of resident blocks does, so a workgroup's start-up is paid once
// per ~2 groups (8,192 was the fastest cap measured; the curve is not monotonic).
#define RASTER_TRIANGLE_GROUPS 8192
// Z-buffer tokens carry the call's tag above their depth level (rasterToken), so a call need not clear what earlier
// calls left: their tags are higher, any fragment replaces their tokens, and the resolve reads them as background.
// Tags count down from RASTER_TOKEN_TAGS - 1 with RasterDesc::scratchCall; the empty token (~0) has the highest tag,
// RASTER_TOKEN_TAGS, above all of them; every RASTER_TOKEN_TAGS calls the z-buffer is cleared and the count restarts.
#define RASTER_TAG_SHIFT 19           // token levels are under 2^19 (rasterTokenLevel)
#define RASTER_TOKEN_TAGS 8191        // 2^(32 - 19) - 1

ARM_SHARED_STRUCT(RasterPush) {
  uint width;
  uint height;
  uint vertexCount;          // vertices per image (instanced) or in all
  uint triangleCount;        // faces in F
  uint useDepthPrior;        // 1: keep fragments at or behind the prior (+ truncation): depth peeling
  float occlusionTruncation; // added to the prior's depth
  uint pass;                 // without 64-bit atomics: 1 = nearest level, 2 = lowest face at that level
  uint images;               // B: images in the batch
  uint instanced;            // 1: positions (B,N,4), every image draws all of F; 0: positions (N,4) shared, image b
                             //    draws faces ranges[2b] .. ranges[2b] + ranges[2b+1] - 1
  uint smallPixels;          // boxes of at most this many pixels (<= RASTER_SMALL_PIXELS) are walked by one invocation
  uint queueCapacity;        // entries the big-triangle queue holds
  uint stage;                // 0: one invocation per triangle, big ones queued; 1: one workgroup per queued chunk
  uint tokenTag;             // this call's tag in its z-buffer tokens (RASTER_TAG_SHIFT)
};

#ifdef __cplusplus
static_assert(sizeof(RasterPush) == 52);
#endif
#endif

#ifndef ARMATURE_RASTER_FN_H
#define ARMATURE_RASTER_FN_H
// --- per-vertex and per-pixel arithmetic, one definition for every backend ---------------------------------
// Doubles where the device has them (exact setup arithmetic, below); the perspective divide for barycentrics.
#if defined(__cplusplus) || defined(__CUDACC__) || (defined(RASTER_FP64) && RASTER_FP64)
#define RASTER_EXACT 1
#define RasterReal double   // barycentrics are resolved in double (GLSL has no typedef)
// a / b correctly rounded to float. Through double it is rounded once: a quotient of floats rounded to double and
// then to float equals the direct float division (53 >= 2·24 + 2), which CUDA does in IEEE at a fraction of the cost.
ARM_FN float rasterDivide(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return float(double(a) / double(b));
#endif
}
#else
#define RASTER_EXACT 0
#define RasterReal float    // devices without shaderFloat64: the setup and the resolve in integers (below)
#endif

// Perspective-correct barycentrics at pixel centre (cx, cy) of the triangle with screen coordinates (sx, sy)
// and clip w: screen-space weights, divided by w, renormalised. Returns weight k.
ARM_FN RasterReal rasterBary(RasterReal sx0, RasterReal sy0, RasterReal sx1, RasterReal sy1, RasterReal sx2,
                             RasterReal sy2, RasterReal w0, RasterReal w1, RasterReal w2, RasterReal cx, RasterReal cy,
                             int k) {
  RasterReal area = (sx1 - sx0) * (sy2 - sy0) - (sy1 - sy0) * (sx2 - sx0);
  RasterReal b0 = ((sx2 - sx1) * (cy - sy1) - (sy2 - sy1) * (cx - sx1)) / area;
  RasterReal b1 = ((sx0 - sx2) * (cy - sy2) - (sy0 - sy2) * (cx - sx2)) / area;
  RasterReal p0 = b0 / w0, p1 = b1 / w1, p2 = (RasterReal(1) - b0 - b1) / w2;
  RasterReal sum = p0 + p1 + p2;
  return (k == 0 ? p0 : (k == 1 ? p1 : p2)) / sum;
}

// The same three weights with one division instead of rasterBary's six, for the GPU resolve: with e_k twice the
// signed screen area of (pixel centre, v_{k+1}, v_{k+2}), b_k/w_k is proportional to e_k·w_{k+1}·w_{k+2}. The screen
// coordinates are the reference's (the same float NDC), so the two differ by rounding only.
ARM_SHARED_STRUCT(RasterWeights) {
  RasterReal b0, b1, b2;
};
ARM_FN RasterWeights rasterPerspectiveWeights(RasterReal sx0, RasterReal sy0, RasterReal sx1, RasterReal sy1,
                                              RasterReal sx2, RasterReal sy2, RasterReal w0, RasterReal w1,
                                              RasterReal w2, RasterReal cx, RasterReal cy) {
  RasterReal x0 = sx0 - cx, y0 = sy0 - cy, x1 = sx1 - cx, y1 = sy1 - cy, x2 = sx2 - cx, y2 = sy2 - cy;
  RasterReal p0 = (x1 * y2 - y1 * x2) * (w1 * w2), p1 = (x2 * y0 - y2 * x0) * (w2 * w0), p2 = (x0 * y1 - y0 * x1) * (w0 * w1);
  RasterReal inverseSum = RasterReal(1) / (p0 + p1 + p2);
  RasterWeights r;
  r.b0 = p0 * inverseSum, r.b1 = p1 * inverseSum, r.b2 = p2 * inverseSum;
  return r;
}

#if defined(__cplusplus) || defined(__CUDACC__)
// The same weights in float, for the CUDA resolve (half the registers of the double form, which spilled at full
// occupancy). Inputs are the corners' float NDC (x/w, y/w, the
// reference's) and w, and the pixel (px, py). Accurate only where the triangle is well conditioned at the pixel, so
// it says where: a caller falls back to rasterPerspectiveWeights elsewhere.
//  * Corner minus pixel centre, ndc·(size−1)/2 + size/2 − (p + 0.5), is one fused multiply-add of exact terms:
//    rounded once, relative error u = 2^-24.
//  * A_k = X·Y' − Y·X' by Kahan's difference of products (error ≤ 2u·|A_k|); the rounded inputs move it by up to
//    2u·m_k with m_k = |X·Y'| + |Y·X'|. Then p_k = A_k·(w·w'), the sum S and the products by 1/S: with
//    M = Σ m_k·|w·w'|, |error of b_k| ≤ u·(14.2·M/|S| + 2) for |b_k| ≤ 1.
//  * accurate: M ≤ 8·|S|, so the error is at most 6.9e-6, under the 1e-5 every backend is held to. A typical
//    pixel inside a triangle has M/S ≈ 1–3; slivers and pixels far from a tiny triangle's corners take the fallback.
ARM_SHARED_STRUCT(RasterFloatWeights) {
  float b0, b1, b2;
  bool accurate;
};
ARM_FN float rasterFmaf(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return fmaf(a, b, c);
#endif
}
ARM_FN float rasterDiffOfProducts(float a, float b, float c, float d) {
  const float cd = c * d;
  return rasterFmaf(a, b, -cd) + rasterFmaf(-c, d, cd);
}
ARM_FN RasterFloatWeights rasterPerspectiveWeightsFloat(float nx0, float ny0, float w0, float nx1, float ny1, float w1,
                                                        float nx2, float ny2, float w2, uint px, uint py, uint width,
                                                        uint height) {
  const float hx = float(width - 1u) * 0.5f, hy = float(height - 1u) * 0.5f;  // exact: sizes below 2^24
  const float ox = hx - float(px), oy = hy - float(py);                      // exact half-integers
  const float x0 = rasterFmaf(nx0, hx, ox), y0 = rasterFmaf(ny0, hy, oy), x1 = rasterFmaf(nx1, hx, ox);
  const float y1 = rasterFmaf(ny1, hy, oy), x2 = rasterFmaf(nx2, hx, ox), y2 = rasterFmaf(ny2, hy, oy);
  const float w12 = w1 * w2, w20 = w2 * w0, w01 = w0 * w1;
  const float p0 = rasterDiffOfProducts(x1, y2, y1, x2) * w12, p1 = rasterDiffOfProducts(x2, y0, y2, x0) * w20,
              p2 = rasterDiffOfProducts(x0, y1, y0, x1) * w01;
  const float sum = p0 + p1 + p2;
  const float bound = (fabsf(x1 * y2) + fabsf(y1 * x2)) * fabsf(w12) + (fabsf(x2 * y0) + fabsf(y2 * x0)) * fabsf(w20) +
                      (fabsf(x0 * y1) + fabsf(y0 * x1)) * fabsf(w01);
  const float inverse = 1.0f / sum;
  RasterFloatWeights r;
  r.b0 = p0 * inverse, r.b1 = p1 * inverse, r.b2 = p2 * inverse;
  r.accurate = bound <= 8.0f * fabsf(sum);  // false for NaN or a zero sum
  return r;
}
#endif

// The backward of rasterPerspectiveWeights through clip space: given dL/db_k at pixel centre (cx, cy) of the face
// with clip x, y, w per corner (screen = (x/w)·(size-1)/2 + size/2, as rasterScreen), dL/dx_k, dL/dy_k, dL/dw_k.
// With A_k twice the signed screen area of (pixel, v_{k+1}, v_{k+2}), p_k = A_k·w_{k+1}·w_{k+2} and b_k = p_k / Σp:
// dL/dp_j = (g_j − Σ g_k b_k) / Σp, then through A_k (bilinear in the corners' screen offsets) and the direct w
// factors, then the perspective divide. z moves depth only: no barycentric depends on it.
ARM_SHARED_STRUCT(RasterCornerGrads) {
  RasterReal x0, y0, w0, x1, y1, w1, x2, y2, w2;
};
ARM_FN RasterCornerGrads rasterPerspectiveWeightsBackward(RasterReal x0, RasterReal y0, RasterReal w0, RasterReal x1,
                                                          RasterReal y1, RasterReal w1, RasterReal x2, RasterReal y2,
                                                          RasterReal w2, uint width, uint height, RasterReal cx,
                                                          RasterReal cy, RasterReal g0, RasterReal g1, RasterReal g2) {
  RasterReal hx = RasterReal(width - 1u) * RasterReal(0.5), hy = RasterReal(height - 1u) * RasterReal(0.5);
  RasterReal ox = hx + RasterReal(0.5) - cx, oy = hy + RasterReal(0.5) - cy;  // screen offset minus the pixel centre
  RasterReal X0 = x0 / w0 * hx + ox, Y0 = y0 / w0 * hy + oy, X1 = x1 / w1 * hx + ox, Y1 = y1 / w1 * hy + oy;
  RasterReal X2 = x2 / w2 * hx + ox, Y2 = y2 / w2 * hy + oy;
  RasterReal A0 = X1 * Y2 - Y1 * X2, A1 = X2 * Y0 - Y2 * X0, A2 = X0 * Y1 - Y0 * X1;
  RasterReal p0 = A0 * (w1 * w2), p1 = A1 * (w2 * w0), p2 = A2 * (w0 * w1), inverseSum = RasterReal(1) / (p0 + p1 + p2);
  RasterReal gb = (g0 * p0 + g1 * p1 + g2 * p2) * inverseSum;
  RasterReal q0 = (g0 - gb) * inverseSum, q1 = (g1 - gb) * inverseSum, q2 = (g2 - gb) * inverseSum;  // dL/dp_k
  RasterReal a0 = q0 * (w1 * w2), a1 = q1 * (w2 * w0), a2 = q2 * (w0 * w1);                            // dL/dA_k
  RasterReal dX0 = a2 * Y1 - a1 * Y2, dY0 = a1 * X2 - a2 * X1;
  RasterReal dX1 = a0 * Y2 - a2 * Y0, dY1 = a2 * X0 - a0 * X2;
  RasterReal dX2 = a1 * Y0 - a0 * Y1, dY2 = a0 * X1 - a1 * X0;
  RasterCornerGrads r;
  r.x0 = dX0 * hx / w0, r.y0 = dY0 * hy / w0;
  r.x1 = dX1 * hx / w1, r.y1 = dY1 * hy / w1;
  r.x2 = dX2 * hx / w2, r.y2 = dY2 * hy / w2;
  r.w0 = q1 * A1 * w2 + q2 * A2 * w1 - (r.x0 * x0 + r.y0 * y0) / w0;
  r.w1 = q0 * A0 * w2 + q2 * A2 * w0 - (r.x1 * x1 + r.y1 * y1) / w1;
  r.w2 = q0 * A0 * w1 + q1 * A1 * w0 - (r.x2 * x2 + r.y2 * y2) / w2;
  return r;
}

// Setup arithmetic that every backend must round identically. A vertex's grid position and depth level are the
// exact floors (or truncations) of rational functions of its floats, n / w. With doubles, n is formed from exact
// products (a float times a constant of at most 25 bits, so fused or not gives the same bits) and multiplied by one
// reciprocal of w shared by the vertex's three quotients; that estimate is within 2^-17 of n / w (1/w within 2^-44
// relative, |n / w| < 2^27 where no clamp decides), so wherever it is at least 2^-12 from an integer its integer
// part is exact. The rest (about one value in 2,000) and every value on devices without doubles take the integer
// path below (rasterFixedExact, rasterDepthLevelExact), which needs only shaderInt64. (Three divisions per vertex
// were 17% of CUDA's triangle stage; NVIDIA's Vulkan driver once contracted and demoted a float form, moving a depth
// level by one in about one scene in thirty.)
//
// The original's viewport: NDC -1 maps to the centre of pixel 0, +1 to the centre of pixel size-1; no y flip.
// In pixels: ndc * (size-1)/2 + size/2. (Barycentrics only, which have a tolerance.)
ARM_FN RasterReal rasterScreen(float ndc, uint size) {
  RasterReal halfSpan = RasterReal(size - 1u) * RasterReal(0.5);
  ARM_PRECISE RasterReal s = RasterReal(ndc) * halfSpan + (halfSpan + RasterReal(0.5));
  return s;
}
ARM_FN RasterReal rasterReciprocal(float w) {
#if defined(__CUDA_ARCH__)
  float approximate;  // MUFU.RCP: within 2^-22 relative; one Newton step in double squares that
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(approximate) : "f"(w));
  const double r = double(approximate), e = fma(-double(w), r, 1.0);
  return fma(r, e, r);
#else
  return RasterReal(1) / RasterReal(w);
#endif
}
// An estimate's integer part is exact where its fraction is at least 2^-12 from 0 and 1 (false for NaN, inf).
ARM_FN bool rasterClearOfIntegers(RasterReal q) {
  ARM_PRECISE RasterReal fraction = q - floor(q);
  return fraction >= RasterReal(1.0 / 4096.0) && fraction <= RasterReal(1) - RasterReal(1.0 / 4096.0);
}

// --- the exact integer path --------------------------------------------------------------------------------
// The highest set bit of x > 0 (float of a 16-bit value is exact: its exponent is the bit).
ARM_FN int rasterTopBit16(uint x) { return int((armFloatBits(float(x)) >> 23) & 255u) - 127; }
ARM_FN int rasterTopBit(uint64_t x) {
  const uint high = uint(x >> 32), low = uint(x & uint64_t(0xffffffffu));
  const uint word = high != 0u ? high : low, base = high != 0u ? 32u : 0u;
  return int(base) + ((word >> 16) != 0u ? 16 + rasterTopBit16(word >> 16) : rasterTopBit16(word & 0xffffu));
}
// |n| (n > -2^63).
ARM_FN uint64_t rasterMagnitude(int64_t n) { return uint64_t(n < int64_t(0) ? -n : n); }
// A finite float as m · 2^e, |m| in [2^23, 2^24) (denormals normalised) or m = 0.
ARM_SHARED_STRUCT(RasterFloatParts) {
  int64_t m;
  int e;
};
ARM_FN RasterFloatParts rasterFloatParts(float f) {
  const uint bits = armFloatBits(f), field = (bits >> 23) & 255u;
  RasterFloatParts r;
  r.m = int64_t(bits & 0x7fffffu);
  r.e = -149;
  if (field != 0u) r.m += int64_t(8388608), r.e = int(field) - 150;
  else if (r.m != int64_t(0)) {  // a denormal: its top bit shifted to bit 23. (Not a loop: with one, lavapipe's
                                 // LLVM 15 lost fragments in the queue-overflow case.)
    const int shift = 23 - rasterTopBit(uint64_t(r.m));
    r.m = r.m * (int64_t(1) << shift), r.e -= shift;
  }
  if ((bits >> 31) != 0u) r.m = -r.m;
  return r;
}
ARM_FN bool rasterIsNan(float f) { return (armFloatBits(f) & 0x7fffffffu) > 0x7f800000u; }
ARM_FN bool rasterIsInf(float f) { return (armFloatBits(f) & 0x7fffffffu) == 0x7f800000u; }
// floor(n / m) for m > 0 (integer division truncates).
ARM_FN int64_t rasterFloorDivide(int64_t n, int64_t m) {
  int64_t q = n / m;
  return q * m > n ? q - int64_t(1) : q;
}
// floor(n · 2^k / m) for m in (0, 2^24) and |n| < 2^62; where n · 2^k would not fit in 63 bits, ±2^38 (the quotient
// is beyond that, and every caller clamps far inside it).
ARM_FN int64_t rasterFloorScaled(int64_t n, int k, int64_t m) {
  if (n == int64_t(0)) return int64_t(0);
  if (k >= 0) {
    if (k > 40 || rasterMagnitude(n) >= (uint64_t(1) << (62 - k))) return n < int64_t(0) ? -(int64_t(1) << 38) : (int64_t(1) << 38);
    return rasterFloorDivide(n * (int64_t(1) << k), m);
  }
  const int64_t q = rasterFloorDivide(n, m);  // floor(n / (m · 2^s)) = floor(floor(n / m) / 2^s)
  return -k >= 63 ? (q < int64_t(0) ? int64_t(-1) : int64_t(0)) : q >> (-k);
}
// --- float results from integers, for devices without doubles -----------------------------------------
// q · 2^e (q > 0, plus a non-zero fraction below q's last bit where `inexact`), rounded to the nearest float, ties
// to even; 0 below the normal range, the largest float above it.
ARM_FN float rasterRoundToFloat(uint64_t q, bool inexact, int e) {
  const int shift = rasterTopBit(q) - 23;
  uint64_t mantissa = q;
  if (shift > 0) {
    const uint64_t dropped = q & ((uint64_t(1) << shift) - uint64_t(1)), tie = uint64_t(1) << (shift - 1);
    mantissa = q >> shift;
    if (dropped > tie || (dropped == tie && (inexact || (mantissa & uint64_t(1)) != uint64_t(0)))) mantissa += uint64_t(1);
  } else {
    mantissa = q << (-shift);  // exact
  }
  const int exponent = e + shift;  // the value is mantissa · 2^exponent, mantissa in [2^23, 2^24]
  if (exponent + 23 < -126) return 0.0f;
  if (exponent + 23 > 126) return 3.4028235e38f;
  return ldexp(float(mantissa), exponent);  // exact: 24 bits, normal
}
// a / b correctly rounded (ties to even) for finite, non-zero a and b whose quotient is a normal float: the
// quotient of the mantissas in 64-bit integers.
ARM_FN float rasterDivideInteger(float a, float b) {
  const RasterFloatParts pa = rasterFloatParts(a), pb = rasterFloatParts(b);
  const uint64_t num = rasterMagnitude(pa.m) << 25, den = rasterMagnitude(pb.m);
  const uint64_t q = num / den;  // 25 or 26 bits
  const float magnitude = rasterRoundToFloat(q, num - q * den != uint64_t(0), pa.e - pb.e - 25);
  return (pa.m < int64_t(0)) != (pb.m < int64_t(0)) ? -magnitude : magnitude;
}
// a / b as rasterDivide's double form gives it, without doubles. Zeros, infinities, NaN and quotients near or outside
// the normal range take the plain division (GLSL's is within 2.5 ulp): they are 0, not finite or under 2^-125,
// where an ulp moves no barycentric.
ARM_FN float rasterDivideRounded(float a, float b) {
  ARM_PRECISE float approximate = a / b;
  const float size = approximate < 0.0f ? -approximate : approximate;
  if (a == 0.0f || b == 0.0f || rasterIsNan(a) || rasterIsNan(b) || rasterIsInf(a) || rasterIsInf(b) ||
      !(size > 2.4e-38f && size < 1.7e38f))
    return approximate;
  return rasterDivideInteger(a, b);
}
// n / d (d != 0) to the nearest float: d's leading 31 bits (relative error 2^-30, 1/128 of an ulp) against n's 63.
ARM_FN float rasterRatio(int64_t n, int64_t d) {
  if (n == int64_t(0)) return 0.0f;
  uint64_t x = rasterMagnitude(n), y = rasterMagnitude(d);
  const int ex = 62 - rasterTopBit(x), ey = rasterTopBit(y) - 30;
  x <<= ex;
  y = ey >= 0 ? y >> ey : y << (-ey);
  const uint64_t q = x / y;  // 32 or 33 bits
  const float magnitude = rasterRoundToFloat(q, x - q * y != uint64_t(0), -ex - ey);
  return (n < int64_t(0)) != (d < int64_t(0)) ? -magnitude : magnitude;
}
// Signed 128-bit integers, for the weights' cross products (Vulkan has no float arithmetic that a driver must not
// reassociate: pairs of floats with error-free sums lost their low parts on NVIDIA's compiler).
ARM_SHARED_STRUCT(RasterWide) {
  uint64_t hi, lo;  // two's complement
};
ARM_FN RasterWide rasterWideNegate(RasterWide v) {
  RasterWide r;
  r.lo = ~v.lo + uint64_t(1);
  r.hi = ~v.hi + (r.lo == uint64_t(0) ? uint64_t(1) : uint64_t(0));
  return r;
}
ARM_FN RasterWide rasterWideProduct(int64_t a, int64_t b) {
  const uint64_t x = rasterMagnitude(a), y = rasterMagnitude(b), low = uint64_t(0xffffffffu);
  const uint64_t p00 = (x & low) * (y & low), p01 = (x & low) * (y >> 32), p10 = (x >> 32) * (y & low);
  const uint64_t p11 = (x >> 32) * (y >> 32);
  const uint64_t middle = (p00 >> 32) + (p01 & low) + (p10 & low);
  RasterWide r;
  r.lo = (middle << 32) | (p00 & low);
  r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
  return (a < int64_t(0)) != (b < int64_t(0)) ? rasterWideNegate(r) : r;
}
ARM_FN RasterWide rasterWideDifference(RasterWide a, RasterWide b) {
  const RasterWide nb = rasterWideNegate(b);
  RasterWide r;
  r.lo = a.lo + nb.lo;
  r.hi = a.hi + nb.hi + (r.lo < a.lo ? uint64_t(1) : uint64_t(0));
  return r;
}
// v ≈ m · 2^shift with |m| < 2^bits (truncated toward zero), bits <= 63.
ARM_SHARED_STRUCT(RasterScaled) {
  int64_t m;
  int shift;
};
ARM_FN RasterScaled rasterWideScaled(RasterWide v, int bits) {
  const bool negative = (v.hi >> 63) != uint64_t(0);
  const RasterWide a = negative ? rasterWideNegate(v) : v;
  RasterScaled r;
  r.m = int64_t(0), r.shift = 0;
  if (a.hi == uint64_t(0) && a.lo == uint64_t(0)) return r;
  const int top = a.hi != uint64_t(0) ? 64 + rasterTopBit(a.hi) : rasterTopBit(a.lo);
  r.shift = top - (bits - 1) > 0 ? top - (bits - 1) : 0;
  const uint64_t m = r.shift == 0 ? a.lo
                     : r.shift >= 64 ? a.hi >> (r.shift - 64)
                                     : (a.lo >> r.shift) | (a.hi << (64 - r.shift));
  r.m = negative ? -int64_t(m) : int64_t(m);
  return r;
}
// A corner less pixel p's centre, ndc·(size-1)/2 + (size-1)/2 − p, in units of 2^-46 pixel, rounded (|result| <
// 2^60: corners of drawn faces lie in the guard band, within 2^14 pixels).
ARM_FN int64_t rasterCornerFixed(float ndc, uint size, uint p) {
  const RasterFloatParts n = rasterFloatParts(ndc);
  const int64_t t = n.m * int64_t(size - 1u);  // ndc·(size-1) = t·2^e; in units of 2^-46 after halving: t·2^(e+45)
  const int s = n.e + 45;
  int64_t term = int64_t(0);
  if (s >= 0) term = t * (int64_t(1) << s);
  else if (s > -63) term = (t + (int64_t(1) << (-s - 1))) >> (-s);
  return term + (int64_t(size - 1u) - int64_t(2u * p)) * (int64_t(1) << 45);
}
// rasterPerspectiveWeights for devices without doubles, in integers: the corners to 2^-46 pixel (the double form
// rounds them to 53 bits), exact 128-bit cross products, each p_k kept to 61 bits, the three aligned and summed
// exactly, and each weight the rounded ratio: within about an ulp of the double form's weight rounded to float.
ARM_FN RasterWeights rasterPerspectiveWeightsInteger(float nx0, float ny0, float w0, float nx1, float ny1, float w1,
                                                     float nx2, float ny2, float w2, uint px, uint py, uint width,
                                                     uint height) {
  const int64_t x[3] = {rasterCornerFixed(nx0, width, px), rasterCornerFixed(nx1, width, px),
                        rasterCornerFixed(nx2, width, px)};
  const int64_t y[3] = {rasterCornerFixed(ny0, height, py), rasterCornerFixed(ny1, height, py),
                        rasterCornerFixed(ny2, height, py)};
  const RasterFloatParts w[3] = {rasterFloatParts(w0), rasterFloatParts(w1), rasterFloatParts(w2)};
  int64_t p[3];
  int e[3];
  int top = -2147483647;
  for (int k = 0; k < 3; ++k) {
    const int i = (k + 1) % 3, j = (k + 2) % 3;
    const RasterWide cross = rasterWideDifference(rasterWideProduct(x[i], y[j]), rasterWideProduct(y[i], x[j]));
    const RasterScaled area = rasterWideScaled(cross, 62);
    const RasterScaled scaled = rasterWideScaled(rasterWideProduct(area.m, w[i].m * w[j].m), 61);
    p[k] = scaled.m, e[k] = area.shift + scaled.shift + w[i].e + w[j].e;
    if (p[k] != int64_t(0) && e[k] > top) top = e[k];
  }
  int64_t sum = int64_t(0);
  for (int k = 0; k < 3; ++k) {
    const int drop = top - e[k];
    const int64_t kept = drop >= 63 ? int64_t(0) : int64_t(rasterMagnitude(p[k]) >> drop);  // toward zero
    p[k] = p[k] < int64_t(0) ? -kept : kept;
    sum += p[k];
  }
  RasterWeights r;
  if (sum == int64_t(0)) {  // a degenerate face: as the double form, not finite
    const float zero = float(sum);
    r.b0 = RasterReal(float(p[0]) / zero), r.b1 = RasterReal(float(p[1]) / zero), r.b2 = RasterReal(float(p[2]) / zero);
    return r;
  }
  r.b0 = RasterReal(rasterRatio(p[0], sum)), r.b1 = RasterReal(rasterRatio(p[1], sum));
  r.b2 = RasterReal(rasterRatio(p[2], sum));
  return r;
}
#if !RASTER_EXACT
ARM_FN float rasterDivide(float a, float b) { return rasterDivideRounded(a, b); }
#endif

// The screen coordinate of clip (a, w), w > 0, on the 1/16-pixel grid, rounded to nearest and clamped to 2^22:
// floor(a/w · S + S + 8.5) with S = 8(size-1), exactly. Non-finite values land where the double form puts them:
// NaN (and w = inf) at -2^22, ±inf at ±2^22.
ARM_RARE_FN int rasterFixedExact(float a, float w, uint size) {
  const int64_t S = int64_t(size - 1u) * int64_t(8);
  if (rasterIsNan(a) || rasterIsInf(w)) return -4194304;
  if (rasterIsInf(a)) return S == int64_t(0) || a < 0.0f ? -4194304 : 4194304;
  const RasterFloatParts pa = rasterFloatParts(a), pw = rasterFloatParts(w);
  // floor(t + 0.5) = floor((floor(2t) + 1) / 2) for t = a/w · S.
  const int64_t twice = rasterFloorScaled(int64_t(2) * pa.m * S, pa.e - pw.e, pw.m);
  const int64_t g = S + int64_t(8) + ((twice + int64_t(1)) >> 1);
  return int(g > int64_t(-4194304) ? (g < int64_t(4194304) ? g : int64_t(4194304)) : int64_t(-4194304));
}
ARM_FN int rasterFixed(float a, float w, RasterReal reciprocal, uint size) {
#if RASTER_EXACT
  RasterReal scale = RasterReal(size - 1u) * RasterReal(8);
  ARM_PRECISE RasterReal numerator = RasterReal(a) * scale + RasterReal(w) * (scale + RasterReal(8.5));
  ARM_PRECISE RasterReal g = numerator * reciprocal;
  if (rasterClearOfIntegers(g)) {
    g = g > RasterReal(-4194304) ? (g < RasterReal(4194304) ? g : RasterReal(4194304)) : RasterReal(-4194304);
    return int(floor(g));  // far off: clamped to 2^22, outside the guard band, inside int
  }
#endif
  return rasterFixedExact(a, w, size);
}
// The pixel centre of column (or row) i on the grid.
ARM_FN int rasterCentre(int i) { return i * 16 + 8; }
// Twice the signed area of (a, b, p) on the grid: exact in 64-bit integers.
ARM_FN int64_t rasterEdge(int ax, int ay, int bx, int by, int px, int py) {
  return int64_t(bx - ax) * int64_t(py - ay) - int64_t(by - ay) * int64_t(px - ax);
}
// Top-left rule for an edge with direction (dx, dy) in a triangle oriented so that inside is positive: of the
// two triangles sharing an edge, exactly one owns it, so a centre on the edge is covered once.
ARM_FN bool rasterOwnsEdge(int dx, int dy) { return dy < 0 || (dy == 0 && dx > 0); }
// The original's depth, z/w * 0.49999 + 0.5, in fixed point with 2^26 levels: fine enough that the prior's
// truncation (1e-6) separates layers, coarse enough that twice a triangle's area (< 2^36, see the guard band)
// times a depth level stays inside int64: z/w is clamped to [-2, 2], outside the visible [-1, 1], so
// |levels| < 1.5 * 2^26. The level is (z*C + w*2^25) / w truncated, with C = float(0.49999) * 2^26.
// The token keeps the original's 2^18 levels (rasterTokenLevel).
// Its clamps: 2^25 -+ 2 · float(0.49999) · 2^26, so a level less the minimum fits 27 bits.
#define RASTER_DEPTH_LEVEL_MIN (-33553088)
#define RASTER_DEPTH_LEVEL_MAX 100661952
// rasterDepthLevel exactly, in integers: NaN (and w = inf) in front of everything (the minimum), ±inf clamped.
ARM_RARE_FN int64_t rasterDepthLevelExact(float z, float w) {
  const int64_t lo = int64_t(RASTER_DEPTH_LEVEL_MIN), hi = int64_t(RASTER_DEPTH_LEVEL_MAX), origin = int64_t(33554432);
  if (rasterIsNan(z) || rasterIsInf(w)) return lo;
  if (rasterIsInf(z)) return z > 0.0f ? hi : lo;
  const RasterFloatParts pz = rasterFloatParts(z), pw = rasterFloatParts(w);
  const int64_t n = pz.m * int64_t(33553760);
  const int64_t below = rasterFloorScaled(n, pz.e - pw.e, pw.m);  // floor(t), t = z/w · C; the level is 2^25 + t
  const int64_t level = below >= -origin ? origin + below : origin - rasterFloorScaled(-n, pz.e - pw.e, pw.m);  // < 0: ceil
  return level > lo ? (level < hi ? level : hi) : lo;
}
ARM_FN int64_t rasterDepthLevel(float z, float w, RasterReal reciprocal) {
#if RASTER_EXACT
  // 33553760 = float(0.49999) * 2^26 exactly, as a literal: glslang folds float(0.49999f) into a double unrounded.
  const RasterReal scale = RasterReal(33553760.0), lo = RasterReal(RASTER_DEPTH_LEVEL_MIN), hi = RasterReal(RASTER_DEPTH_LEVEL_MAX);
  ARM_PRECISE RasterReal numerator = RasterReal(z) * scale + RasterReal(w) * RasterReal(33554432.0);
  ARM_PRECISE RasterReal level = numerator * reciprocal;
  if (rasterClearOfIntegers(level)) {
    level = level > lo ? (level < hi ? level : hi) : lo;
    return int64_t(level);
  }
#endif
  return rasterDepthLevelExact(z, w);
}
// The depth prior's threshold (the prior in z/w units, plus the truncation) in the same levels: fragments in
// front of it are peeled away.
ARM_FN int64_t rasterPriorLevel(float prior, float truncation) {
  return rasterDepthLevel(prior, 1.0f, RasterReal(1)) + int64_t(RasterReal(truncation) * RasterReal(67108864.0));
}
// A fragment's level in its token, for depth levels >= 0 (fragments in front of the near plane are dropped): under
// 2^19 since depth levels are at most RASTER_DEPTH_LEVEL_MAX, so the call's tag fits above it (RASTER_TAG_SHIFT).
ARM_FN int64_t rasterTokenLevel(int64_t depthLevel) {
  int64_t level = depthLevel >> 8, cap = (int64_t(1) << RASTER_TAG_SHIFT) - int64_t(1);
  return level < cap ? level : cap;
}
#ifdef __cplusplus
static_assert((RASTER_DEPTH_LEVEL_MAX >> 8) < (1 << RASTER_TAG_SHIFT) && RASTER_TOKEN_TAGS == (1 << (32 - RASTER_TAG_SHIFT)) - 1);
#endif
// A triangle on the grid, set up once: fixed-point vertices, depth levels, orientation and pixel box.
ARM_SHARED_STRUCT(RasterTri) {
  int x0, y0, x1, y1, x2, y2;
  int d0, d1, d2;  // depth levels: |level| < 1.5 * 2^26, so each edge-times-depth product is one 32x32->64 multiply
  int sign;        // +1 or -1: the triangle's winding on screen
  int64_t area;    // twice the signed area, times sign: > 0
  RasterReal inverseArea;  // 1 / area, for rasterQuotient's estimate
  int minX, maxX, minY, maxY;
  uint valid;      // 0: a vertex has w <= 0 (or NaN), or the triangle is degenerate
  uint narrow;     // 1: vertex extent under 2^14 grid steps (1024 pixels): edge functions are exact in 32 bits
  uint owned;      // bit k: the edge opposite vertex k is owned under the top-left rule (a centre on it is covered)
};

// A queued big triangle: its setup, done once by the invocation that queued it, and where it goes. Every chunk
// entry names one; stage 1 reads it instead of setting the triangle up again.
ARM_SHARED_STRUCT(RasterQueued) {
  RasterTri tri;
  uint face;
  uint image;
};

ARM_FN int rasterMin(int a, int b) { return a < b ? a : b; }  // (GLSL's min is not C++'s)
ARM_FN int rasterMax(int a, int b) { return a > b ? a : b; }

// A corner on the grid: what the setup needs of each vertex, computed once per vertex where a backend can share it.
// valid: w > 0 (not NaN) and inside the guard band.
ARM_SHARED_STRUCT(RasterVertex) {
  int x, y, d;
  uint valid;
};
ARM_FN RasterVertex rasterVertex(float x, float y, float z, float w, uint width, uint height) {
  RasterVertex v;
  v.x = v.y = v.d = 0;
  v.valid = 0u;
  if (!(w > 0.0f)) return v;  // w <= 0 or NaN: rejected
  const RasterReal reciprocal = rasterReciprocal(w);
  v.x = rasterFixed(x, w, reciprocal, width);
  v.y = rasterFixed(y, w, reciprocal, height);
  v.d = int(rasterDepthLevel(z, w, reciprocal));
  v.valid = v.x >= RASTER_GUARD_LO && v.x < RASTER_GUARD_HI && v.y >= RASTER_GUARD_LO && v.y < RASTER_GUARD_HI ? 1u : 0u;
  return v;
}

ARM_FN RasterTri rasterSetupVertices(RasterVertex a, RasterVertex b, RasterVertex c, uint width, uint height) {
  RasterTri t;
  t.valid = 0u;
  t.x0 = t.y0 = t.x1 = t.y1 = t.x2 = t.y2 = 0;
  t.d0 = t.d1 = t.d2 = 0;
  t.area = int64_t(0);
  t.owned = 0u;
  t.inverseArea = RasterReal(0);
  t.sign = 1;
  t.narrow = 0u;
  t.minX = t.minY = 0;
  t.maxX = t.maxY = -1;
  if (a.valid == 0u || b.valid == 0u || c.valid == 0u) return t;  // behind the eye or outside the guard band
  t.x0 = a.x, t.y0 = a.y, t.d0 = a.d;
  t.x1 = b.x, t.y1 = b.y, t.d1 = b.d;
  t.x2 = c.x, t.y2 = c.y, t.d2 = c.d;
  int lo = rasterMin(t.x0, rasterMin(t.x1, t.x2)), hi = rasterMax(t.x0, rasterMax(t.x1, t.x2));
  int loY = rasterMin(t.y0, rasterMin(t.y1, t.y2)), hiY = rasterMax(t.y0, rasterMax(t.y1, t.y2));
  int64_t area = rasterEdge(t.x0, t.y0, t.x1, t.y1, t.x2, t.y2);
  if (area == int64_t(0)) return t;
  t.sign = area > int64_t(0) ? 1 : -1;
  t.area = area * int64_t(t.sign);
  t.inverseArea = RasterReal(1) / RasterReal(t.area);
  int wind = t.sign;
  t.owned = (rasterOwnsEdge(wind * (t.x2 - t.x1), wind * (t.y2 - t.y1)) ? 1u : 0u) |
            (rasterOwnsEdge(wind * (t.x0 - t.x2), wind * (t.y0 - t.y2)) ? 2u : 0u) |
            (rasterOwnsEdge(wind * (t.x1 - t.x0), wind * (t.y1 - t.y0)) ? 4u : 0u);
  // The pixels whose centres (16i + 8) lie inside the vertex box, no more: no other centre can be covered, and a
  // small triangle's walk is mostly its box. (>> is floor division for negative ints in C++20, CUDA and GLSL.)
  t.minX = rasterMax((lo + 7) >> 4, 0);
  t.maxX = rasterMin((hi - 8) >> 4, int(width) - 1);
  t.minY = rasterMax((loY + 7) >> 4, 0);
  t.maxY = rasterMin((hiY - 8) >> 4, int(height) - 1);
  // Pixel centres lie inside the vertex box, so |products| < 2^28 and edge values < 2^29.
  t.narrow = hi - lo < 16384 && hiY - loY < 16384 ? 1u : 0u;
  t.valid = t.minX <= t.maxX && t.minY <= t.maxY ? 1u : 0u;  // off screen: an empty box (whose size would wrap)
  return t;
}
ARM_FN RasterTri rasterSetup(float ax, float ay, float az, float aw, float bx, float by, float bz, float bw, float cx,
                             float cy, float cz, float cw, uint width, uint height) {
  return rasterSetupVertices(rasterVertex(ax, ay, az, aw, width, height), rasterVertex(bx, by, bz, bw, width, height),
                             rasterVertex(cx, cy, cz, cw, width, height), width, height);
}

#define RASTER_MISS (-(int64_t(1) << 62))  // rasterCover's "not covered"

// Twice the signed area of (a, b, p) in 32-bit arithmetic: equal to rasterEdge when the triangle is narrow.
ARM_FN int rasterEdge32(int ax, int ay, int bx, int by, int px, int py) { return (bx - ax) * (py - ay) - (by - ay) * (px - ax); }

// num / den truncated toward zero (C's and GLSL's integer division) for den > 0, exactly, without a 64-bit
// division (a long emulated sequence on GPUs): an estimate from the precomputed 1/den, corrected with 64-bit
// multiplies. With doubles the estimate is within one of the quotient (|num/den| < 2^28); if it is further off
// (float-only devices) the exact division is the fallback, so the result never depends on the estimate.
ARM_FN int64_t rasterQuotient(int64_t num, int64_t den, RasterReal inverseDen) {
  int64_t q = int64_t(RasterReal(num) * inverseDen);
  // The estimate as floor: r must land in [0, den). Wrapping arithmetic (unsigned, the same instructions): for a
  // numerator beyond the stated range q·den may overflow, and the range check below then takes the fallback.
  int64_t r = int64_t(uint64_t(num) - uint64_t(q) * uint64_t(den));
  if (r < int64_t(0)) q = int64_t(uint64_t(q) - uint64_t(1)), r += den;
  else if (r >= den) q = int64_t(uint64_t(q) + uint64_t(1)), r -= den;
  if (r < int64_t(0) || r >= den) return num / den;
  return num < int64_t(0) && r != int64_t(0) ? q + int64_t(1) : q;  // floor to truncation
}

// The depth level (2^26 scale) of the fragment at pixel (px, py), or RASTER_MISS when the fill rule excludes it.
ARM_FN int64_t rasterCover(RasterTri t, int px, int py) {
  int cx = rasterCentre(px), cy = rasterCentre(py), s = t.sign;
  // Inside: every w_k > 0, or = 0 on an edge the triangle owns; for integers, w_k + owned_k > 0.
  int o0 = int(t.owned & 1u), o1 = int((t.owned >> 1) & 1u), o2 = int(t.owned >> 2);
  int64_t num;
  if (t.narrow != 0u) {
    int w0 = s * rasterEdge32(t.x1, t.y1, t.x2, t.y2, cx, cy);
    int w1 = s * rasterEdge32(t.x2, t.y2, t.x0, t.y0, cx, cy);
    int w2 = s * rasterEdge32(t.x0, t.y0, t.x1, t.y1, cx, cy);
    if (w0 + o0 <= 0 || w1 + o1 <= 0 || w2 + o2 <= 0) return RASTER_MISS;
    num = int64_t(w0) * int64_t(t.d0) + int64_t(w1) * int64_t(t.d1) + int64_t(w2) * int64_t(t.d2);
  } else {
    int64_t w0 = int64_t(s) * rasterEdge(t.x1, t.y1, t.x2, t.y2, cx, cy);
    int64_t w1 = int64_t(s) * rasterEdge(t.x2, t.y2, t.x0, t.y0, cx, cy);
    int64_t w2 = int64_t(s) * rasterEdge(t.x0, t.y0, t.x1, t.y1, cx, cy);
    if (w0 + int64_t(o0) <= int64_t(0) || w1 + int64_t(o1) <= int64_t(0) || w2 + int64_t(o2) <= int64_t(0)) return RASTER_MISS;
    num = w0 * int64_t(t.d0) + w1 * int64_t(t.d1) + w2 * int64_t(t.d2);
  }
  return rasterQuotient(num, t.area, t.inverseArea);
}

// Which pixels of a small box (at most 64, row-major: bit q of hi:lo is box pixel q) a narrow triangle covers, by
// rasterCover's fill rule. Edge functions step by one pixel with one add each, so a walk can find the covered
// pixels cheaply and compute depth only at those (a small triangle covers about a third of its box). No branch per
// pixel: the edges are biased so that covered means all three are >= 0, and the sign bit of their OR ("outside")
// enters the top of a 64-bit shift register; after n pixels the top n bits are the box's, in order.
ARM_SHARED_STRUCT(RasterMask) {
  uint lo, hi;
};
ARM_FN RasterMask rasterSmallMask(RasterTri t) {
  int s = t.sign, cx = rasterCentre(t.minX), cy = rasterCentre(t.minY);
  // Row starts, biased by the owner bits minus one (rasterCover's w + owned > 0 is w + owned - 1 >= 0), and steps
  // of 16 grid units.
  int r0 = s * rasterEdge32(t.x1, t.y1, t.x2, t.y2, cx, cy) + int(t.owned & 1u) - 1;
  int r1 = s * rasterEdge32(t.x2, t.y2, t.x0, t.y0, cx, cy) + int((t.owned >> 1) & 1u) - 1;
  int r2 = s * rasterEdge32(t.x0, t.y0, t.x1, t.y1, cx, cy) + int(t.owned >> 2) - 1;
  int a0 = -16 * s * (t.y2 - t.y1), b0 = 16 * s * (t.x2 - t.x1);
  int a1 = -16 * s * (t.y0 - t.y2), b1 = 16 * s * (t.x0 - t.x2);
  int a2 = -16 * s * (t.y1 - t.y0), b2 = 16 * s * (t.x1 - t.x0);
  int width = t.maxX - t.minX + 1, height = t.maxY - t.minY + 1;
  uint lo = 0u, hi = 0u;  // the shift register: "outside" bits enter at bit 63
  for (int y = 0; y < height; ++y) {
    int e0 = r0, e1 = r1, e2 = r2;
    for (int x = 0; x < width; ++x) {
      lo = (lo >> 1) | (hi << 31);
      hi = (hi >> 1) | (uint(e0 | e1 | e2) & 0x80000000u);
      e0 += a0, e1 += a1, e2 += a2;
    }
    r0 += b0, r1 += b1, r2 += b2;
  }
  uint n = uint(width * height), shift = 64u - n;  // 1 <= n <= 64: move the box's bits down to bit 0
  if (shift >= 32u) lo = hi >> (shift - 32u), hi = 0u;
  else if (shift > 0u) lo = (lo >> shift) | (hi << (32u - shift)), hi = hi >> shift;
  RasterMask m;
  m.lo = ~lo & (n >= 32u ? ~0u : (1u << n) - 1u);
  m.hi = ~hi & (n > 32u ? (n == 64u ? ~0u : (1u << (n - 32u)) - 1u) : 0u);
  return m;
}

// rasterQuotient for a narrow triangle, whose quotient is a depth level (|q| < 2^27) and whose den (twice its area)
// is under 2^29: the estimate and its correction in 32 bits. The double estimate is within one (num <= den·2^27
// rounds to double within den·2^-26); where it is not (float devices), the full form answers. The estimate goes
// through int64 as in rasterQuotient: lavapipe (LLVM 15) turned negative doubles into wrong 32-bit ints.
ARM_FN int64_t rasterQuotientNarrow(int64_t num, int den, RasterReal inverseDen) {
  int q = int(int64_t(RasterReal(num) * inverseDen));
  int64_t remainder = num - int64_t(q) * int64_t(den);  // one 32x32->64 multiply
  if (remainder < -int64_t(den) || remainder >= int64_t(2) * int64_t(den)) return rasterQuotient(num, int64_t(den), inverseDen);
  int r = int(remainder);
  if (r < 0) q -= 1, r += den;
  else if (r >= den) q += 1, r -= den;
  return int64_t(num < int64_t(0) && r != 0 ? q + 1 : q);
}
// The depth level of a pixel that rasterSmallMask says a narrow triangle covers: rasterCover's value without its
// coverage test.
ARM_FN int64_t rasterNarrowDepth(RasterTri t, int px, int py) {
  int cx = rasterCentre(px), cy = rasterCentre(py), s = t.sign;
  int w0 = s * rasterEdge32(t.x1, t.y1, t.x2, t.y2, cx, cy);
  int w1 = s * rasterEdge32(t.x2, t.y2, t.x0, t.y0, cx, cy);
  int w2 = s * rasterEdge32(t.x0, t.y0, t.x1, t.y1, cx, cy);
  int64_t num = int64_t(w0) * int64_t(t.d0) + int64_t(w1) * int64_t(t.d1) + int64_t(w2) * int64_t(t.d2);
  return rasterQuotientNarrow(num, int(t.area), t.inverseArea);
}

// num / den rounded down, for den > 0: the quotient mod 2^32 and the remainder in [0, den).
ARM_SHARED_STRUCT(RasterFloorDiv) {
  uint q;
  int r;
};
ARM_FN RasterFloorDiv rasterFloorDiv(int64_t num, int den, RasterReal inverseDen) {
  int64_t q = rasterQuotient(num, int64_t(den), inverseDen), r = num - q * int64_t(den);
  if (r < int64_t(0)) q -= int64_t(1), r += int64_t(den);
  RasterFloorDiv d;
  d.q = uint(uint64_t(q) & uint64_t(0xffffffffu));
  d.r = int(r);
  return d;
}
// A small narrow triangle's depth numerator (rasterNarrowDepth's num) is linear in the box pixel (dx, dy):
// num0 + dx·Nx + dy·Ny. Each term is kept divided by the area, as a quotient and a remainder, so a pixel's level
// costs a few 32-bit multiply-adds and one small correction instead of three edge functions and a 64-bit quotient.
// The quotients may wrap mod 2^32; the level they sum to fits in 32 bits, so the wrapped sum is exact. The
// remainders sum to under 64·area: valid only for areas under 2^24 (every small triangle but a clipped big one).
ARM_SHARED_STRUCT(RasterPlane) {
  uint q0, qx, qy;  // quotients at the box origin, per pixel in x, per pixel in y (mod 2^32)
  int r0, rx, ry;   // their remainders, in [0, area)
  int area;
  float inverseArea;
  uint valid;       // 0: area >= 2^24, use rasterNarrowDepth
};
#if RASTER_EXACT
// rasterFloorDiv for a numerator held exactly in a double (an integer, |num| < 2^52) and 0 < den < 2^24: the
// estimate num · inverseDen is within one of the quotient, and q · den and num − q · den are exact. r = -1 if the
// estimate was further off (it is not, for a correctly rounded inverse; the caller then takes the integer path).
ARM_FN RasterFloorDiv rasterFloorDivExact(double num, int den, double inverseDen) {
  ARM_PRECISE double q = floor(num * inverseDen);
  ARM_PRECISE double r = num - q * double(den);
  if (r < 0.0) q -= 1.0, r += double(den);
  else if (r >= double(den)) q += 1.0, r -= double(den);
  RasterFloorDiv d;
  d.q = uint(uint64_t(int64_t(q)) & uint64_t(0xffffffffu));
  d.r = r >= 0.0 && r < double(den) ? int(r) : -1;
  return d;
}
#endif
ARM_FN RasterPlane rasterPlane(RasterTri t) {
  RasterPlane p;
  p.q0 = p.qx = p.qy = 0u;
  p.r0 = p.rx = p.ry = 0;
  p.area = 1;
  p.inverseArea = 1.0f;
  p.valid = 0u;
  if (t.area >= int64_t(16777216)) return p;
  int s = t.sign, cx = rasterCentre(t.minX), cy = rasterCentre(t.minY);
  const int e0 = s * rasterEdge32(t.x1, t.y1, t.x2, t.y2, cx, cy), e1 = s * rasterEdge32(t.x2, t.y2, t.x0, t.y0, cx, cy),
            e2 = s * rasterEdge32(t.x0, t.y0, t.x1, t.y1, cx, cy);
  const int ax0 = -16 * s * (t.y2 - t.y1), ax1 = -16 * s * (t.y0 - t.y2), ax2 = -16 * s * (t.y1 - t.y0);
  const int by0 = 16 * s * (t.x2 - t.x1), by1 = 16 * s * (t.x0 - t.x2), by2 = 16 * s * (t.x1 - t.x0);
  p.area = int(t.area);
  p.inverseArea = float(t.inverseArea);
#if RASTER_EXACT
  // With the origin's edge values under 2^23 (any box of a small triangle; not a big one clipped to a small box),
  // every product below is under 2^50 (levels are under 2^27, steps under 2^18) and every sum under 2^52: the
  // numerators are exact in double, and so their quotients are, without 64-bit integer arithmetic (emulated, and a
  // large part of the triangle stage, on GPUs).
  if (abs(e0) < 8388608 && abs(e1) < 8388608 && abs(e2) < 8388608) {
    const double d0 = double(t.d0), d1 = double(t.d1), d2 = double(t.d2);
    ARM_PRECISE double num0 = double(e0) * d0 + double(e1) * d1 + double(e2) * d2;
    ARM_PRECISE double stepX = double(ax0) * d0 + double(ax1) * d1 + double(ax2) * d2;
    ARM_PRECISE double stepY = double(by0) * d0 + double(by1) * d1 + double(by2) * d2;
    RasterFloorDiv o = rasterFloorDivExact(num0, p.area, t.inverseArea), x = rasterFloorDivExact(stepX, p.area, t.inverseArea),
                   y = rasterFloorDivExact(stepY, p.area, t.inverseArea);
    if (o.r >= 0 && x.r >= 0 && y.r >= 0) {
      p.q0 = o.q, p.r0 = o.r, p.qx = x.q, p.rx = x.r, p.qy = y.q, p.ry = y.r;
      p.valid = 1u;
      return p;
    }
  }
#endif
  int64_t d0 = int64_t(t.d0), d1 = int64_t(t.d1), d2 = int64_t(t.d2);
  int64_t num0 = int64_t(e0) * d0 + int64_t(e1) * d1 + int64_t(e2) * d2;
  int64_t stepX = int64_t(ax0) * d0 + int64_t(ax1) * d1 + int64_t(ax2) * d2;
  int64_t stepY = int64_t(by0) * d0 + int64_t(by1) * d1 + int64_t(by2) * d2;
  RasterFloorDiv o = rasterFloorDiv(num0, p.area, t.inverseArea), x = rasterFloorDiv(stepX, p.area, t.inverseArea),
                 y = rasterFloorDiv(stepY, p.area, t.inverseArea);
  p.q0 = o.q, p.r0 = o.r, p.qx = x.q, p.rx = x.r, p.qy = y.q, p.ry = y.r;
  p.valid = 1u;
  return p;
}
// rasterNarrowDepth at box pixel (dx, dy) (dx + dy < 64) of a valid plane: the same level, exactly. The float
// estimate of remainder / area (< 64) is within one either way, and the correction makes it exact.
ARM_FN int64_t rasterPlaneDepth(RasterPlane p, int dx, int dy) {
  int r = p.r0 + dx * p.rx + dy * p.ry;
  int k = int(float(r) * p.inverseArea);
  r -= k * p.area;
  if (r < 0) k -= 1, r += p.area;
  else if (r >= p.area) k += 1, r -= p.area;
  int q = int(p.q0 + uint(dx) * p.qx + uint(dy) * p.qy + uint(k));  // floor(num / area)
  return int64_t(q < 0 && r != 0 ? q + 1 : q);                       // truncated, as rasterQuotient
}

// The z-buffer token of a fragment that passed the depth-prior test: the call's tag and the 2^18 depth level in the
// high word (rasterTokenWord) and face + 1 in the low word, so among one call's tokens the smallest is the nearest
// fragment and, at equal depth, the lower face — the original's order (it packs the same pair as level·(2^31−1) +
// face + 1) — and every earlier call's token is larger. Read as two 32-bit words, the same layout serves devices
// without 64-bit atomics (two passes: min high word, then min face at that word).
ARM_FN uint rasterTokenWord(int64_t level, uint tag) { return (tag << RASTER_TAG_SHIFT) | uint(rasterTokenLevel(level)); }
ARM_FN uint64_t rasterToken(int64_t level, uint face, uint tag) {
  return (uint64_t(rasterTokenWord(level, tag)) << 32) | uint64_t(face + 1u);
}

// Pixels per chunk of a big triangle's box: RASTER_CHUNK_PIXELS, more for huge boxes so no triangle needs more
// than RASTER_MAX_CHUNKS queue entries. A pure function of the box, so producer and consumer agree.
ARM_FN uint rasterChunkPixels(uint boxPixels) {
  uint perChunk = (boxPixels + uint(RASTER_MAX_CHUNKS) - 1u) / uint(RASTER_MAX_CHUNKS);
  return perChunk > uint(RASTER_CHUNK_PIXELS) ? perChunk : uint(RASTER_CHUNK_PIXELS);
}
#endif
