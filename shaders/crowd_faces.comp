#version 450
// The crowd's face indices for the compute rasteriser: copy b of one avatar's faces offset to its vertices.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"

layout(local_size_x = CROWD_FACES_GROUP) in;
layout(std430, binding = CROWD_FACES_BINDING_BASE) readonly buffer Base { int base[]; };
layout(std430, binding = CROWD_FACES_BINDING_CROWD) writeonly buffer Crowd { int crowd[]; };
layout(push_constant) uniform Push { CrowdFacesPush p; };

void main() {
  uint total = p.indices * p.copies;  // under 2^28: the host caps the crowd's faces at 1 GB
  for (uint k = gl_GlobalInvocationID.x; k < total; k += gl_NumWorkGroups.x * CROWD_FACES_GROUP) {
    uint copy = k / p.indices;
    crowd[k] = base[k - copy * p.indices] + int(copy * p.vertexCount);
  }
}
