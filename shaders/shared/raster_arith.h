// Triangle rasteriser: the arithmetic that every backend must round identically — doubles where the device has
// them, and an exact integer path (64- and 128-bit integers) that gives the same bits without them.
#ifndef ARMATURE_RASTER_ARITH_H
#define ARMATURE_RASTER_ARITH_H
#include "raster_io.h"

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

// Without doubles, rasterDivide is the integer form.
#if !RASTER_EXACT
ARM_FN float rasterDivide(float a, float b) { return rasterDivideRounded(a, b); }
#endif

#endif
