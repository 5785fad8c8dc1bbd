#pragma once
// Inverse kinematics for one body: move chosen joints to targets (a dragged hand, pinned feet) by changing the pose,
// and optionally the translation, with a weak prior toward a given pose and per-component joint limits. Each step
// is one damped least-squares update on the skinning's exact Jacobian (shaders/shared/ik_io.h has the formula): a
// batched skinning forward and backward (one row per residual, the backward's joint gradient a unit vector) and
// one small solve, all on the GPU (CUDA and Vulkan); ikStepRef is the same step in double on the CPU.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "armature/body/body_model.h"
#include "armature/device.h"
#include "armature/ops/skinning.h"

namespace armature {

struct IkTarget {
  uint32_t joint = 0;
  std::array<double, 3> position{};  // where the joint should be (model space, metres)
  double weight = 1;                 // the residual's scale: a pin at 10 holds 10× harder than a target at 1
};

struct IkProblem {
  std::vector<IkTarget> targets;     // 1 … ikMaxTargets
  std::vector<double> prior;         // (J,3): the pose the prior pulls toward; empty: the start pose
  std::vector<double> lower, upper;  // (J,3): each axis-angle component's range; empty: ±π
  std::vector<uint8_t> freeJoints;   // (J): 1 where the solve may turn the joint; empty: every joint but the root
  bool translation = false;          // the translation is free too
  double priorWeight = 1e-4;         // μ, per rad²: small, so targets are reached to well under a millimetre
  double damping = 1e-3;             // λ: Levenberg's damping, for steps near singular poses (a straight arm)
};

constexpr uint32_t ikMaxTargets = 8;

// Checks the problem against a model of `jointCount` joints; throws armature::Error naming what is wrong.
void validateIkProblem(uint32_t jointCount, const IkProblem& problem);
// One step in double on the CPU: body's pose and transl (batch 1) move toward the targets.
void ikStepRef(const BodyModel& model, BodyParams& body, const IkProblem& problem);

// The step's device arguments (IkSolver fills them; shaders/shared/ik_io.h has the layouts).
struct IkStepArgs {
  uint32_t targetCount = 1, jointCount = 0;
  DeviceView joints, gradPose, gradTransl;  // the forward's joints and the backward's Jacobian rows
  DeviceView targets;                       // IkTargetIO words
  DeviceView pose, transl;                  // updated, every row
  DeviceView bounds;                        // (4, 3J+3) floats: prior, lower, upper, free
  double priorWeight = 0, damping = 0;
};
// Records (Vulkan) or enqueues (CUDA) the solve after a forward and backward.
void ikStep(const Exec& exec, const IkStepArgs& args);

// A body's IK on one backend of a Device: start() at a pose, moveTargets() as the mouse moves, iterate() each frame.
// Owns a skinning of the model sized for the residual rows (its tables are uploaded once). Nothing waits on the host.
class IkSolver {
 public:
  IkSolver(Device& device, Backend backend, const BodyModel& model, uint32_t shapeComponents, uint32_t exprComponents);
  // Starts at `body` (batch 1; its shape and expression stay fixed) under `problem`, uploaded on exec.
  void start(const Exec& exec, const BodyParams& body, const IkProblem& problem);
  // The targets' new positions (same joints, weights and count as start()'s), uploaded on exec.
  void moveTargets(const Exec& exec, std::span<const IkTarget> targets);
  // Records or enqueues `iterations` steps; each reads the last one's pose.
  void iterate(const Exec& exec, uint32_t iterations);
  DeviceView pose() const;    // (J,3) floats: the solution so far
  DeviceView transl() const;  // (3)
  // The solution into body's pose and transl (batch 1), waiting for the work submitted so far (read-back).
  void download(BodyParams& body) const;
  Backend backend() const { return m_skinning.backend(); }

 private:
  Skinning m_skinning;
  uint32_t m_S, m_E, m_J, m_V, m_rows = 0;
  IkProblem m_problem;
  DeviceBuffer m_pose, m_betas, m_expression, m_transl, m_vertices, m_joints;
  DeviceBuffer m_gradVertices, m_gradJoints, m_gradPose, m_gradBetas, m_gradExpression, m_gradTransl;
  DeviceBuffer m_targets, m_bounds;
};

}  // namespace armature
