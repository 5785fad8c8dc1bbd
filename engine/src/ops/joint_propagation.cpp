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
void jointPoints(const Exec& exec, const JointPointsArgs& args);
}  // namespace vk
namespace cuda {
void propagateJoints(const Exec& exec, const JointPropagationArgs& args);
void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& args);
void jointPoints(const Exec& exec, const JointPointsArgs& args);
}  // namespace cuda

static_assert(DeviceJointForest::kSmallJoints == JOINTS_SMALL_JOINTS);

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

DeviceJointForest::DeviceJointForest(Device& device, const JointForest& forest, const std::vector<int32_t>& pointJoints)
    : m_forest(forest), m_points(uint32_t(pointJoints.size())) {
  const size_t N = forest.size();
  std::vector<uint32_t> pointStart(N + 1, 0), pointOrder(pointJoints.size());
  for (size_t q = 0; q < pointJoints.size(); ++q) {
    ARM_CHECK(pointJoints[q] >= 0 && size_t(pointJoints[q]) < N, "point %zu is attached to joint %d, not in [0, %zu)",
              q, pointJoints[q], N);
    ++pointStart[size_t(pointJoints[q]) + 1];
  }
  for (size_t j = 0; j < N; ++j) pointStart[j + 1] += pointStart[j];
  std::vector<uint32_t> pointFill(pointStart.begin(), pointStart.end() - (N ? 1 : 0));
  for (size_t q = 0; q < pointJoints.size(); ++q) pointOrder[pointFill[size_t(pointJoints[q])]++] = uint32_t(q);
  m_pointJoints = uploadTable(device, pointJoints);
  m_pointStart = uploadTable(device, pointStart);
  m_pointOrder = uploadTable(device, pointOrder);
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
  m_small = N <= JOINTS_SMALL_JOINTS;
  if (m_small) {  // joints by depth (each after its parent), each level's start; every joint's children
    std::vector<uint32_t> depth(N, 0), levels, childStart(N + 1, 0), children(N - forest.roots());
    uint32_t deepest = 0;
    for (uint32_t j : forest.order()) {
      const int32_t parent = forest.parents()[j];
      depth[j] = parent < 0 ? 0 : depth[size_t(parent)] + 1;
      deepest = std::max(deepest, depth[j]);
      if (parent >= 0) ++childStart[size_t(parent) + 1];
    }
    std::vector<uint32_t> levelStart(deepest + 2, 0);
    for (size_t j = 0; j < N; ++j) ++levelStart[depth[j] + 1];
    for (size_t d = 0; d + 1 < levelStart.size(); ++d) levelStart[d + 1] += levelStart[d];
    for (size_t j = 0; j < N; ++j) childStart[j + 1] += childStart[j];
    levels.resize(N);
    std::vector<uint32_t> levelFill(levelStart.begin(), levelStart.end() - 1),
        childFill(childStart.begin(), childStart.end() - 1);
    for (uint32_t j = 0; j < N; ++j) {
      levels[levelFill[depth[j]]++] = j;
      if (forest.parents()[j] >= 0) children[childFill[size_t(forest.parents()[j])]++] = j;
    }
    levels.insert(levels.end(), levelStart.begin(), levelStart.end());
    m_levels = uploadTable(device, levels);
    m_childStart = uploadTable(device, childStart);
    m_children = uploadTable(device, children);
  }
  m_parents = uploadTable(device, forest.parents());
  m_lightStart = uploadTable(device, lightStart);
  m_lightChildren = uploadTable(device, lightChildren);
}

size_t DeviceJointForest::scratchStatusWords(uint32_t batch) const {
  size_t tiles = 0;
  for (uint32_t length : m_generationLengths) tiles += jointsTiles(batch, length);
  return tiles;
}

size_t DeviceJointForest::scanScratchFloats(uint32_t batch) const {
  uint32_t mostTiles = 1;
  for (uint32_t length : m_generationLengths) mostTiles = std::max(mostTiles, jointsTiles(batch, length));
  // Rounded up to 256 bytes: the points' part after it is bound at its own offset (storage buffer alignment).
  return (scratchStatusWords(batch) + size_t(mostTiles) * JOINTS_STATE_WORDS + 63) / 64 * 64;
}

