#pragma once
// The viewer's posing panels (joint rotations by group, translation, shape, expression) and its mouse camera.
// ImGui calls between NewFrame and Render; shared by the window and any other ImGui front end.
#include <cstdint>
#include <vector>

#include "app/avatar_scene.h"
#include "app/renderer.h"

namespace armature::app {

// The joints of one posing panel: global orientation, body, jaw and eyes, each hand (SMPL-X names).
struct PoseGroup {
  const char* title;
  std::vector<uint32_t> joints;
};
std::vector<PoseGroup> poseGroups(const BodyModel& model);

// Collapsible panels editing the scene's base parameters. activeShape / activeExpr: the sliders for how many
// components the scene blends.
void posePanels(AvatarScene& scene, const std::vector<PoseGroup>& groups, int& activeShape, int& activeExpr);

// Orbit with the left mouse button, pan with the right or middle one, zoom with the wheel, unless ImGui wants
// the mouse.
void orbitCamera(Camera& camera);

}  // namespace armature::app
