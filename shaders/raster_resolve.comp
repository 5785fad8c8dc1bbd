#version 450
// Pass 2: per pixel, the winning face (index + 1, 0 = background) and its perspective-correct barycentrics at
// the pixel centre.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "shared/raster_io.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(std430, binding = 2) readonly buffer ZBuffer { uint64_t zbuffer[]; };
layout(std430, binding = 3) writeonly buffer FaceIds { int findices[]; };
layout(std430, binding = 4) writeonly buffer Bary { float barycentrics[]; };
layout(push_constant) uniform Push { RasterPush p; };

void main() {
  uint total = p.width * p.height, stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint pix = gl_GlobalInvocationID.x; pix < total; pix += stride) {
    uint64_t token = zbuffer[pix];
    if (token == ~uint64_t(0)) {
      findices[pix] = 0;
      barycentrics[pix * 3] = 0, barycentrics[pix * 3 + 1] = 0, barycentrics[pix * 3 + 2] = 0;
      continue;
    }
    int face1 = int(token % RASTER_FACE_MULT);
    findices[pix] = face1;
    vec2 sc[3];
    vec3 iw;
    for (int k = 0; k < 3; ++k) {
      vec4 v = positions[faces[(face1 - 1) * 3 + k]];
      sc[k] = vec2(rasterScreen(v.x / v.w, p.width), rasterScreen(v.y / v.w, p.height));
      iw[k] = 1.0 / v.w;
    }
    vec2 c = vec2(float(pix % p.width) + 0.5, float(pix / p.width) + 0.5);
    float area = (sc[1].x - sc[0].x) * (sc[2].y - sc[0].y) - (sc[1].y - sc[0].y) * (sc[2].x - sc[0].x);
    float b0 = ((sc[2].x - sc[1].x) * (c.y - sc[1].y) - (sc[2].y - sc[1].y) * (c.x - sc[1].x)) / area;
    float b1 = ((sc[0].x - sc[2].x) * (c.y - sc[2].y) - (sc[0].y - sc[2].y) * (c.x - sc[2].x)) / area;
    vec3 b = vec3(b0, b1, 1.0 - b0 - b1) * iw;
    b /= (b.x + b.y + b.z);
    barycentrics[pix * 3] = b.x, barycentrics[pix * 3 + 1] = b.y, barycentrics[pix * 3 + 2] = b.z;
  }
}
