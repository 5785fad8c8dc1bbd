#pragma once
// interpolate: per-pixel attributes from a visibility buffer (nvdiffrast's interpolate, without its derivative
// outputs). out (B·H·W, C) = Σ_k bary[k] · attr[face[k]] at covered pixels, 0 at background (findices 0).
// A batch is B·H·W pixels. imagePixels = 0: attr (N,C) shared by every image (many views of one mesh, or face ranges
// of one vertex buffer). imagePixels = H·W: attr (B,N,C), each image its own (nvdiffrast's instanced attributes:
// per-view normals, lighting). Backward: gradAttr (N,C) or (B,N,C) += Σ_pixels bary[k] · gradOut, gradBary (B,H,W,3)
// = attr[face[k]] · gradOut. findices come from a rasterize of the same faces (checked on the device: an id beyond
// the faces, or a face corner beyond the vertices, reads as background).
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

struct InterpolateDesc {
  uint32_t pixels = 0;       // B·H·W
  uint32_t channels = 1;     // C
  uint32_t vertexCount = 0;  // N
  uint32_t faceCount = 0;    // F
  uint32_t imagePixels = 0;  // 0: attributes shared by every image; H·W: (B,N,C)
  // Floats of attr and gradAttr: N·C, or B·N·C with B = pixels / imagePixels (which must divide it).
  size_t attrFloats() const;
};

// The GPU entry points (armature/device.h).
struct InterpolateArgs {
  InterpolateDesc desc;
  DeviceView attr;          // float32, desc.attrFloats()
  DeviceView findices;      // int32, pixels
  DeviceView barycentrics;  // float32, pixels·3
  DeviceView faces;         // int32, F·3
  DeviceView out;           // float32, pixels·C, overwritten
};
// gradAttr is accumulated with float atomics (the caller zeroes it; not bitwise reproducible, unlike
// gradBarycentrics, which is overwritten). Vulkan needs float32 buffer atomic add (VK_EXT_shader_atomic_float).
struct InterpolateBackwardArgs {
  InterpolateDesc desc;
  DeviceView attr, findices, barycentrics, faces;  // as the forward's
  DeviceView gradOut;                              // float32, pixels·C
  DeviceView gradAttr;                             // float32, desc.attrFloats(), accumulated
  DeviceView gradBarycentrics;                     // float32, pixels·3, overwritten
};
void interpolate(const Exec& exec, const InterpolateArgs& args);
void interpolateBackward(const Exec& exec, const InterpolateBackwardArgs& args);

// CPU reference in double.
std::vector<double> interpolateRef(const std::vector<double>& attr, uint32_t channels,
                                   const std::vector<int32_t>& findices, const std::vector<double>& barycentrics,
                                   const std::vector<int32_t>& faces, uint32_t imagePixels = 0);
void interpolateBackwardRef(const std::vector<double>& attr, uint32_t channels, const std::vector<int32_t>& findices,
                            const std::vector<double>& barycentrics, const std::vector<int32_t>& faces,
                            const std::vector<double>& gradOut, std::vector<double>& gradAttr,
                            std::vector<double>& gradBarycentrics, uint32_t imagePixels = 0);
// Floats in attr (and gradAttr) for `pixels` pixels of `channels` over `vertexCount` vertices (InterpolateDesc).
size_t interpolateAttrCount(size_t pixels, uint32_t channels, uint32_t vertexCount, uint32_t imagePixels);

}  // namespace armature
