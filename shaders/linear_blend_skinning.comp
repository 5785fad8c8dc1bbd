#version 450
// Linear blend skinning (shared/lbs_io.h): a posed vertex is the weighted sum of its joints' skinning matrices
// applied to its rest position, influences summed in order.
#extension GL_GOOGLE_include_directive : require
#include "shared/lbs_io.h"

layout(local_size_x = LBS_WORKGROUP_SIZE) in;
layout(std430, binding = LBS_BINDING_REST) readonly buffer Rest { float rest[]; };
layout(std430, binding = LBS_BINDING_JOINTS) readonly buffer Joints { uint joints[]; };
layout(std430, binding = LBS_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = LBS_BINDING_SKINNING) readonly buffer Skinning { float skinning[]; };
layout(std430, binding = LBS_BINDING_POSITIONS) writeonly buffer Positions { float positions[]; };
layout(push_constant) uniform Push { LbsPush p; };

void main() {
  const uint total = p.batch * p.vertices, stride = gl_NumWorkGroups.x * LBS_WORKGROUP_SIZE;
  for (uint item = gl_GlobalInvocationID.x; item < total; item += stride) {
    const uint b = item / p.vertices, v = item % p.vertices;
    const float x = rest[v * 3u], y = rest[v * 3u + 1u], z = rest[v * 3u + 2u];
    float out0 = 0.0, out1 = 0.0, out2 = 0.0;
    for (uint k = 0u; k < p.influences; ++k) {
      const float w = weights[v * p.influences + k];
      const uint m = (b * p.joints + joints[v * p.influences + k]) * 12u;
      out0 += w * (skinning[m] * x + skinning[m + 1u] * y + skinning[m + 2u] * z + skinning[m + 3u]);
      out1 += w * (skinning[m + 4u] * x + skinning[m + 5u] * y + skinning[m + 6u] * z + skinning[m + 7u]);
      out2 += w * (skinning[m + 8u] * x + skinning[m + 9u] * y + skinning[m + 10u] * z + skinning[m + 11u]);
    }
    positions[item * 3u] = out0, positions[item * 3u + 1u] = out1, positions[item * 3u + 2u] = out2;
  }
}
