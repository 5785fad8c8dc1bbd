// The rasteriser's backward: at each covered pixel, dL/dbarycentrics through x, y and w of its face's three corners
// into dL/dpositions (rasterPerspectiveWeightsBackward; float atomics into a buffer the host cleared).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_float : require
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_io.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(std430, binding = 2) readonly buffer FaceIds { int findices[]; };
layout(std430, binding = 3) readonly buffer GradBary { float gradBary[]; };
layout(std430, binding = 4) buffer GradPositions { float gradPositions[]; };
layout(push_constant) uniform Push { RasterPush p; };

void main() {
  uint imagePixels = p.width * p.height, total = imagePixels * p.images, stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint pix = gl_GlobalInvocationID.x; pix < total; pix += stride) {
    int id = findices[pix];
    if (id <= 0 || uint(id) > p.triangleCount) continue;  // background, or an id outside F: no gradient
    uint image = pix / imagePixels, inImage = pix - image * imagePixels;
    uint base = p.instanced != 0u ? image * p.vertexCount : 0u;
    uint corner[3];
    bool inside = true;
    for (uint k = 0u; k < 3u; ++k) {
      int vi = faces[(uint(id) - 1u) * 3u + k];
      inside = inside && vi >= 0 && uint(vi) < p.vertexCount;
      corner[k] = base + uint(max(vi, 0));
    }
    if (!inside) continue;
    vec4 a = positions[corner[0]], b = positions[corner[1]], c = positions[corner[2]];
    RasterCornerGrads r = rasterPerspectiveWeightsBackward(
        RasterReal(a.x), RasterReal(a.y), RasterReal(a.w), RasterReal(b.x), RasterReal(b.y), RasterReal(b.w),
        RasterReal(c.x), RasterReal(c.y), RasterReal(c.w), p.width, p.height,
        RasterReal(inImage % p.width) + RasterReal(0.5), RasterReal(inImage / p.width) + RasterReal(0.5),
        RasterReal(gradBary[pix * 3u]), RasterReal(gradBary[pix * 3u + 1u]), RasterReal(gradBary[pix * 3u + 2u]));
    atomicAdd(gradPositions[corner[0] * 4u], float(r.x0));
    atomicAdd(gradPositions[corner[0] * 4u + 1u], float(r.y0));
    atomicAdd(gradPositions[corner[0] * 4u + 3u], float(r.w0));
    atomicAdd(gradPositions[corner[1] * 4u], float(r.x1));
    atomicAdd(gradPositions[corner[1] * 4u + 1u], float(r.y1));
    atomicAdd(gradPositions[corner[1] * 4u + 3u], float(r.w1));
    atomicAdd(gradPositions[corner[2] * 4u], float(r.x2));
    atomicAdd(gradPositions[corner[2] * 4u + 1u], float(r.y2));
    atomicAdd(gradPositions[corner[2] * 4u + 3u], float(r.w2));
  }
}
