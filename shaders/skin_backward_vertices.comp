#version 450
// Skinning backward (1): dL/dv_posed = Tᵀ dL/dv per (item, vertex), T's 3×3 part, blended as the forward's
// skin_vertices does.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_VERTEX_GROUP) in;
layout(std430, binding = SKIN_BACKWARD_VERTICES_BINDING_GRAD_V) readonly buffer GradV { float gradV[]; };
layout(std430, binding = SKIN_BACKWARD_VERTICES_BINDING_TRANSFORMS) readonly buffer Transforms { float transforms[]; };
layout(std430, binding = SKIN_BACKWARD_VERTICES_BINDING_WEIGHT_START) readonly buffer WeightStart { uint weightStart[]; };
layout(std430, binding = SKIN_BACKWARD_VERTICES_BINDING_WEIGHT_JOINT) readonly buffer WeightJoint { uint weightJoint[]; };
layout(std430, binding = SKIN_BACKWARD_VERTICES_BINDING_WEIGHT_VALUE) readonly buffer WeightValue { float weightValue[]; };
layout(std430, binding = SKIN_BACKWARD_VERTICES_BINDING_GRAD_V_POSED) writeonly buffer GradVPosed { float gradVPosed[]; };
layout(push_constant) uniform Push { SkinningPush p; };

#include "skin_blend_transform.glsl"

void main() {
  uint total = p.batch * p.vertexCount;
  uint stride = gl_NumWorkGroups.x * SKIN_VERTEX_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint b = i / p.vertexCount, v = i % p.vertexCount;
    float T[12];
    blendTransform(b, v, T);
    vec3 g = vec3(gradV[i * 3], gradV[i * 3 + 1], gradV[i * 3 + 2]);
    for (uint c = 0; c < 3; ++c) gradVPosed[i * 3 + c] = T[c] * g.x + T[4 + c] * g.y + T[8 + c] * g.z;
  }
}
