// Pass 1: one invocation per triangle walks its pixel box and keeps the nearest fragment per pixel with a 64-bit
// atomicMin on (depth level, face + 1): ties go to the lower face on every backend, whatever the order.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_io.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(std430, binding = 2) readonly buffer Prior { float prior[]; };
layout(std430, binding = 3) buffer ZBuffer { uint64_t zbuffer[]; };
layout(push_constant) uniform Push { RasterPush p; };

void rasterTriangle(uint f) {
  int X[3], Y[3];
  int64_t D[3];
  for (int k = 0; k < 3; ++k) {
    int vi = faces[f * 3 + k];
    if (vi < 0 || uint(vi) >= p.vertexCount) return;  // validated on the host; never read out of bounds
    vec4 v = positions[vi];
    if (!(v.w > 0.0)) return;  // w <= 0 or NaN: rejected
    float nx = rasterDivide(v.x, v.w), ny = rasterDivide(v.y, v.w), nz = rasterDivide(v.z, v.w);
    X[k] = rasterFixed(rasterScreen(nx, p.width));
    Y[k] = rasterFixed(rasterScreen(ny, p.height));
    D[k] = rasterDepthLevel(rasterDepth(nz));
  }
  int64_t area = rasterEdge(X[0], Y[0], X[1], Y[1], X[2], Y[2]);
  if (area == 0) return;
  int s = area > 0 ? 1 : -1;
  int minX = max(0, (min(X[0], min(X[1], X[2])) - 8) / 16 - 1), maxX = min(int(p.width) - 1, (max(X[0], max(X[1], X[2])) - 8) / 16 + 1);
  int minY = max(0, (min(Y[0], min(Y[1], Y[2])) - 8) / 16 - 1), maxY = min(int(p.height) - 1, (max(Y[0], max(Y[1], Y[2])) - 8) / 16 + 1);
  for (int py = minY; py <= maxY; ++py)
    for (int px = minX; px <= maxX; ++px) {
      int cx = rasterCentre(px), cy = rasterCentre(py);
      int64_t w0 = s * rasterEdge(X[1], Y[1], X[2], Y[2], cx, cy);
      int64_t w1 = s * rasterEdge(X[2], Y[2], X[0], Y[0], cx, cy);
      int64_t w2 = s * rasterEdge(X[0], Y[0], X[1], Y[1], cx, cy);
      if (w0 < 0 || w1 < 0 || w2 < 0) continue;
      if ((w0 == 0 && !rasterOwnsEdge(s * (X[2] - X[1]), s * (Y[2] - Y[1]))) ||
          (w1 == 0 && !rasterOwnsEdge(s * (X[0] - X[2]), s * (Y[0] - Y[2]))) ||
          (w2 == 0 && !rasterOwnsEdge(s * (X[1] - X[0]), s * (Y[1] - Y[0]))))
        continue;
      int64_t level = (w0 * D[0] + w1 * D[1] + w2 * D[2]) / (s * area);
      uint pix = uint(py) * p.width + uint(px);
      int64_t threshold = 0;
      if (p.useDepthPrior != 0) threshold = rasterDepthLevel(rasterDepth(prior[pix]) + p.occlusionTruncation);
      if (level < threshold) continue;
      uint64_t token = uint64_t(rasterTokenLevel(level)) * RASTER_FACE_MULT + uint64_t(f + 1);
      atomicMin(zbuffer[pix], token);
    }
}

void main() {
  // Grid-stride: the host caps the group count, so millions of triangles fit the dispatch limits.
  uint stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint f = gl_GlobalInvocationID.x; f < p.triangleCount; f += stride) rasterTriangle(f);
}
