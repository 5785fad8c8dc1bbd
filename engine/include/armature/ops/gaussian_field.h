#pragma once
// Anisotropic Gaussian fields: f(x) = Σ_i w_i · exp(−½‖L_i⁻¹(x − μ_i)‖²) at B points over N Gaussians, with C
// channels of weights (1 to 32), forward and backward. This header holds the CPU reference in double precision,
// which the GPU paths are tested against, and the GPU entry points (CUDA and Vulkan, float).
//
// Parametrisation of L_i (lower triangular with a positive diagonal), per Gaussian:
//   - anisotropic, (N,6): (log l00, l10, log l11, l20, l21, log l22), the rows of L with the diagonal through exp;
//   - isotropic, (N,1): log σ, L = σ·I.
// exp, not softplus: a fit then moves scales multiplicatively (a Gaussian may shrink by orders of magnitude without
// a floor), and the diagonal's gradient through it is the entry itself. The log-diagonal is clamped to ±30 (scales
// 1e-13 … 1e13), so L⁻¹ stays finite in float; its gradient is zero beyond, as a clamp's is. A degenerate Gaussian
// (a tiny diagonal) therefore gives finite values: far from its mean its contribution underflows to zero.
//
// Outputs: the field (B,C), and optionally the squared Mahalanobis distances (B,N) (not differentiated). The
// backward takes the field's gradient and gives the points', the means', all of L's parameters' and the weights'.
// On the GPU every sum has a fixed order (shaders/shared/gaussian_io.h): the same bits on every run, no atomics.
// Non-finite inputs are an error in the reference; on the GPU they give non-finite outputs where they reach.
#include <cstdint>
#include <vector>

#include "armature/device.h"

namespace armature {

enum class GaussianShape : uint8_t { Anisotropic, Isotropic };
constexpr uint32_t kGaussianMaxChannels = 32;
// L's parameters per Gaussian: 6 or 1.
constexpr uint32_t gaussianParameterCount(GaussianShape shape) { return shape == GaussianShape::Isotropic ? 1 : 6; }

struct GaussianFieldRef {
  GaussianShape shape = GaussianShape::Anisotropic;
  uint32_t channels = 1;
  // Culled mode (below) when > 0: a term counts only where max_c |w_ic|·e^{−m/2} ≥ epsilon.
  double epsilon = 0;
  std::vector<double> points;    // (B,3)
  std::vector<double> means;     // (N,3)
  std::vector<double> cholesky;  // (N,6) or (N,1): L's parameters, above
  std::vector<double> weights;   // (N,C)
  uint32_t pointCount() const { return uint32_t(points.size() / 3); }
  uint32_t gaussianCount() const { return uint32_t(means.size() / 3); }
};

struct GaussianFieldValuesRef {
  std::vector<double> field;        // (B,C)
  std::vector<double> mahalanobis;  // (B,N), when asked for
};

struct GaussianFieldGradsRef {
  std::vector<double> points, means, cholesky, weights;  // shaped as the inputs
};

// Checks every shape, the channel count and that values are finite; throws armature::Error naming the argument.
void validateGaussianField(const GaussianFieldRef& field);
GaussianFieldValuesRef gaussianFieldRef(const GaussianFieldRef& field, bool mahalanobis = false);
GaussianFieldGradsRef gaussianFieldBackwardRef(const GaussianFieldRef& field, const std::vector<double>& gradField);

// ---- GPU ------------------------------------------------------------------------------------------------------

// The inputs, as float views shaped as the reference's vectors.
struct GaussianFieldInputs {
  GaussianShape shape = GaussianShape::Anisotropic;
  uint32_t points = 0, gaussians = 0, channels = 1;
  DeviceView x;         // (B,3)
  DeviceView means;     // (N,3)
  DeviceView cholesky;  // (N,6) or (N,1)
  DeviceView weights;   // (N,C)
};

// The scratch (floats) a call needs: the partial sums of the chunks a side is cut into (0 when neither is); for a
// backward, also enough for the culled mode's (each Gaussian's row and the gathered points).
size_t gaussianFieldScratchFloats(uint32_t points, uint32_t gaussians, uint32_t channels, bool backward);

struct GaussianFieldArgs {
  GaussianFieldInputs in;
  DeviceView field;        // out (B,C)
  DeviceView mahalanobis;  // out (B,N), optional (dense mode only)
  DeviceView scratch;  // gaussianFieldScratchFloats(…, false) floats (may be empty when that is 0; culled: unused)
  DeviceView grid;     // culled mode: the grid buildGaussianGrid built over these Gaussians (else empty)
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void gaussianField(const Exec& exec, const GaussianFieldArgs& args);

struct GaussianFieldBackwardArgs {
  GaussianFieldInputs in;
  DeviceView gradField;     // (B,C)
  DeviceView gradPoints;    // out (B,3), optional
  DeviceView gradMeans;     // out (N,3), optional
  DeviceView gradCholesky;  // out (N,6|1), optional
  DeviceView gradWeights;   // out (N,C), optional (at least one of the four)
  DeviceView scratch;       // gaussianFieldScratchFloats(…, true) floats
  DeviceView grid;          // culled mode: as the forward's; the backward bins the points into it
};
void gaussianFieldBackward(const Exec& exec, const GaussianFieldBackwardArgs& args);

// ---- Culled mode ----------------------------------------------------------------------------------------------
// Each Gaussian's support is cut where its largest weight's term falls below ε: a term counts only where
// max_c |w_ic|·e^{−m/2} ≥ ε. Every term left out is smaller than ε, so at any point and channel
//     |culled − dense| ≤ (the number of Gaussians cut there)·ε ≤ N·ε,
// and the backward is the exact gradient of the culled field (the cut's jump, a set of measure zero, aside).
// A Gaussian with max|w| ≤ ε counts nowhere.
//
// The Gaussians are binned on the GPU in a uniform grid over their supports' boxes, cells half the size of the 99th
// percentile of the supports (a support spans at most 3 cells per axis; the larger 1% go into a list every point
// walks), at most gaussianGridCells(N) cells. A point sums the Gaussians of its cell and that list; each Gaussian's
// gradient sums the points of its ≤ 27 cells. Both bin the points into the grid's buffer first, so a grid serves one
// evaluation at a time. Lists are sorted by index, so the sums keep their order: the same bits on every run. Rebuild
// the grid whenever the Gaussians (means, L, weights) or ε change; its cost is `armature-bench gaussian`'s build row.
uint32_t gaussianGridCells(uint32_t gaussians);
size_t gaussianGridWords(uint32_t points, uint32_t gaussians);  // UInt32 words of the grid's buffer

struct GaussianGridArgs {
  GaussianFieldInputs in;  // the points' count sizes the buffer (their bins are the backward's)
  float epsilon = 1e-4f;   // > 0
  DeviceView grid;         // out: gaussianGridWords(points, gaussians) UInt32 words
};
void buildGaussianGrid(const Exec& exec, const GaussianGridArgs& args);

}  // namespace armature
