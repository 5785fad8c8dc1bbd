// Pass 2: per pixel, the winning face (index + 1, 0 = background) and its perspective-correct barycentrics at
// the pixel centre.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_io.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(std430, binding = 2) readonly buffer ZBuffer { uint zwords[]; };  // per pixel: [face + 1, level]
layout(std430, binding = 3) writeonly buffer FaceIds { int findices[]; };
layout(std430, binding = 4) writeonly buffer Bary { float barycentrics[]; };
layout(push_constant) uniform Push { RasterPush p; };

void main() {
  uint imagePixels = p.width * p.height, total = imagePixels * p.images, stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint pix = gl_GlobalInvocationID.x; pix < total; pix += stride) {
    uint faceWord = zwords[pix * 2];
    if (faceWord == ~0u) {
      findices[pix] = 0;
      barycentrics[pix * 3] = 0, barycentrics[pix * 3 + 1] = 0, barycentrics[pix * 3 + 2] = 0;
      continue;
    }
    int face1 = int(faceWord);
    findices[pix] = face1;
    uint image = pix / imagePixels, inImage = pix - image * imagePixels;
    uint base = p.instanced != 0u ? image * p.vertexCount : 0u;
    RasterReal sx[3], sy[3], w[3];
    for (int k = 0; k < 3; ++k) {
      vec4 v = positions[base + uint(faces[(face1 - 1) * 3 + k])];
      sx[k] = rasterScreen(rasterDivide(v.x, v.w), p.width);
      sy[k] = rasterScreen(rasterDivide(v.y, v.w), p.height);
      w[k] = RasterReal(v.w);
    }
    RasterReal cx = RasterReal(inImage % p.width) + RasterReal(0.5), cy = RasterReal(inImage / p.width) + RasterReal(0.5);
    RasterWeights b = rasterPerspectiveWeights(sx[0], sy[0], sx[1], sy[1], sx[2], sy[2], w[0], w[1], w[2], cx, cy);
    barycentrics[pix * 3] = float(b.b0), barycentrics[pix * 3 + 1] = float(b.b1), barycentrics[pix * 3 + 2] = float(b.b2);
  }
}
