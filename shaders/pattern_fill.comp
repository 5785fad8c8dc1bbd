#version 450
#extension GL_GOOGLE_include_directive : require
#include "shared/pattern_io.h"
layout(local_size_x = PATTERN_GROUP) in;
layout(std430, binding = PATTERN_FILL_BINDING_DATA) buffer Data { uint words[]; };
layout(std430, binding = PATTERN_FILL_BINDING_UNUSED) buffer Unused { uint unused[]; };
layout(push_constant) uniform Push { PatternPush p; };
void main() {
  uint wordCount = (p.byteCount + 3) / 4, stride = gl_NumWorkGroups.x * PATTERN_GROUP;
  for (uint w = gl_GlobalInvocationID.x; w < wordCount; w += stride) {
    uint v = patternWord(w, p.seed);
    uint valid = p.byteCount - 4 * w;  // the last word may be partial: keep the bytes past the end
    if (valid < 4) {
      uint mask = (1u << (8 * valid)) - 1u;
      v = (words[w] & ~mask) | (v & mask);
    }
    words[w] = v;
  }
}
