#version 450
// out[pixel, c] = Σ_k bary[pixel, k] · attr[face[k], c] (attr of the pixel's image where attributes are per image);
// background (id 0) and invalid ids give 0.
#extension GL_GOOGLE_include_directive : require
#include "shared/interpolate_io.h"
layout(local_size_x = INTERP_GROUP) in;
layout(std430, binding = INTERP_BINDING_ATTR) readonly buffer Attr { float attr[]; };
layout(std430, binding = INTERP_BINDING_FINDICES) readonly buffer Ids { int findices[]; };
layout(std430, binding = INTERP_BINDING_BARY) readonly buffer Bary { float bary[]; };
layout(std430, binding = INTERP_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = INTERP_BINDING_OUT) writeonly buffer Out { float outValues[]; };
layout(push_constant) uniform Push { InterpolatePush p; };

// One invocation per pixel: its face's corners and weights are read once for all channels.
void main() {
  uint stride = gl_NumWorkGroups.x * INTERP_GROUP, C = p.channels;
  for (uint pix = gl_GlobalInvocationID.x; pix < p.pixels; pix += stride) {
    int id = findices[pix];
    uint base = p.imagePixels != 0u ? pix / p.imagePixels * p.vertexCount * C : 0u;
    int corner[3] = int[3](-1, -1, -1);
    float weight[3] = float[3](0.0, 0.0, 0.0);
    if (id > 0 && uint(id) <= p.faceCount)
      for (uint k = 0; k < 3; ++k) {
        int vi = faces[(uint(id) - 1) * 3 + k];
        if (vi >= 0 && uint(vi) < p.vertexCount) corner[k] = vi, weight[k] = bary[pix * 3 + k];
      }
    for (uint c = 0; c < C; ++c) {
      float v = 0.0;
      for (uint k = 0; k < 3; ++k)
        if (corner[k] >= 0) v += weight[k] * attr[base + uint(corner[k]) * C + c];
      outValues[pix * C + c] = v;
    }
  }
}
