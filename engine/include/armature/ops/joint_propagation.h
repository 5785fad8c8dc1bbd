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
//
// On the GPU (propagateJoints / propagateJointsBackward, CUDA and Vulkan, float), over the forest's heavy-path
// decomposition (shaders/shared/joint_propagation_io.h): forward, one segmented scan of all paths' locals, then an elementwise
// pass per later generation; backward, a segmented scan per generation, whatever the paths' lengths. A small forest
// (a body's skeleton) is one dispatch, skeletons held whole in shared memory. The backward's sums have a fixed order
// (no atomics: the same bits on every run). Attached points are moved after the propagation, and their gradient
// joins the globals' before it.
#include <cstdint>
#include <vector>

#include "armature/device.h"
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

// ---- GPU ------------------------------------------------------------------------------------------------------

// A forest's tables on a device, made once per topology: order (path tops marked), parents, each joint's light
// children (the children that start paths) as CSR, and per place in the order its path top's parent; and the joints
// points are attached to, if any (each in [0, N): else armature::Error), with each joint's points as CSR.
class DeviceJointForest {
 public:
  // From a forest analysed on the host (JointForest).
  DeviceJointForest(Device& device, const JointForest& forest, const std::vector<int32_t>& pointJoints = {});
  // From the parents alone: a forest of more than kSmallJoints joints is analysed on the GPU by `setup`
  // (shaders/shared/joint_propagation_setup.h: the same tables as JointForest's, at a fraction of its cost for large forests),
  // a smaller one (or any, for Backend::Cpu) on the host. Bad parents get JointForest's errors (the joint, or the
  // cycle).
  DeviceJointForest(Device& device, Backend setup, const std::vector<int32_t>& parents,
                    const std::vector<int32_t>& pointJoints = {});

  uint32_t size() const { return m_joints; }
  // Generation g of the decomposition: joints [generationStart(g), generationStart(g + 1)) of order().
  uint32_t generations() const { return uint32_t(m_generationStart.size() - 1); }
  uint32_t generationStart(uint32_t g) const { return m_generationStart[g]; }
  uint32_t generationLength(uint32_t g) const { return m_generationStart[g + 1] - m_generationStart[g]; }
  uint32_t paths() const { return m_paths; }

  // Parts of one buffer, tables(), laid out as shared/joint_propagation_setup.h's JointsSetupTables.
  DeviceView parents() const;
  DeviceView order() const;
  DeviceView lightStart() const;
  DeviceView lightChildren() const;  // N words, of which lightStart()[N] are used
  DeviceView topParents() const;     // int (N): per order() position, its path top's parent (-1 for a root's path)
  const DeviceBuffer& tables() const { return m_tables; }
  static constexpr uint32_t kSmallJoints = 220;  // the most joints of a small forest (held whole in shared memory)
  // A small forest: its joints by depth then each level's start (depth() levels), and every joint's children as
  // CSR (the small-forest dispatch's tables); else empty.
  bool small() const { return m_joints <= kSmallJoints; }
  uint32_t depth() const { return m_depth; }
  DeviceView levels() const { return m_levels.view(); }
  DeviceView childStart() const { return m_childStart.view(); }
  DeviceView children() const { return m_children.view(); }
  // The most light children of one joint (the backward gathers them in one invocation).
  uint32_t widestFanOut() const { return m_widestFanOut; }
  uint32_t points() const { return m_points; }
  DeviceView pointJoints() const { return m_pointJoints.view(); }
  DeviceView pointStart() const { return m_pointStart.view(); }
  DeviceView pointOrder() const { return m_pointOrder.view(); }

  // The scratch (32-bit words, as floats) a batch's forward or backward needs: the scan's tile statuses and records,
  // then with points the globals' whole gradient (B,N,12).
  size_t scratchFloats(uint32_t batch) const;
  size_t scanScratchFloats(uint32_t batch) const;   // the scan's part
  size_t scratchStatusWords(uint32_t batch) const;  // the first words, zeroed by each call

 private:
  void attachPoints(Device& device, const std::vector<int32_t>& pointJoints);
  void analyseOnDevice(Device& device, Backend setup, const std::vector<int32_t>& parents);

  uint32_t m_joints = 0, m_paths = 0, m_depth = 0, m_widestFanOut = 0, m_points = 0;
  std::vector<uint32_t> m_generationStart{0};
  DeviceBuffer m_tables, m_levels, m_childStart, m_children;
  DeviceBuffer m_pointJoints, m_pointStart, m_pointOrder;
};

// Float views shaped as the reference's vectors; an empty view is an absent optional one.
struct JointPropagationArgs {
  const DeviceJointForest* forest = nullptr;
  uint32_t batch = 1;
  LocalTransform kind = LocalTransform::Rigid;
  DeviceView rotations, translations;  // rigid: (B,N,4), (B,N,3)
  DeviceView affine;                   // affine: (B,N,12)
  DeviceView inverseBind;              // (N,12): needed for skinning
  DeviceView globals;                  // out (B,N,12)
  DeviceView skinning;                 // out (B,N,12), optional
  DeviceView positions;                // out (B,N,3), optional
  DeviceView points;                   // (P,3) in their joints' frames (P = forest->points())
  DeviceView pointsOut;                // out (B,P,3), optional
  DeviceView scratch;                  // forest->scratchFloats(batch) floats
};
// Records (Vulkan) or enqueues (CUDA); throws armature::Error for a bad argument, before any work.
void propagateJoints(const Exec& exec, const JointPropagationArgs& args);

struct JointPropagationBackwardArgs {
  const DeviceJointForest* forest = nullptr;
  uint32_t batch = 1;
  LocalTransform kind = LocalTransform::Rigid;
  DeviceView rotations, translations, affine, inverseBind;  // the forward's inputs
  DeviceView globals;                                       // the forward's output
  DeviceView points;                                        // (P,3), with gradPointsOut
  DeviceView gradGlobals, gradSkinning, gradPositions;      // optional (at least one of these four)
  DeviceView gradPointsOut;                                 // (B,P,3)
  DeviceView adjoint;                                       // scratch (B,N,12)
  DeviceView scratch;                                       // forest->scratchFloats(batch) floats
  DeviceView gradRotations, gradTranslations;               // out, rigid
  DeviceView gradAffine;                                    // out, affine
  DeviceView gradPoints;                                    // out (P,3) (summed over the batch), with gradPointsOut
};
void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& args);

}  // namespace armature
