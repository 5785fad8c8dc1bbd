// Triangle rasteriser: depth in fixed-point levels, the depth prior's threshold and the z-buffer's tokens.
#ifndef ARMATURE_RASTER_DEPTH_H
#define ARMATURE_RASTER_DEPTH_H
#include "raster_arith.h"

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

// The z-buffer token of a fragment that passed the depth-prior test: the call's tag and the 2^18 depth level in the
// high word (rasterTokenWord) and face + 1 in the low word, so among one call's tokens the smallest is the nearest
// fragment and, at equal depth, the lower face — the original's order (it packs the same pair as level·(2^31−1) +
// face + 1) — and every earlier call's token is larger. Read as two 32-bit words, the same layout serves devices
// without 64-bit atomics (two passes: min high word, then min face at that word).
ARM_FN uint rasterTokenWord(int64_t level, uint tag) { return (tag << RASTER_TAG_SHIFT) | uint(rasterTokenLevel(level)); }
ARM_FN uint64_t rasterToken(int64_t level, uint face, uint tag) {
  return (uint64_t(rasterTokenWord(level, tag)) << 32) | uint64_t(face + 1u);
}

#endif
