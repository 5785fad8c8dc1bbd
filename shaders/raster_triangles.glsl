// One invocation per triangle walks its pixel box and keeps the nearest fragment per pixel: with 64-bit atomics one
// atomicMin on the (depth level, face + 1) token; without them two passes over 32-bit words (p.pass 1: min level,
// p.pass 2: min face among fragments at that level). Either way ties go to the lower face, whatever the order.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if RASTER_ATOMIC64
#extension GL_EXT_shader_atomic_int64 : require
#endif
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_io.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(std430, binding = 2) readonly buffer Prior { float prior[]; };
#if RASTER_ATOMIC64
layout(std430, binding = 3) buffer ZBuffer { uint64_t zbuffer[]; };
#else
layout(std430, binding = 3) buffer ZBuffer { uint zwords[]; };  // per pixel: [face + 1, level]
#endif
layout(push_constant) uniform Push { RasterPush p; };

void rasterTriangle(uint f) {
  int ia = faces[f * 3], ib = faces[f * 3 + 1], ic = faces[f * 3 + 2];
  if (ia < 0 || ib < 0 || ic < 0 || uint(max(ia, max(ib, ic))) >= p.vertexCount) return;  // never read out of bounds
  vec4 a = positions[ia], b = positions[ib], c = positions[ic];
  RasterTri t = rasterSetup(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w, p.width, p.height);
  if (t.valid == 0u) return;
  for (int py = t.minY; py <= t.maxY; ++py)
    for (int px = t.minX; px <= t.maxX; ++px) {
      int64_t level = rasterCover(t, px, py);
      if (level == RASTER_MISS) continue;
      uint pix = uint(py) * p.width + uint(px);
      if (p.useDepthPrior != 0u && level < rasterDepthLevel(rasterDepth(prior[pix]) + p.occlusionTruncation)) continue;
      if (level < int64_t(0)) continue;  // in front of the near plane (the original's depth threshold 0)
#if RASTER_ATOMIC64
      atomicMin(zbuffer[pix], rasterToken(level, f));
#else
      uint tokenLevel = uint(rasterTokenLevel(level));
      if (p.pass == 1u) atomicMin(zwords[pix * 2 + 1], tokenLevel);
      else if (zwords[pix * 2 + 1] == tokenLevel) atomicMin(zwords[pix * 2], f + 1u);
#endif
    }
}

void main() {
  // Grid-stride: the host caps the group count, so millions of triangles fit the dispatch limits.
  uint stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint f = gl_GlobalInvocationID.x; f < p.triangleCount; f += stride) rasterTriangle(f);
}
