// Triangle rasteriser (visibility buffer): layouts and the per-pixel arithmetic shared by the CPU reference,
// CUDA and GLSL, so every backend computes bit-identical coverage, depth tokens and face indices.
//
// Semantics follow Hunyuan3D-2's custom_rasterizer (viewport, depth packing, tie-breaking, depth prior), with two
// deliberate differences, both about robustness:
//  * Coverage is decided on a 1/16-pixel fixed-point grid with exact integer edge functions and a top-left rule,
//    so a pixel centre on an edge shared by two triangles is covered exactly once (the original's inclusive float
//    test covers it twice, or neither when rounding disagrees).
//  * Triangles with a vertex at w <= 0 (crossing or behind the eye plane) are rejected; the original has no
//    clipping and rasterises garbage for them.
#ifndef ARMATURE_RASTER_IO_H
#define ARMATURE_RASTER_IO_H
#include "common_io.h"

#define RASTER_SUBPIXEL_BITS 4        // 1/16 pixel: exact products fit int64 for images up to 8192 pixels wide
#define RASTER_GROUP 64
// Binning by size: one invocation walks a triangle whose pixel box has at most RASTER_SMALL_PIXELS pixels; larger
// ones go to a queue of chunks of at least RASTER_CHUNK_PIXELS box pixels, one workgroup per chunk, so a big
// triangle is spread over many invocations instead of serialising on one (the original's slow case).
#define RASTER_SMALL_PIXELS 64
#define RASTER_CHUNK_PIXELS 512
#define RASTER_MAX_CHUNKS 4096        // per triangle: chunks grow beyond 512 pixels for boxes over 2M pixels
#define RASTER_QUEUE_HEADER 4         // uints before the queue's entries: [0] = entries written - 1 (starts at ~0)
#define RASTER_QUEUE_ENTRY 3          // uints per entry: face, image, chunk
#define RASTER_CHUNK_GROUPS 4096      // stage 1's workgroups: enough to drain any queue; idle ones exit at once

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
  uint pad0;
  uint queueCapacity;        // entries the big-triangle queue holds
  uint stage;                // 0: one invocation per triangle, big ones queued; 1: one workgroup per queued chunk
};

#ifdef __cplusplus
static_assert(sizeof(RasterPush) == 48);
#endif
#endif

#ifndef ARMATURE_RASTER_FN_H
#define ARMATURE_RASTER_FN_H
// --- per-vertex and per-pixel arithmetic, one definition for every backend ---------------------------------
// The perspective divide, rounded exactly as IEEE float division: in double, then to float (GLSL's own float
// division may be off by an ulp, which would move a vertex across a 1/16-pixel step on one backend only).
#if defined(__cplusplus) || defined(__CUDACC__) || (defined(RASTER_FP64) && RASTER_FP64)
#define RASTER_EXACT 1
#define RasterReal double   // barycentrics are resolved in double (GLSL has no typedef)
ARM_FN float rasterDivide(float a, float b) { return float(double(a) / double(b)); }
#else
#define RASTER_EXACT 0
#define RasterReal float    // devices without shaderFloat64: float division and barycentrics
ARM_FN float rasterDivide(float a, float b) {
  ARM_PRECISE float q = a / b;
  return q;
}
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

