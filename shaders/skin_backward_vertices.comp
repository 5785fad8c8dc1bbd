#version 450
// Skinning backward (1): dL/dv_posed = Tᵀ dL/dv per (item, vertex), T = Σ_j w_vj A_j (3×3 part), as the forward's
// skin_vertices blends it.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_VERTEX_GROUP) in;
layout(std430, binding = 0) readonly buffer GradV { float gradV[]; };
layout(std430, binding = 1) readonly buffer Transforms { float transforms[]; };
layout(std430, binding = 2) readonly buffer WeightStart { uint weightStart[]; };
layout(std430, binding = 3) readonly buffer WeightJoint { uint weightJoint[]; };
layout(std430, binding = 4) readonly buffer WeightValue { float weightValue[]; };
layout(std430, binding = 5) writeonly buffer GradVPosed { float gradVPosed[]; };
layout(push_constant) uniform Push { SkinningPush p; };

void main() {
  uint total = p.batch * p.vertexCount;
  uint stride = gl_NumWorkGroups.x * SKIN_VERTEX_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint b = i / p.vertexCount, v = i % p.vertexCount;
    uint abase = b * p.jointCount * 12;
    float T[9] = float[9](0, 0, 0, 0, 0, 0, 0, 0, 0);
    for (uint e = weightStart[v]; e < weightStart[v + 1]; ++e) {
      float w = weightValue[e];
      uint a = abase + weightJoint[e] * 12;
      for (uint r = 0; r < 3; ++r)
        for (uint c = 0; c < 3; ++c) T[r * 3 + c] += w * transforms[a + r * 4 + c];
    }
    vec3 g = vec3(gradV[i * 3], gradV[i * 3 + 1], gradV[i * 3 + 2]);
    for (uint c = 0; c < 3; ++c) gradVPosed[i * 3 + c] = T[c] * g.x + T[3 + c] * g.y + T[6 + c] * g.z;
  }
}
