#pragma once
// project on CUDA (armature/ops/project.h for the contract): device pointers, the caller's stream, no host
// synchronisation. points: desc.pointFloats() floats; matrices: 16·B floats (column-major); clip: (B,N,4) floats,
// rasterize's Instanced positions. Backward: gradPoints in the shape of points, overwritten (no atomics).
#include "armature/cuda/runtime.h"
#include "armature/ops/project.h"

namespace armature::cuda {
void project(const ProjectDesc& desc, const float* points, const float* matrices, float* clip, const Stream& stream);
void projectBackward(const ProjectDesc& desc, const float* gradClip, const float* matrices, float* gradPoints,
                     const Stream& stream);
// gradMatrices: 16·B floats, overwritten; one block per view, a fixed order of sums (deterministic).
void projectMatrixGrad(const ProjectDesc& desc, const float* points, const float* gradClip, float* gradMatrices,
                       const Stream& stream);
}  // namespace armature::cuda
