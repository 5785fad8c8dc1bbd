#pragma once
// What both backends of joint propagation share on the host: the flags an argument set selects, and the walk over
// the forest's generations and their scan's phases.
#include <algorithm>

#include "armature/error.h"
#include "armature/ops/joint_propagation.h"
#include "shared/joint_propagation_io.h"

namespace armature {

// One pass of the attached points' shader (JOINTS_POINTS_*): vk::jointPoints, cuda::jointPoints.
struct JointPointsArgs {
  const DeviceJointForest* forest = nullptr;
  uint32_t batch = 1, mode = JOINTS_POINTS_FORWARD;
  DeviceView points, globals, moved, gradGlobals, jointGrads, gradPoints;
};

inline JointsPointsPush jointsPointsPush(const JointPointsArgs& a) {
  return {
      a.forest->size(), a.batch, a.forest->points(), a.mode, a.gradGlobals.empty() ? 0u : JOINTS_GRAD_GLOBALS, 0, 0, 0};
}

inline uint32_t jointsFlags(const JointPropagationArgs& a) {
  return (a.kind == LocalTransform::Affine ? JOINTS_AFFINE : 0u) | (a.skinning.empty() ? 0u : JOINTS_SKINNING) |
         (a.positions.empty() ? 0u : JOINTS_POSITIONS);
}

inline uint32_t jointsFlags(const JointPropagationBackwardArgs& a) {
  return (a.kind == LocalTransform::Affine ? JOINTS_AFFINE : 0u) | (a.gradSkinning.empty() ? 0u : JOINTS_SKINNING) |
         (a.gradPositions.empty() ? 0u : JOINTS_POSITIONS) | (a.gradGlobals.empty() ? 0u : JOINTS_GRAD_GLOBALS);
}

// The small-forest dispatch's push constants and workgroups (DeviceJointForest::small()), a workgroup holding
// `joints` joints (at least the forest's).
inline JointsPush jointsSmallPush(const DeviceJointForest& forest, uint32_t batch, uint32_t flags, uint32_t joints,
                                  uint32_t& groups) {
  const uint32_t N = forest.size(), perRound = joints / N;
  ARM_CHECK(perRound >= 1, "joint propagation: a workgroup of %u joints cannot hold a skeleton of %u", joints, N);
  groups = uint32_t(std::min<uint64_t>((uint64_t(batch) + perRound - 1) / perRound, 65535));
  return JointsPush{N, batch, forest.depth(), 0, flags, JOINTS_SMALL, perRound, 0, 0, 0, 0, 0};
}

inline uint32_t jointsTiles(uint32_t batch, uint32_t length, uint32_t tileLength = JOINTS_TILE) {
  return uint32_t((uint64_t(batch) * length + tileLength - 1) / tileLength);
}

// Where a backend scans some generations in tiles other than JOINTS_TILE's: in JOINTS_NARROW_TILE's those of two to
// `narrowBelow` tiles of JOINTS_TILE, in JOINTS_WIDE_TILE's those of `wideFrom` or more.
struct JointsTileChoice {
  uint32_t narrowBelow = 0, wideFrom = UINT32_MAX;
};

// The elements a tile of a scan of `length` (batch times).
inline uint32_t jointsTileLength(uint32_t batch, uint32_t length, JointsTileChoice choice) {
  const uint32_t tiles = jointsTiles(batch, length);
  return tiles >= choice.wideFrom                   ? JOINTS_WIDE_TILE
         : tiles >= 2 && tiles < choice.narrowBelow ? JOINTS_NARROW_TILE
                                                    : JOINTS_TILE;
}

// Where a call's scans keep their state in the scratch: each scan's status words from `statusStart` on (moved past
// them by each scan), and the records every scan reuses from `recordStart`.
struct JointsScanScratch {
  uint32_t statusStart, recordStart;
};

// Calls launch(push, workgroups) for each dispatch of a scan of `length` elements of order() from `start` (batch
// times), in tiles of `tileLength`: SINGLE for a scan of at most `singlePassTiles` tiles (0 on lavapipe), else
// REDUCE, CARRY and APPLY.
template <typename Launch>
void forEachScanPhase(const DeviceJointForest& forest, uint32_t batch, uint32_t flags, uint32_t start, uint32_t length,
                      uint32_t tileLength, uint32_t singlePassTiles, JointsScanScratch& scratch, Launch& launch) {
  const uint32_t tiles = jointsTiles(batch, length, tileLength);
  JointsPush push{.joints = forest.size(),
                  .batch = batch,
                  .genStart = start,
                  .genLength = length,
                  .flags = flags,
                  .phase = JOINTS_SINGLE,
                  .tiles = tiles,
                  .statusStart = scratch.statusStart,
                  .recordStart = scratch.recordStart,
                  .tileLength = tileLength};
  scratch.statusStart += tiles + 1;  // and SINGLE's ticket
  if (tiles == 1 || tiles <= singlePassTiles) {
    launch(push, tiles);
    return;
  }
  const uint32_t groups = std::min<uint32_t>(tiles, 65535);
  push.phase = JOINTS_REDUCE;
  launch(push, groups);
  push.phase = JOINTS_CARRY;
  launch(push, 1u);
  push.phase = JOINTS_APPLY;
  launch(push, groups);
}

// Calls launch(push, workgroups) for each dispatch of a large forest's propagation (shared/joint_propagation_io.h). Forward:
// the scan of every path's locals, then PLACE for each later generation. Backward: each generation's scan, last to
// first, in the tiles `choice` gives the backward (jointsTileLength). The scratch's status words
// (DeviceJointForest::scratchStatusWords) must be zero before.
template <typename Launch>
void forEachPhase(const DeviceJointForest& forest, uint32_t batch, uint32_t flags, bool backward,
                  uint32_t singlePassTiles, JointsTileChoice choice, Launch launch) {
  const uint32_t G = forest.generations();
  JointsScanScratch scratch{0, uint32_t(forest.scratchStatusWords(batch))};
  if (!backward) {
    forEachScanPhase(forest, batch, flags, 0, forest.size(), JOINTS_TILE, singlePassTiles, scratch, launch);
    for (uint32_t g = 1; g < G; ++g) {
      const uint32_t length = forest.generationLength(g);
      const JointsPush push{.joints = forest.size(),
                            .batch = batch,
                            .genStart = forest.generationStart(g),
                            .genLength = length,
                            .flags = flags,
                            .phase = JOINTS_PLACE};
      launch(push,
             uint32_t(std::min<uint64_t>((uint64_t(batch) * length + JOINTS_THREADS - 1) / JOINTS_THREADS, 65535)));
    }
    return;
  }
  for (uint32_t g = G; g-- > 0;) {
    const uint32_t length = forest.generationLength(g);
    forEachScanPhase(forest, batch, flags, forest.generationStart(g), length, jointsTileLength(batch, length, choice),
                     singlePassTiles, scratch, launch);
  }
}

}  // namespace armature
