#version 450
// gradBary[pixel, k] = Σ_c attr[face[k], c] · gradOut[pixel, c] (one writer per value: deterministic);
// gradAttr[face[k], c] += bary[pixel, k] · gradOut[pixel, c] (a scatter: float atomics).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_atomic_float : require
#include "shared/interpolate_io.h"
layout(local_size_x = INTERP_GROUP) in;
layout(std430, binding = INTERP_BINDING_ATTR) readonly buffer Attr { float attr[]; };
layout(std430, binding = INTERP_BINDING_FINDICES) readonly buffer Ids { int findices[]; };
layout(std430, binding = INTERP_BINDING_BARY) readonly buffer Bary { float bary[]; };
layout(std430, binding = INTERP_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = INTERP_BINDING_GRAD_OUT) readonly buffer GradOut { float gradOut[]; };
layout(std430, binding = INTERP_BINDING_GRAD_ATTR) buffer GradAttr { float gradAttr[]; };
layout(std430, binding = INTERP_BINDING_GRAD_BARY) writeonly buffer GradBary { float gradBary[]; };
layout(push_constant) uniform Push { InterpolatePush p; };

void main() {
  uint stride = gl_NumWorkGroups.x * INTERP_GROUP;
  for (uint pix = gl_GlobalInvocationID.x; pix < p.pixels; pix += stride) {
    int id = findices[pix];
    uint base = p.imagePixels != 0u ? pix / p.imagePixels * p.vertexCount * p.channels : 0u;
    for (uint k = 0; k < 3; ++k) {
      float gb = 0.0;
      if (id > 0 && uint(id) <= p.faceCount) {
        int vi = faces[(uint(id) - 1) * 3 + k];
        if (vi >= 0 && uint(vi) < p.vertexCount)
          for (uint c = 0; c < p.channels; ++c) {
            float g = gradOut[pix * p.channels + c];
            gb += attr[base + uint(vi) * p.channels + c] * g;
            atomicAdd(gradAttr[base + uint(vi) * p.channels + c], bary[pix * 3 + k] * g);
          }
      }
      gradBary[pix * 3 + k] = gb;
    }
  }
}
