// Joint propagation's entry points: argument checks, then the backend (joint_propagation_vk.cpp,
// cuda/src/joint_propagation.cu).
#include "armature/ops/joint_propagation.h"

#include <algorithm>

#include "dispatch.h"
#include "ops/joint_propagation_backend.h"
#include "shared/joint_propagation_setup.h"

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

// Items [0, count) grouped by key(item) in [0, groups) (a negative key: left out), each group's in item order:
// the groups' starts (groups + 1) and their items.
template <typename Key>
std::pair<std::vector<uint32_t>, std::vector<uint32_t>> groupBy(size_t count, size_t groups, Key key) {
  std::vector<uint32_t> start(groups + 1, 0), items;
  for (size_t i = 0; i < count; ++i)
    if (key(i) >= 0) ++start[size_t(key(i)) + 1];
  for (size_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  items.resize(start[groups]);
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  for (size_t i = 0; i < count; ++i)
    if (key(i) >= 0) items[fill[size_t(key(i))]++] = uint32_t(i);
  return {std::move(start), std::move(items)};
}

// The locals' and inverse binds' views, for both directions; returns the joints of the batch (B·N).
template <typename Args>
size_t checkLocals(const char* op, const OpChecks& check, const Args& a) {
  ARM_CHECK(a.forest, "%s: the forest is missing", op);
  ARM_CHECK(a.batch >= 1, "%s: the batch must be >= 1, got %u", op, a.batch);
  const size_t N = a.forest->size(), BN = size_t(a.batch) * N;
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
    : m_joints(forest.size()), m_paths(forest.paths()), m_depth(forest.depth()) {
  const size_t N = forest.size();
  attachPoints(device, pointJoints);
  for (uint32_t g = 1; g <= forest.generations(); ++g)
    m_generationStart.push_back(forest.pathStart()[forest.generationStart()[g]]);
  // Each joint's light children: the tops of paths other than the first (a root's path), by their parent.
  auto topOf = [&](size_t path) { return forest.order()[forest.pathStart()[path]]; };
  auto [lightStart, lightChildren] =
      groupBy(forest.paths(), N, [&](size_t path) { return forest.parents()[topOf(path)]; });
  for (uint32_t& path : lightChildren) path = topOf(path);
  for (size_t j = 0; j < N; ++j) m_widestFanOut = std::max(m_widestFanOut, lightStart[j + 1] - lightStart[j]);
  std::vector<uint32_t> order = forest.order(), topParents(N);
  for (uint32_t p = 0; p < forest.paths(); ++p) {
    const uint32_t first = forest.pathStart()[p], top = order[first];
    order[first] |= JOINTS_HEAD;
    std::fill(topParents.begin() + first, topParents.begin() + forest.pathStart()[p + 1],
              uint32_t(forest.parents()[top]));
  }
  // One buffer, laid out as the GPU's analysis writes it.
  const JointsSetupTables t = jointsSetupTables(m_joints);
  std::vector<uint32_t> tables(t.words, 0);
  std::copy(forest.parents().begin(), forest.parents().end(), tables.begin() + t.parents);
  std::copy(order.begin(), order.end(), tables.begin() + t.order);
  std::copy(lightStart.begin(), lightStart.end(), tables.begin() + t.lightStart);
  std::copy(lightChildren.begin(), lightChildren.end(), tables.begin() + t.lightChildren);
  std::copy(topParents.begin(), topParents.end(), tables.begin() + t.topParents);
  m_tables = device.upload(tables);
  if (small()) {  // the joints by depth, then each level's start; every joint's children
    std::vector<uint32_t> levels = forest.levelOrder();
    levels.insert(levels.end(), forest.levelStart().begin(), forest.levelStart().end());
    m_levels = device.upload(levels);
    m_childStart = device.upload(forest.childStart());
    m_children = device.upload(forest.children());
  }
}

DeviceJointForest::DeviceJointForest(Device& device, Backend setup, const std::vector<int32_t>& parents,
                                     const std::vector<int32_t>& pointJoints) {
  if (parents.size() <= kSmallJoints || setup == Backend::Cpu) {
    *this = DeviceJointForest(device, JointForest(parents), pointJoints);
    return;
  }
  JointForest::checkParents(parents);
  m_joints = uint32_t(parents.size());
  attachPoints(device, pointJoints);
  analyseOnDevice(device, setup, parents);
}

void DeviceJointForest::attachPoints(Device& device, const std::vector<int32_t>& pointJoints) {
  m_points = uint32_t(pointJoints.size());
  for (size_t q = 0; q < pointJoints.size(); ++q)
    ARM_CHECK(pointJoints[q] >= 0 && uint32_t(pointJoints[q]) < m_joints,
              "point %zu is attached to joint %d, not in [0, %u)", q, pointJoints[q], m_joints);
  const auto [pointStart, pointOrder] = groupBy(pointJoints.size(), m_joints, [&](size_t q) { return pointJoints[q]; });
  m_pointJoints = device.upload(pointJoints);
  m_pointStart = device.upload(pointStart);
  m_pointOrder = device.upload(pointOrder);
}

DeviceView DeviceJointForest::parents() const {
  return m_tables.view().as(ElementType::Int32).slice(jointsSetupTables(m_joints).parents, m_joints);
}
DeviceView DeviceJointForest::order() const {
  return m_tables.view().slice(jointsSetupTables(m_joints).order, m_joints);
}
DeviceView DeviceJointForest::topParents() const {
  return m_tables.view().as(ElementType::Int32).slice(jointsSetupTables(m_joints).topParents, m_joints);
}
DeviceView DeviceJointForest::lightStart() const {
  return m_tables.view().slice(jointsSetupTables(m_joints).lightStart, m_joints + 1);
}
DeviceView DeviceJointForest::lightChildren() const {
  return m_tables.view().slice(jointsSetupTables(m_joints).lightChildren, m_joints);
}

// Each generation's scan's (the backward's), in tiles as short as any backend takes (JOINTS_NARROW_TILE), and its
// tile ticket; their sum covers the forward's one scan of all of them.
size_t DeviceJointForest::scratchStatusWords(uint32_t batch) const {
  size_t tiles = 0;
  for (uint32_t g = 0; g < generations(); ++g) tiles += jointsTiles(batch, generationLength(g), JOINTS_NARROW_TILE) + 1;
  return tiles;
}

size_t DeviceJointForest::scanScratchFloats(uint32_t batch) const {
  // The forward's scan of all paths, or a generation's in short tiles.
  const uint32_t mostTiles = std::max(1u, jointsTiles(batch, m_joints, JOINTS_NARROW_TILE));
  // Rounded up to 256 bytes: the points' part after it is bound at its own offset (storage buffer alignment).
  return bindableFloats(scratchStatusWords(batch) + size_t(mostTiles) * JOINTS_STATE_WORDS);
}

size_t DeviceJointForest::scratchFloats(uint32_t batch) const {
  return scanScratchFloats(batch) + (m_points ? size_t(batch) * m_joints * 12 : 0);
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