// The original's viewport: NDC -1 maps to the centre of pixel 0, +1 to the centre of pixel size-1; no y flip.
ARM_FN float rasterScreen(float ndc, uint size) {
  ARM_PRECISE float t = ndc * 0.5f + 0.5f;
  ARM_PRECISE float s = t * float(size - 1u) + 0.5f;
  return s;
}
// A screen coordinate (pixels) on the 1/16-pixel grid.
ARM_FN int rasterFixed(float pixels) {
  ARM_PRECISE float g = pixels * 16.0f + 0.5f;
  return int(floor(g));
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
// The original's depth mapping, quantised to its 2^18 levels.
ARM_FN float rasterDepth(float zOverW) {
  ARM_PRECISE float d = zOverW * 0.49999f + 0.5f;
  return d;
}
// Depth in fixed point with 2^26 levels: fine enough that the prior's truncation (1e-6) separates layers, coarse
// enough that edge function (< 2^35) times depth (< 2^27) sums stay inside int64. The token keeps the original's
// 2^18 levels (rasterTokenLevel).
ARM_FN int64_t rasterDepthLevel(float depth) { return int64_t(depth * 67108864.0f); }
ARM_FN int64_t rasterTokenLevel(int64_t depthLevel) {
  // Far fragments share the last level; ~0 means empty. (Not a hex literal: GLSL would read 0xfffffffe as -2.)
  int64_t level = depthLevel >> 8, cap = (int64_t(1) << 32) - int64_t(2);
  return level < cap ? level : cap;
}
// A triangle on the grid, set up once: fixed-point vertices, depth levels, orientation and pixel box.
ARM_SHARED_STRUCT(RasterTri) {
  int x0, y0, x1, y1, x2, y2;
  int64_t d0, d1, d2;
  int64_t area;  // twice the signed area, times sign: > 0
  int sign;      // +1 or -1: the triangle's winding on screen
  int minX, maxX, minY, maxY;
  uint valid;    // 0: a vertex has w <= 0 (or NaN), or the triangle is degenerate
  uint narrow;   // 1: vertex extent under 2^14 grid steps (1024 pixels): edge functions are exact in 32 bits
};

ARM_FN RasterTri rasterSetup(float ax, float ay, float az, float aw, float bx, float by, float bz, float bw, float cx,
                             float cy, float cz, float cw, uint width, uint height) {
  RasterTri t;
  t.valid = 0u;
  t.x0 = t.y0 = t.x1 = t.y1 = t.x2 = t.y2 = 0;
  t.d0 = t.d1 = t.d2 = t.area = int64_t(0);
  t.sign = 1;
  t.narrow = 0u;
  t.minX = t.minY = 0;
  t.maxX = t.maxY = -1;
  if (!(aw > 0.0f) || !(bw > 0.0f) || !(cw > 0.0f)) return t;  // w <= 0 or NaN: rejected
  t.x0 = rasterFixed(rasterScreen(rasterDivide(ax, aw), width));
  t.y0 = rasterFixed(rasterScreen(rasterDivide(ay, aw), height));
  t.x1 = rasterFixed(rasterScreen(rasterDivide(bx, bw), width));
  t.y1 = rasterFixed(rasterScreen(rasterDivide(by, bw), height));
  t.x2 = rasterFixed(rasterScreen(rasterDivide(cx, cw), width));
  t.y2 = rasterFixed(rasterScreen(rasterDivide(cy, cw), height));
  t.d0 = rasterDepthLevel(rasterDepth(rasterDivide(az, aw)));
  t.d1 = rasterDepthLevel(rasterDepth(rasterDivide(bz, bw)));
  t.d2 = rasterDepthLevel(rasterDepth(rasterDivide(cz, cw)));
  int64_t area = rasterEdge(t.x0, t.y0, t.x1, t.y1, t.x2, t.y2);
  if (area == int64_t(0)) return t;
  t.sign = area > int64_t(0) ? 1 : -1;
  t.area = area * int64_t(t.sign);
  int lo = t.x0 < t.x1 ? (t.x0 < t.x2 ? t.x0 : t.x2) : (t.x1 < t.x2 ? t.x1 : t.x2);
  int hi = t.x0 > t.x1 ? (t.x0 > t.x2 ? t.x0 : t.x2) : (t.x1 > t.x2 ? t.x1 : t.x2);
  bool narrowX = hi - lo < 16384;
  t.minX = (lo - 8) / 16 - 1 > 0 ? (lo - 8) / 16 - 1 : 0;
  t.maxX = (hi - 8) / 16 + 1 < int(width) - 1 ? (hi - 8) / 16 + 1 : int(width) - 1;
  lo = t.y0 < t.y1 ? (t.y0 < t.y2 ? t.y0 : t.y2) : (t.y1 < t.y2 ? t.y1 : t.y2);
  hi = t.y0 > t.y1 ? (t.y0 > t.y2 ? t.y0 : t.y2) : (t.y1 > t.y2 ? t.y1 : t.y2);
  t.minY = (lo - 8) / 16 - 1 > 0 ? (lo - 8) / 16 - 1 : 0;
  t.maxY = (hi - 8) / 16 + 1 < int(height) - 1 ? (hi - 8) / 16 + 1 : int(height) - 1;
  // Pixels lie within 2 pixels of the vertex box, so |products| < 2^28.1 and edge values < 2^29.1.
  t.narrow = narrowX && hi - lo < 16384 ? 1u : 0u;
  t.valid = t.minX <= t.maxX && t.minY <= t.maxY ? 1u : 0u;  // off screen: an empty box (whose size would wrap)
  return t;
}

#define RASTER_MISS (-(int64_t(1) << 62))  // rasterCover's "not covered"

// Twice the signed area of (a, b, p) in 32-bit arithmetic: equal to rasterEdge when the triangle is narrow.
ARM_FN int rasterEdge32(int ax, int ay, int bx, int by, int px, int py) { return (bx - ax) * (py - ay) - (by - ay) * (px - ax); }

// The depth level (2^26 scale) of the fragment at pixel (px, py), or RASTER_MISS when the fill rule excludes it.
ARM_FN int64_t rasterCover(RasterTri t, int px, int py) {
  int cx = rasterCentre(px), cy = rasterCentre(py), s = t.sign;
  int64_t w0, w1, w2;
  if (t.narrow != 0u) {
    w0 = int64_t(s * rasterEdge32(t.x1, t.y1, t.x2, t.y2, cx, cy));
    w1 = int64_t(s * rasterEdge32(t.x2, t.y2, t.x0, t.y0, cx, cy));
    w2 = int64_t(s * rasterEdge32(t.x0, t.y0, t.x1, t.y1, cx, cy));
  } else {
    w0 = int64_t(s) * rasterEdge(t.x1, t.y1, t.x2, t.y2, cx, cy);
    w1 = int64_t(s) * rasterEdge(t.x2, t.y2, t.x0, t.y0, cx, cy);
    w2 = int64_t(s) * rasterEdge(t.x0, t.y0, t.x1, t.y1, cx, cy);
  }
  if (w0 < int64_t(0) || w1 < int64_t(0) || w2 < int64_t(0)) return RASTER_MISS;
  if ((w0 == int64_t(0) && !rasterOwnsEdge(s * (t.x2 - t.x1), s * (t.y2 - t.y1))) ||
      (w1 == int64_t(0) && !rasterOwnsEdge(s * (t.x0 - t.x2), s * (t.y0 - t.y2))) ||
      (w2 == int64_t(0) && !rasterOwnsEdge(s * (t.x1 - t.x0), s * (t.y1 - t.y0))))
    return RASTER_MISS;
  return (w0 * t.d0 + w1 * t.d1 + w2 * t.d2) / t.area;
}

// The z-buffer token of a fragment that passed the depth-prior test: the 2^18 depth level in the high word and
// face + 1 in the low word, so the smallest token is the nearest fragment and, at equal depth, the lower face —
// the original's order (it packs the same pair as level·(2^31−1) + face + 1). Read as two 32-bit words, the same
// layout serves devices without 64-bit atomics (two passes: min level, then min face at that level).
ARM_FN uint64_t rasterToken(int64_t level, uint face) {
  return (uint64_t(rasterTokenLevel(level)) << 32) | uint64_t(face + 1u);
}

// Pixels per chunk of a big triangle's box: RASTER_CHUNK_PIXELS, more for huge boxes so no triangle needs more
// than RASTER_MAX_CHUNKS queue entries. A pure function of the box, so producer and consumer agree.
ARM_FN uint rasterChunkPixels(uint boxPixels) {
  uint perChunk = (boxPixels + uint(RASTER_MAX_CHUNKS) - 1u) / uint(RASTER_MAX_CHUNKS);
  return perChunk > uint(RASTER_CHUNK_PIXELS) ? perChunk : uint(RASTER_CHUNK_PIXELS);
}
#endif
