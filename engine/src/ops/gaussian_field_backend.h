#pragma once
// What both backends of the Gaussian field share: the passes (shaders/shared/gaussian_io.h) the entry points plan,
// each run by vk::gaussianPass or cuda::gaussianPass.
#include "armature/ops/gaussian_field.h"
#include "shared/gaussian_io.h"

namespace armature {

struct GaussianPass {
  enum class Kind : uint8_t { Forward, PointGrads, GaussianGrads, Finish };
  Kind kind = Kind::Forward;
  GaussianPush push{};
  uint32_t groupsX = 1, groupsY = 1;
  uint32_t maxChannels = 1;        // the variant: 1, 8 or 32 channels,
  uint32_t rowsPerInvocation = 1;  // and 1 or GAUSSIAN_MANY_ROWS rows
  // Forward, PointGrads, GaussianGrads: the GAUSSIAN_BINDING_* views (gradField and mahalanobis may be empty).
  DeviceView points, means, cholesky, weights, gradField, out, mahalanobis;
  // Finish: cholesky, then the partials and up to three outputs (empty: not written).
  DeviceView partials, outA, outB, outC;
};

namespace vk {
void gaussianPass(const Exec& exec, const GaussianPass& pass);
}
namespace cuda {
void gaussianPass(const Exec& exec, const GaussianPass& pass);
}

}  // namespace armature
