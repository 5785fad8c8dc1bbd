// Triangle rasteriser (visibility buffer): the layouts shared by the CPU reference, CUDA and GLSL (bindings, push
// constants, queue and token constants). The arithmetic that makes every backend compute bit-identical coverage,
// depth tokens and face indices is in raster_arith.h, raster_depth.h, raster_setup.h, raster_cover.h and
// raster_weights.h (barycentrics).
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
