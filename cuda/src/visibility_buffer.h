#pragma once
// Reading the rasteriser's visibility buffer on CUDA (interpolate and the rasteriser's backward).
#include <cstddef>
#include <cstdint>

namespace armature::cuda {

// The vertex of corner k of pixel pix's face, or -1 for background or invalid ids (never read out of bounds).
__device__ inline int cornerVertex(const int32_t* ids, const int32_t* faces, uint32_t faceCount, uint32_t vertexCount,
                                   size_t pix, int k) {
  int id = ids[pix];
  if (id <= 0 || uint32_t(id) > faceCount) return -1;
  int v = faces[(id - 1) * 3 + k];
  return v >= 0 && uint32_t(v) < vertexCount ? v : -1;
}

}  // namespace armature::cuda
