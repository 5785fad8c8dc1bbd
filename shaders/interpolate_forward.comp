#version 450
// out[pixel, c] = Σ_k bary[pixel, k] · attr[face[k], c]; background (id 0) and invalid ids give 0.
#extension GL_GOOGLE_include_directive : require
#include "shared/interpolate_io.h"
layout(local_size_x = INTERP_GROUP) in;
layout(std430, binding = 0) readonly buffer Attr { float attr[]; };
layout(std430, binding = 1) readonly buffer Ids { int findices[]; };
layout(std430, binding = 2) readonly buffer Bary { float bary[]; };
layout(std430, binding = 3) readonly buffer Faces { int faces[]; };
layout(std430, binding = 4) writeonly buffer Out { float outValues[]; };
layout(push_constant) uniform Push { InterpolatePush p; };

void main() {
  uint total = p.pixels * p.channels, stride = gl_NumWorkGroups.x * INTERP_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint pix = i / p.channels, c = i % p.channels;
    int id = findices[pix];
    float v = 0.0;
    if (id > 0 && uint(id) <= p.faceCount)
      for (uint k = 0; k < 3; ++k) {
        int vi = faces[(uint(id) - 1) * 3 + k];
        if (vi >= 0 && uint(vi) < p.vertexCount) v += bary[pix * 3 + k] * attr[uint(vi) * p.channels + c];
      }
    outValues[i] = v;
  }
}
