// Triangle rasteriser: which pixels a set-up triangle covers and at what depth level — the general test, the
// small-box walk with its incremental depth plane, and the big-triangle queue's chunking.
#ifndef ARMATURE_RASTER_COVER_H
#define ARMATURE_RASTER_COVER_H
#include "raster_setup.h"

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

// Pixels per chunk of a big triangle's box: RASTER_CHUNK_PIXELS, more for huge boxes so no triangle needs more
// than RASTER_MAX_CHUNKS queue entries. A pure function of the box, so producer and consumer agree.
ARM_FN uint rasterChunkPixels(uint boxPixels) {
  uint perChunk = (boxPixels + uint(RASTER_MAX_CHUNKS) - 1u) / uint(RASTER_MAX_CHUNKS);
  return perChunk > uint(RASTER_CHUNK_PIXELS) ? perChunk : uint(RASTER_CHUNK_PIXELS);
}

#endif