size_t DeviceJointForest::scratchFloats(uint32_t batch) const {
  return scanScratchFloats(batch) + (m_points ? size_t(batch) * m_forest.size() * 12 : 0);
}

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  const char* op = "propagateJoints";
  OpChecks check(op, exec);
  const size_t BN = checkLocals(op, check, a);
  check.optionalView("skinning", a.skinning, ElementType::Float32, BN * 12);
  check.optionalView("positions", a.positions, ElementType::Float32, BN * 3);
  ARM_CHECK(a.skinning.empty() || !a.inverseBind.empty(), "%s: skinning matrices need inverseBind", op);
  const size_t P = a.forest->points();
  check.optionalView("pointsOut", a.pointsOut, ElementType::Float32, size_t(a.batch) * P * 3);
  if (!a.pointsOut.empty()) check.view("points", a.points, ElementType::Float32, P * 3);
  if (BN == 0) return;
  dispatch(op, exec, a, &vk::propagateJoints, ARM_CUDA_BACKEND(propagateJoints));
  if (a.pointsOut.empty() || P == 0) return;
  const JointPointsArgs moved{a.forest, a.batch, JOINTS_POINTS_FORWARD, a.points, a.globals, a.pointsOut, {}, {}, {}};
  dispatch(op, exec, moved, &vk::jointPoints, ARM_CUDA_BACKEND(jointPoints));
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const char* op = "propagateJointsBackward";
  OpChecks check(op, exec);
  const size_t BN = checkLocals(op, check, a);
  check.optionalView("gradGlobals", a.gradGlobals, ElementType::Float32, BN * 12);
  check.optionalView("gradSkinning", a.gradSkinning, ElementType::Float32, BN * 12);
  check.optionalView("gradPositions", a.gradPositions, ElementType::Float32, BN * 3);
  ARM_CHECK(!a.gradGlobals.empty() || !a.gradSkinning.empty() || !a.gradPositions.empty() || !a.gradPointsOut.empty(),
            "%s: no gradient given (gradGlobals, gradSkinning, gradPositions or gradPointsOut)", op);
  const size_t P = a.forest->points();
  check.optionalView("gradPointsOut", a.gradPointsOut, ElementType::Float32, size_t(a.batch) * P * 3);
  if (!a.gradPointsOut.empty()) {
    check.view("points", a.points, ElementType::Float32, P * 3);
    check.view("gradPoints", a.gradPoints, ElementType::Float32, P * 3);
  }
  ARM_CHECK(a.gradSkinning.empty() || !a.inverseBind.empty(), "%s: a skinning gradient needs inverseBind", op);
  check.view("adjoint", a.adjoint, ElementType::Float32, BN * 12);
  if (a.kind == LocalTransform::Rigid) {
    check.view("gradRotations", a.gradRotations, ElementType::Float32, BN * 4);
    check.view("gradTranslations", a.gradTranslations, ElementType::Float32, BN * 3);
  } else {
    check.view("gradAffine", a.gradAffine, ElementType::Float32, BN * 12);
  }
  if (BN == 0) return;
  if (a.gradPointsOut.empty() || P == 0) {
    dispatch(op, exec, a, &vk::propagateJointsBackward, ARM_CUDA_BACKEND(propagateJointsBackward));
    return;
  }
  // The points' gradient joins the globals' (in the scratch after the scan's part), then the propagation's
  // backward, then the points' own gradient.
  const size_t scan = a.forest->scanScratchFloats(a.batch);
  JointPropagationBackwardArgs joints = a;
  joints.gradGlobals = a.scratch.slice(scan, BN * 12);
  joints.scratch = a.scratch.slice(0, scan);
  JointPointsArgs points{a.forest,        a.batch,       JOINTS_POINTS_JOINT_GRADS, a.points,    a.globals,
                         a.gradPointsOut, a.gradGlobals, joints.gradGlobals,        a.gradPoints};
  dispatch(op, exec, points, &vk::jointPoints, ARM_CUDA_BACKEND(jointPoints));
  dispatch(op, exec, joints, &vk::propagateJointsBackward, ARM_CUDA_BACKEND(propagateJointsBackward));
  points.mode = JOINTS_POINTS_GRADS;
  dispatch(op, exec, points, &vk::jointPoints, ARM_CUDA_BACKEND(jointPoints));
}

}  // namespace armature
