#version 450
// Linear blend skinning: one invocation per (item, vertex), sparse weights (CSR), plus translation.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_VERTEX_GROUP) in;
layout(std430, binding = SKIN_VERTICES_BINDING_V_POSED) readonly buffer VPosed { float vPosed[]; };
layout(std430, binding = SKIN_VERTICES_BINDING_TRANSFORMS) readonly buffer Transforms { float transforms[]; };
layout(std430, binding = SKIN_VERTICES_BINDING_WEIGHT_START) readonly buffer WeightStart { uint weightStart[]; };
layout(std430, binding = SKIN_VERTICES_BINDING_WEIGHT_JOINT) readonly buffer WeightJoint { uint weightJoint[]; };
layout(std430, binding = SKIN_VERTICES_BINDING_WEIGHT_VALUE) readonly buffer WeightValue { float weightValue[]; };
layout(std430, binding = SKIN_VERTICES_BINDING_TRANSL) readonly buffer Transl { float transl[]; };
layout(std430, binding = SKIN_VERTICES_BINDING_VERTICES) writeonly buffer Vertices { float vertices[]; };
layout(push_constant) uniform Push { SkinningPush p; };

#include "skin_blend_transform.glsl"

void main() {
  uint total = p.batch * p.vertexCount;
  uint stride = gl_NumWorkGroups.x * SKIN_VERTEX_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint b = i / p.vertexCount, v = i % p.vertexCount;
    float T[12];
    blendTransform(b, v, T);
    vec3 x = vec3(vPosed[i * 3], vPosed[i * 3 + 1], vPosed[i * 3 + 2]);
    for (uint r = 0; r < 3; ++r)
      vertices[i * 3 + r] = T[r * 4] * x.x + T[r * 4 + 1] * x.y + T[r * 4 + 2] * x.z + T[r * 4 + 3] + transl[b * 3 + r];
  }
}
