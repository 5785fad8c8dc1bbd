#pragma once
// What both backends of the Gaussian field share: the passes (shaders/shared/gaussian_io.h) the entry points plan,
// each run by vk::gaussianPass or cuda::gaussianPass.
#include "armature/ops/gaussian_field.h"
#include "shared/gaussian_grid_io.h"
#include "shared/gaussian_io.h"

namespace armature {

struct GaussianPass {
  enum class Kind : uint8_t { Forward, PointGrads, GaussianGrads, Finish };
  Kind kind = Kind::Forward;
  GaussianPush push{};
  uint32_t groupsX = 1, groupsY = 1;
  uint32_t maxChannels = 1;        // the variant: 1, 8 or 32 channels,
  uint32_t rowsPerInvocation = 1;  // 1, GAUSSIAN_MANY_ROWS or GAUSSIAN_MOST_ROWS rows
  // Forward, PointGrads, GaussianGrads: the GAUSSIAN_BINDING_* views (gradField and mahalanobis may be empty).
  DeviceView points, means, cholesky, weights, gradField, out, mahalanobis;
  // Finish: cholesky, then the partials and up to three outputs (empty: not written).
  DeviceView partials, outA, outB, outC;
};

// Culled mode: a pass of the grid's build (gaussian_grid.comp), or a culled evaluation (gaussian_culled_*.glsl).
struct GaussianGridPass {
  enum class Kind : uint8_t { Grid, Forward, PointGrads, Gather, GaussianGrads };
  Kind kind = Kind::Grid;
  GaussianGridPush push{};
  uint32_t groups = 1;
  uint32_t maxChannels = 1;  // culled evaluations' variant: 1, 8 or 32 channels
  // Grid: points, means, cholesky, weights, grid; culled evaluations and the gather: points, weights, gradField (may
  // be empty), out, grid.
  DeviceView points, means, cholesky, weights, gradField, out, grid;
};

// The shader variant of a channel count: 1, 8 or 32 channels (both modes).
inline uint32_t gaussianChannelVariant(uint32_t channels) { return channels <= 1 ? 1 : channels <= 8 ? 8 : 32; }
// The Gaussian side's last pass (both modes): `chunks` partial rows per Gaussian summed and turned into the
// gradients finishFlags asks for.
void finishGaussianGrads(const char* op, const Exec& exec, const GaussianFieldBackwardArgs& args, DeviceView partials,
                         uint32_t chunks, uint32_t finishFlags);
// Checks the inputs' counts and views (both modes).
void checkGaussianInputs(const char* op, const OpChecks& check, const GaussianFieldInputs& in);
// Culled mode (gaussian_grid.cpp), after the entry points' checks of the other arguments; finishFlags: the
// GAUSSIAN_GRAD_* of the Gaussians' gradients asked for.
void culledGaussianField(const char* op, const Exec& exec, const OpChecks& check, const GaussianFieldArgs& args);
// The culled backward's scratch (floats): each Gaussian's row from 0, the gathered points (4 floats per entry) from
// `points`, their gradients from `grads`; `floats` in all.
struct CulledScratch {
  size_t points, grads, floats;
};
CulledScratch culledScratch(uint32_t points, uint32_t gaussians, uint32_t channels);
void culledGaussianFieldBackward(const char* op, const Exec& exec, const OpChecks& check,
                                 const GaussianFieldBackwardArgs& args, uint32_t finishFlags);

namespace vk {
void gaussianPass(const Exec& exec, const GaussianPass& pass);
void gaussianGridPass(const Exec& exec, const GaussianGridPass& pass);
}  // namespace vk
namespace cuda {
void gaussianPass(const Exec& exec, const GaussianPass& pass);
void gaussianGridPass(const Exec& exec, const GaussianGridPass& pass);
// The most blocks of GAUSSIAN_GRID_BIN_POINTS's cooperative launch the current device holds at once (0 where it has
// no cooperative launches).
uint32_t gaussianBinBlocks();
}  // namespace cuda

}  // namespace armature
