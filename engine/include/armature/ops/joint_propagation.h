#pragma once
// Joint propagation: local joint transforms to global ones over a JointForest shared by B skeletons, forward and
// backward. This header holds the CPU reference in double precision, which the GPU paths are tested against.
//
// Transforms are 3×4 row-major [R | t] (the last row 0 0 0 1 implied). A joint's global is its parent's global
// times its local (a root's global is its local). Locals are rigid (a unit quaternion (x, y, z, w) and a
// translation; the rotation matrix is the quaternion's standard formula, not renormalised) or affine (any 3×4, with
// scale and shear). Outputs:
//   - globals (B,N,12);
//   - skinning matrices (B,N,12) = global × inverse bind (inverse binds (N,12), shared by the batch), optional;
//   - positions (B,N,3): each global's translation;
//   - points (B,P,3): points attached to joints (their coordinates (P,3) in the joint's frame), transformed.
// The backward takes a gradient for any subset of the outputs and returns the exact gradients for the locals and
// the attached points' coordinates (summed over the batch).
#include <cstdint>
#include <vector>

#include "armature/ops/joint_forest.h"

namespace armature {

enum class LocalTransform : uint8_t { Rigid, Affine };

struct JointLocalsRef {
  uint32_t batch = 1;
  LocalTransform kind = LocalTransform::Rigid;
  std::vector<double> rotations;     // rigid: (B,N,4) unit quaternions (x, y, z, w)
  std::vector<double> translations;  // rigid: (B,N,3)
  std::vector<double> affine;        // affine: (B,N,12)
  std::vector<double> inverseBind;   // (N,12), or empty: no skinning matrices
  std::vector<int32_t> pointJoints;  // (P) the joint each point is attached to
  std::vector<double> points;        // (P,3) in that joint's frame
};

struct JointGlobalsRef {
  std::vector<double> globals;    // (B,N,12)
  std::vector<double> skinning;   // (B,N,12), empty without inverse binds
  std::vector<double> positions;  // (B,N,3)
  std::vector<double> points;     // (B,P,3)
};

struct JointLocalGradsRef {
  std::vector<double> rotations, translations, affine;  // shaped as the locals (the other kind's stay empty)
  std::vector<double> points;                           // (P,3)
};

// Checks every shape against the forest and the batch, that point joints are in range and that values are finite;
// throws armature::Error naming the argument.
void validateJointLocals(const JointForest& forest, const JointLocalsRef& locals);

JointGlobalsRef propagateJointsRef(const JointForest& forest, const JointLocalsRef& locals);
// `grads` holds the gradient of a loss for each output (an empty vector: zero).
JointLocalGradsRef propagateJointsBackwardRef(const JointForest& forest, const JointLocalsRef& locals,
                                              const JointGlobalsRef& grads);

}  // namespace armature
