#version 450
// A composite scene's gather: each row of a part's output (a member's vertices or joints) into that member's slice
// of the buffer the renderer reads. An invocation per word, grid-stride; consecutive invocations read and write
// consecutive words, so both sides are coalesced.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"

layout(local_size_x = GATHER_ROWS_GROUP) in;
layout(std430, binding = GATHER_ROWS_BINDING_SOURCE) readonly buffer Source { uint source[]; };
layout(std430, binding = GATHER_ROWS_BINDING_TARGET) buffer Target { uint target[]; };
layout(push_constant) uniform Push { GatherRowsPush p; };

void main() {
  uint total = p.rows * p.rowWords;  // the host keeps the target under 2^32 words
  for (uint k = gl_GlobalInvocationID.x; k < total; k += gl_NumWorkGroups.x * GATHER_ROWS_GROUP) {
    uint row = k / p.rowWords;
    target[row * p.targetStride + p.targetOffset + (k - row * p.rowWords)] = source[k];
  }
}
