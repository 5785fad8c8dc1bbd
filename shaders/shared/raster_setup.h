// Triangle rasteriser: vertices on the 1/16-pixel grid, exact edge functions with the top-left rule, and the
// per-triangle setup (fixed-point corners, depth levels, orientation, pixel box).
#ifndef ARMATURE_RASTER_SETUP_H
#define ARMATURE_RASTER_SETUP_H
#include "raster_depth.h"

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

#endif
