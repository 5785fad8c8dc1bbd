#version 450
#extension GL_GOOGLE_include_directive : require
#include "shared/pattern_io.h"
layout(local_size_x = PATTERN_GROUP) in;
layout(std430, binding = PATTERN_CHECK_BINDING_DATA) readonly buffer Data { uint words[]; };
layout(std430, binding = PATTERN_CHECK_BINDING_MISMATCHES) buffer Mismatches { uint mismatches; };
layout(push_constant) uniform Push { PatternPush p; };
void main() {
  uint wordCount = (p.byteCount + 3) / 4, stride = gl_NumWorkGroups.x * PATTERN_GROUP, bad = 0;
  for (uint w = gl_GlobalInvocationID.x; w < wordCount; w += stride) {
    uint valid = min(4u, p.byteCount - 4 * w);
    uint mask = valid == 4 ? 0xffffffffu : (1u << (8 * valid)) - 1u;
    if (((words[w] ^ patternWord(w, p.seed)) & mask) != 0) bad++;
  }
  if (bad != 0) atomicAdd(mismatches, bad);
}
