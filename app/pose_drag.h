#pragma once
// Posing by dragging (the viewer's Ctrl + left mouse): pick the joint under the mouse, drag it in the image plane
// while inverse kinematics (armature/ops/ik.h) moves the pose on the scene's backend, pin joints where they are,
// undo and redo. The window drives it from the mouse; tests drive it through the same calls with scripted pixels.
#include <glm/glm.hpp>

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "app/avatar_scene.h"
#include "app/profiler.h"
#include "armature/ops/ik.h"

namespace armature::app {

// A view as the renderer draws it: its view-projection (column-major, Vulkan clip space) and pixel size.
struct ViewRay {
  std::array<float, 16> viewProj{};
  float width = 1, height = 1;
};

class PoseDrag {
 public:
  explicit PoseDrag(AvatarScene& scene);
  ~PoseDrag();

  // The joint under pixel (x, y): where the ray hits avatar 0's surface, the joint with the largest skinning weight
  // at the hit triangle's nearest corner; off the surface, the skeleton joint drawn within 12 pixels. nullopt:
  // neither (or avatar 0 is playing a motion, which has no pose to edit).
  std::optional<uint32_t> pick(const ViewRay& view, float x, float y) const;
  // The joint of avatar 0 at pixel (x, y) of `view` (for scripted drags), nullopt when behind the camera.
  std::optional<std::array<float, 2>> pixelOf(const ViewRay& view, uint32_t joint) const;

  std::optional<uint32_t> selected() const { return m_selected; }
  void select(std::optional<uint32_t> joint) { m_selected = joint; }
  // Pins hold a joint where it was when the drag began (at most ikMaxTargets − 1).
  const std::vector<uint32_t>& pins() const { return m_pins; }
  void togglePin(uint32_t joint);

  // A drag of the selected joint: begin() keeps the pose for undo and the joint's depth in `view`; move() puts the
  // target under pixel (x, y) at that depth; step() runs `iterations` IK steps and writes the pose into base().
  void begin(const ViewRay& view);
  void move(float x, float y);
  void step(uint32_t iterations);
  // The last step()'s "ik" stage: GPU time on the GPU backends (timestamp queries, CUDA events), host time on the CPU
  // reference; nullopt before the first step of a drag.
  const std::optional<Span>& lastStep() const { return m_lastStep; }
  void end();
  bool dragging() const { return m_dragging; }
  const IkProblem& problem() const { return m_problem; }  // the drag's targets (the selected joint's first)

  // The selected joint's rotation rings: for its own axis `axis` (0 x, 1 y, 2 z, in the joint's frame on screen),
  // `segments` pixels around a circle of `radius` metres about it; empty where nothing is selected or the circle
  // is behind the camera.
  std::vector<std::array<float, 2>> ring(const ViewRay& view, int axis, double radius, int segments = 48) const;
  // Turns the selected joint about its own axis by `radians` (a ring's drag): its local rotation R becomes
  // R·Rot(axis, radians), so the joint's frame turns about that axis as drawn. beginRotate() keeps the pose for undo.
  void beginRotate();
  void rotate(int axis, double radians);

  // Undo and redo the drags, turns, resets and mirrors (the base pose, exactly as it was).
  bool undo();
  bool redo();
  void resetJoint(uint32_t joint);  // back to its rest rotation (undoable)
  // Copies each left joint's rotation onto its right twin (or right onto left), reflected in the body's sagittal
  // plane (x → −x: the axis-angle (a, b, c) becomes (a, −b, −c)); joints named left_…/right_… pair up. Undoable.
  void mirror(bool leftOntoRight);

 private:
  struct Solvers;
  BodyParams body() const;  // avatar 0's base parameters, batch 1
  glm::dvec3 offset() const;
  const BodyOutput& forward() const;
  glm::dvec3 jointAt(uint32_t joint) const;  // in model space
  void remember();
  bool restore(std::vector<BodyParams>& from, std::vector<BodyParams>& to);
  AvatarScene& m_scene;
  std::optional<uint32_t> m_selected;
  std::vector<uint32_t> m_pins;
  bool m_dragging = false, m_started = false;
  IkProblem m_problem;
  ViewRay m_view;
  float m_depth = 0;  // the dragged joint's NDC depth when the drag began
  std::vector<BodyParams> m_undo, m_redo;
  std::unique_ptr<Solvers> m_solvers;
  std::optional<Span> m_lastStep;
  mutable std::optional<BodyOutput> m_forward;  // forward()'s, of m_forwardOf
  mutable BodyParams m_forwardOf;
};

}  // namespace armature::app
