#pragma once
// What both backends of joint propagation share on the host: the flags an argument set selects, and the walk over
// the forest's generations, one launch each (forward: first to last; backward: last to first).
#include "armature/ops/joint_propagation.h"
#include "shared/joints_io.h"

namespace armature {

inline uint32_t jointsFlags(const JointPropagationArgs& a) {
  return (a.kind == LocalTransform::Affine ? JOINTS_AFFINE : 0u) | (a.skinning.empty() ? 0u : JOINTS_SKINNING) |
         (a.positions.empty() ? 0u : JOINTS_POSITIONS);
}

inline uint32_t jointsFlags(const JointPropagationBackwardArgs& a) {
  return (a.kind == LocalTransform::Affine ? JOINTS_AFFINE : 0u) | (a.gradSkinning.empty() ? 0u : JOINTS_SKINNING) |
         (a.gradPositions.empty() ? 0u : JOINTS_POSITIONS) | (a.gradGlobals.empty() ? 0u : JOINTS_GRAD_GLOBALS);
}

// Calls launch(push) for each generation of `forest`, in order or reversed.
template <typename Launch>
void forEachGeneration(const DeviceJointForest& forest, uint32_t batch, uint32_t flags, bool reverse, Launch launch) {
  const JointForest& f = forest.forest();
  const uint32_t G = f.generations();
  for (uint32_t step = 0; step < G; ++step) {
    const uint32_t g = reverse ? G - 1 - step : step;
    const uint32_t first = f.generationStart()[g];
    launch(JointsPush{f.size(), batch, first, f.generationStart()[g + 1] - first, flags, 0, 0, 0});
  }
}

}  // namespace armature
