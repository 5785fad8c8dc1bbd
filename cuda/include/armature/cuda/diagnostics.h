#pragma once
// Small kernels for checking and timing cross-API work (interop tests, armature-bench interop).
#include <cstddef>
#include <cstdint>

#include "armature/cuda/runtime.h"

namespace armature::cuda {
// Writes patternByte(i, seed) (shaders/shared/pattern_io.h) into bytes [0, bytes).
void fillPattern(void* data, size_t bytes, uint32_t seed, const Stream& stream);
// Adds the number of bytes that differ from the pattern to *mismatches (device pointer to one uint32).
void countPatternMismatches(const void* data, size_t bytes, uint32_t seed, uint32_t* mismatches, const Stream& stream);
// *counter += add, in one thread.
void incrementCounter(uint32_t* counter, uint32_t add, const Stream& stream);
// A launch that does nothing (for synchronisation overheads).
void emptyKernel(const Stream& stream);
}  // namespace armature::cuda
