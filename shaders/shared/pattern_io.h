// A byte pattern that CUDA and Vulkan write and check on each other's memory (interop tests and benchmark):
// byte i of a buffer with seed s. One definition for GLSL, C++ and CUDA.
#ifndef ARMATURE_PATTERN_IO_H
#define ARMATURE_PATTERN_IO_H
#include "common_io.h"

#define PATTERN_GROUP 256

ARM_FN uint patternByte(uint i, uint seed) { return ((i * 2654435761u) >> 11 ^ seed ^ (i >> 8)) & 0xffu; }
// The little-endian word holding bytes 4w..4w+3.
ARM_FN uint patternWord(uint w, uint seed) {
  return patternByte(4u * w, seed) | (patternByte(4u * w + 1u, seed) << 8) | (patternByte(4u * w + 2u, seed) << 16) |
         (patternByte(4u * w + 3u, seed) << 24);
}

ARM_SHARED_STRUCT(PatternPush) {
  uint byteCount;  // bytes of the pattern (the buffer holds at least ceil(byteCount/4) words)
  uint seed;
};
// Bindings, shared by the shaders and their callers.
// pattern_check.comp
#define PATTERN_CHECK_BINDING_DATA 0
#define PATTERN_CHECK_BINDING_MISMATCHES 1
#define PATTERN_CHECK_BINDINGS 2
// pattern_fill.comp
#define PATTERN_FILL_BINDING_DATA 0
#define PATTERN_FILL_BINDING_UNUSED 1
#define PATTERN_FILL_BINDINGS 2
#endif
