#pragma once
// project: points to rasterize's clip-space input, for B views (the step between the skinning and the rasteriser,
// and its backward: an image loss reaches the body's vertices through it).
//   clip[b, n] = M_b · (p, 1)          M_b: view b's column-major 4×4 matrix (glm's layout), float
//   p = points[n]      (N,3), the same points seen by every view (multi-view capture of one body), or
//   p = points[b, n]   (B,N,3) with pointsPerView, set b seen by view b only (a skinning batch of B bodies)
// The output (B,N,4) is rasterize's Instanced positions. Backward: gradPoints in the shape of points,
// (M_bᵀ · gradClip[b, n]).xyz, summed over the views for shared points (in view order, one writer per value:
// deterministic). The matrices' gradient, for fitting cameras too, is its own call (projectMatrixGrad*):
// Σ_n gradClip[b, n] ⊗ (p, 1) per view, column-major like the matrices.
#include <cstdint>
#include <vector>

#include "armature/device.h"

struct ProjectPush;  // shaders/shared/project_io.h: the GPU passes' push constants

namespace armature {

struct ProjectDesc {
  uint32_t views = 1;          // B
  uint32_t points = 0;         // N per view
  bool pointsPerView = false;  // points (B,N,3) instead of (N,3)
  size_t pointFloats() const { return size_t(pointsPerView ? views : 1) * points * 3; }
  size_t clipFloats() const { return size_t(views) * points * 4; }
};

// Throws armature::Error unless views >= 1 and views·points <= 2^31.
void checkProjectDesc(const ProjectDesc& desc);
// The push constants of every GPU pass, on CUDA and Vulkan; include shared/project_io.h to call it.
ProjectPush projectPush(const ProjectDesc& desc);

// CPU reference in double (the matrices as the GPU reads them: float).
std::vector<double> projectRef(const ProjectDesc& desc, const std::vector<double>& points,
                               const std::vector<float>& matrices);
std::vector<double> projectBackwardRef(const ProjectDesc& desc, const std::vector<double>& gradClip,
                                       const std::vector<float>& matrices);
std::vector<double> projectMatrixGradRef(const ProjectDesc& desc, const std::vector<double>& points,
                                         const std::vector<double>& gradClip);

// The GPU entry points (armature/device.h): float32 views, outputs overwritten. Matrices: 16·B floats.
struct ProjectArgs {
  ProjectDesc desc;
  DeviceView points;    // desc.pointFloats()
  DeviceView matrices;  // 16·B, column-major
  DeviceView clip;      // (B,N,4), rasterize's Instanced positions
};
struct ProjectBackwardArgs {
  ProjectDesc desc;
  DeviceView gradClip;    // (B,N,4)
  DeviceView matrices;    // 16·B
  DeviceView gradPoints;  // the shape of points; one writer per value, no atomics
};
// gradMatrices: one workgroup (block) per view sums its points in a fixed order (deterministic).
struct ProjectMatrixGradArgs {
  ProjectDesc desc;
  DeviceView points;        // desc.pointFloats()
  DeviceView gradClip;      // (B,N,4)
  DeviceView gradMatrices;  // 16·B
};
void project(const Exec& exec, const ProjectArgs& args);
void projectBackward(const Exec& exec, const ProjectBackwardArgs& args);
void projectMatrixGrad(const Exec& exec, const ProjectMatrixGradArgs& args);

}  // namespace armature
