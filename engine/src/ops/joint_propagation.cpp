// Joint propagation's entry points: argument checks, then the backend (joint_propagation_vk.cpp,
// cuda/src/joint_propagation.cu).
#include "armature/ops/joint_propagation.h"

#include <algorithm>

#include "dispatch.h"
#include "ops/joint_propagation_backend.h"

namespace armature {
namespace vk {
void propagateJoints(const Exec& exec, const JointPropagationArgs& args);
void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& args);
}  // namespace vk
namespace cuda {
void propagateJoints(const Exec& exec, const JointPropagationArgs& args);
void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& args);
}  // namespace cuda

namespace {

template <typename T>
DeviceBuffer uploadTable(Device& device, const std::vector<T>& values) {
  return values.empty() ? device.allocate(elementTypeOf<T>(), 1) : device.upload(values);
}

// The locals' and inverse binds' views, for both directions; returns the joints of the batch (B·N).
template <typename Args>
size_t checkLocals(const char* op, const OpChecks& check, const Args& a) {
  ARM_CHECK(a.forest, "%s: the forest is missing", op);
  ARM_CHECK(a.batch >= 1, "%s: the batch must be >= 1, got %u", op, a.batch);
  const size_t N = a.forest->forest().size(), BN = size_t(a.batch) * N;
  ARM_CHECK(BN * 12 <= UINT32_MAX, "%s: %u skeletons of %zu joints: more than 2^32 floats", op, a.batch, N);
  if (a.kind == LocalTransform::Rigid) {
    check.view("rotations", a.rotations, ElementType::Float32, BN * 4);
    check.view("translations", a.translations, ElementType::Float32, BN * 3);
  } else {
    check.view("affine", a.affine, ElementType::Float32, BN * 12);
  }
  check.optionalView("inverseBind", a.inverseBind, ElementType::Float32, N * 12);
  check.view("globals", a.globals, ElementType::Float32, BN * 12);
  check.view("scratch", a.scratch, ElementType::Float32, a.forest->scratchFloats(a.batch));
  return BN;
}

}  // namespace

DeviceJointForest::DeviceJointForest(Device& device, const JointForest& forest) : m_forest(forest) {
  const size_t N = forest.size();
  // Each joint's light children: the tops of paths other than the first (a root's path), by their parent.
  std::vector<uint32_t> lightStart(N + 1, 0), lightChildren;
  for (uint32_t p = 0; p < forest.paths(); ++p) {
    const int32_t parent = forest.parents()[forest.order()[forest.pathStart()[p]]];
    if (parent >= 0) ++lightStart[size_t(parent) + 1];
  }
  for (size_t j = 0; j < N; ++j) lightStart[j + 1] += lightStart[j];
  lightChildren.resize(lightStart[N]);
  std::vector<uint32_t> fill(lightStart.begin(), lightStart.end() - (N ? 1 : 0));
  for (uint32_t p = 0; p < forest.paths(); ++p) {
    const uint32_t top = forest.order()[forest.pathStart()[p]];
    const int32_t parent = forest.parents()[top];
    if (parent >= 0) lightChildren[fill[size_t(parent)]++] = top;
  }
  for (size_t j = 0; j < N; ++j) m_widestFanOut = std::max(m_widestFanOut, lightStart[j + 1] - lightStart[j]);
  for (uint32_t g = 0; g < forest.generations(); ++g)
    m_generationLengths.push_back(forest.pathStart()[forest.generationStart()[g + 1]] -
                                  forest.pathStart()[forest.generationStart()[g]]);
  std::vector<uint32_t> order = forest.order();
  for (uint32_t p = 0; p < forest.paths(); ++p) order[forest.pathStart()[p]] |= JOINTS_HEAD;
  m_order = uploadTable(device, order);
  m_parents = uploadTable(device, forest.parents());
  m_lightStart = uploadTable(device, lightStart);
  m_lightChildren = uploadTable(device, lightChildren);
}

size_t DeviceJointForest::scratchStatusWords(uint32_t batch) const {
  size_t tiles = 0;
  for (uint32_t length : m_generationLengths) tiles += jointsTiles(batch, length);
  return tiles;
}

size_t DeviceJointForest::scratchFloats(uint32_t batch) const {
  uint32_t mostTiles = 1;
  for (uint32_t length : m_generationLengths) mostTiles = std::max(mostTiles, jointsTiles(batch, length));
  return scratchStatusWords(batch) + size_t(mostTiles) * JOINTS_STATE_WORDS;
}

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  const char* op = "propagateJoints";
  OpChecks check(op, exec);
  const size_t BN = checkLocals(op, check, a);
  check.optionalView("skinning", a.skinning, ElementType::Float32, BN * 12);
  check.optionalView("positions", a.positions, ElementType::Float32, BN * 3);
  ARM_CHECK(a.skinning.empty() || !a.inverseBind.empty(), "%s: skinning matrices need inverseBind", op);
  if (BN == 0) return;
  dispatch(op, exec, a, &vk::propagateJoints, ARM_CUDA_BACKEND(propagateJoints));
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const char* op = "propagateJointsBackward";
  OpChecks check(op, exec);
  const size_t BN = checkLocals(op, check, a);
  check.optionalView("gradGlobals", a.gradGlobals, ElementType::Float32, BN * 12);
  check.optionalView("gradSkinning", a.gradSkinning, ElementType::Float32, BN * 12);
  check.optionalView("gradPositions", a.gradPositions, ElementType::Float32, BN * 3);
  ARM_CHECK(!a.gradGlobals.empty() || !a.gradSkinning.empty() || !a.gradPositions.empty(),
            "%s: no gradient given (gradGlobals, gradSkinning or gradPositions)", op);
  ARM_CHECK(a.gradSkinning.empty() || !a.inverseBind.empty(), "%s: a skinning gradient needs inverseBind", op);
  check.view("adjoint", a.adjoint, ElementType::Float32, BN * 12);
  if (a.kind == LocalTransform::Rigid) {
    check.view("gradRotations", a.gradRotations, ElementType::Float32, BN * 4);
    check.view("gradTranslations", a.gradTranslations, ElementType::Float32, BN * 3);
  } else {
    check.view("gradAffine", a.gradAffine, ElementType::Float32, BN * 12);
  }
  if (BN == 0) return;
  dispatch(op, exec, a, &vk::propagateJointsBackward, ARM_CUDA_BACKEND(propagateJointsBackward));
}

}  // namespace armature
