// Linear blend skinning's entry point, influence checks and CPU reference; the backends are
// linear_blend_skinning_vk.cpp and cuda/src/linear_blend_skinning.cu.
#include "armature/ops/linear_blend_skinning.h"

#include <cmath>

#include "dispatch.h"
#include "shared/lbs_io.h"

namespace armature {
namespace vk {
void linearBlendSkinning(const Exec& exec, const LinearBlendSkinningArgs& args);
}  // namespace vk
namespace cuda {
void linearBlendSkinning(const Exec& exec, const LinearBlendSkinningArgs& args);
}  // namespace cuda

namespace {

template <typename Weight>
uint32_t checkInfluences(uint32_t jointCount, uint32_t influences, const std::vector<uint32_t>& joints,
                         const std::vector<Weight>& weights) {
  ARM_CHECK(influences >= 1 && influences <= LBS_MAX_INFLUENCES, "skinning: %u influences per vertex, not 1 to %u",
            influences, LBS_MAX_INFLUENCES);
  ARM_CHECK(joints.size() % influences == 0 && weights.size() == joints.size(),
            "skinning: %zu joint indices and %zu weights for %u influences per vertex", joints.size(), weights.size(),
            influences);
  for (size_t i = 0; i < joints.size(); ++i) {
    ARM_CHECK(joints[i] < jointCount, "skinning: vertex %zu's influence %zu names joint %u, not in [0, %u)",
              i / influences, i % influences, joints[i], jointCount);
    ARM_CHECK(std::isfinite(double(weights[i])), "skinning: vertex %zu's influence %zu has weight %g", i / influences,
              i % influences, double(weights[i]));
  }
  return uint32_t(joints.size() / influences);
}

}  // namespace

std::vector<double> linearBlendSkinningRef(const std::vector<double>& rest, const std::vector<uint32_t>& joints,
                                           const std::vector<double>& weights, uint32_t influences,
                                           const std::vector<double>& skinning, uint32_t jointCount, uint32_t batch) {
  const uint32_t V = checkInfluences(jointCount, influences, joints, weights);
  ARM_CHECK(rest.size() == size_t(V) * 3, "skinning: %zu rest coordinates for %u vertices", rest.size(), V);
  ARM_CHECK(skinning.size() == size_t(batch) * jointCount * 12, "skinning: %zu skinning floats for %u x %u joints",
            skinning.size(), batch, jointCount);
  std::vector<double> out(size_t(batch) * V * 3, 0.0);
  for (size_t b = 0; b < batch; ++b)
    for (size_t v = 0; v < V; ++v)
      for (size_t k = 0; k < influences; ++k) {
        const double w = weights[v * influences + k];
        const double* m = &skinning[(b * jointCount + joints[v * influences + k]) * 12];
        const double* x = &rest[v * 3];
        for (size_t r = 0; r < 3; ++r)
          out[(b * V + v) * 3 + r] += w * (m[r * 4] * x[0] + m[r * 4 + 1] * x[1] + m[r * 4 + 2] * x[2] + m[r * 4 + 3]);
      }
  return out;
}

DeviceSkinWeights::DeviceSkinWeights(Device& device, uint32_t jointCount, uint32_t influences,
                                     const std::vector<uint32_t>& joints, const std::vector<float>& weights)
    : m_vertices(checkInfluences(jointCount, influences, joints, weights)),
      m_jointCount(jointCount),
      m_influences(influences) {
  m_joints = device.upload(joints);
  m_weights = device.upload(weights);
}

void linearBlendSkinning(const Exec& exec, const LinearBlendSkinningArgs& a) {
  const char* op = "linearBlendSkinning";
  OpChecks check(op, exec);
  ARM_CHECK(a.weights, "%s: the skin weights are missing", op);
  const size_t V = a.weights->vertices();
  ARM_CHECK(uint64_t(a.batch) * V * 3 <= UINT32_MAX && uint64_t(a.batch) * a.weights->jointCount() * 12 <= UINT32_MAX,
            "%s: %u skeletons: more than 2^32 floats", op, a.batch);
  check.view("rest", a.rest, ElementType::Float32, V * 3);
  check.view("skinning", a.skinning, ElementType::Float32, size_t(a.batch) * a.weights->jointCount() * 12);
  check.view("positions", a.positions, ElementType::Float32, size_t(a.batch) * V * 3);
  if (a.batch == 0 || V == 0) return;
  dispatch(op, exec, a, &vk::linearBlendSkinning, ARM_CUDA_BACKEND(linearBlendSkinning));
}

}  // namespace armature
