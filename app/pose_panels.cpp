#include "app/pose_panels.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace armature::app {

// By name prefix or exact name (SMPL-X order).
std::vector<PoseGroup> poseGroups(const BodyModel& m) {
  std::vector<PoseGroup> g = {{"Global orientation and translation", {0}},
                              {"Body", {}},
                              {"Jaw and eyes", {}},
                              {"Left hand", {}},
                              {"Right hand", {}}};
  for (uint32_t j = 1; j < m.jointCount; ++j) {
    const std::string& n = m.jointNames[j];
    bool hand = j >= 25 || n.find("hand") != std::string::npos;
    if (n == "jaw" || n.find("eye") != std::string::npos)
      g[2].joints.push_back(j);
    else if (hand && n.rfind("left", 0) == 0)
      g[3].joints.push_back(j);
    else if (hand && n.rfind("right", 0) == 0)
      g[4].joints.push_back(j);
    else
      g[1].joints.push_back(j);
  }
  return g;
}

void posePanels(AvatarScene& scene, const std::vector<PoseGroup>& groups, int& activeShape, int& activeExpr) {
  // While a motion or the walk loop plays, the controls show the frame on screen (read-only): editing the base
  // pose then would change nothing visible.
  const bool playing = scene.playing();
  BodyParams shown;
  if (playing) {
    shown = scene.shown();
    ImGui::TextDisabled("showing the playing frame: pause the walk or close the motion to edit");
    ImGui::BeginDisabled();
  }
  BodyParams& p = playing ? shown : scene.base();
  const float pi = 3.14159265f;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!ImGui::CollapsingHeader(groups[g].title)) continue;
    ImGui::PushID(int(g));
    if (ImGui::Button("reset group")) {
      for (uint32_t j : groups[g].joints)
        for (int k = 0; k < 3; ++k) p.pose[j * 3 + size_t(k)] = 0;
      if (g == 0) std::fill(p.transl.begin(), p.transl.end(), 0.0);
    }
    if (g == 0) {
      float t[3] = {float(p.transl[0]), float(p.transl[1]), float(p.transl[2])};
      if (ImGui::SliderFloat3("translation (m)", t, -2, 2))
        for (int k = 0; k < 3; ++k) p.transl[size_t(k)] = t[k];
    }
    // Axis-angle per joint (smplx's own parameterisation) shown in degrees about x, y and z, each labelled: drag
    // at half a degree a pixel, or double-click to type; ±180° for the root, ±143° (2.5 rad) elsewhere.
    const float spacing = ImGui::GetStyle().ItemInnerSpacing.x;
    const float width = (ImGui::GetContentRegionAvail().x * 0.68f - 2 * spacing) / 3;
    static const char* const ids[3] = {"##x", "##y", "##z"};
    static const char* const formats[3] = {"x %.0f\u00b0", "y %.0f\u00b0", "z %.0f\u00b0"};
    for (uint32_t j : groups[g].joints) {
      ImGui::PushID(int(j));
      const float limit = (j == 0 ? pi : 2.5f) * 180 / pi;
      for (int k = 0; k < 3; ++k) {
        if (k) ImGui::SameLine(0, spacing);
        ImGui::SetNextItemWidth(width);
        float degrees = float(p.pose[j * 3 + size_t(k)]) * 180 / pi;
        if (ImGui::DragFloat(ids[k], &degrees, 0.5f, -limit, limit, formats[k], ImGuiSliderFlags_AlwaysClamp))
          p.pose[j * 3 + size_t(k)] = degrees * pi / 180;
      }
      ImGui::SameLine(0, spacing);
      ImGui::TextUnformatted(scene.model().jointNames[j].c_str());
      ImGui::PopID();
    }
    ImGui::PopID();
  }
  if (playing) ImGui::EndDisabled();
  if (ImGui::CollapsingHeader("Shape")) {
    if (ImGui::SliderInt("active shape", &activeShape, 0, int(scene.model().shapeCount)))
      scene.setComponentCounts(uint32_t(activeShape), scene.exprComponents());
    if (ImGui::Button("reset shape")) std::fill(scene.base().betas.begin(), scene.base().betas.end(), 0.0);
    for (uint32_t k = 0; k < scene.shapeComponents(); ++k) {
      float b = float(scene.base().betas[k]);
      if (ImGui::SliderFloat(("beta " + std::to_string(k)).c_str(), &b, -3, 3)) scene.base().betas[k] = b;
    }
  }
  if (ImGui::CollapsingHeader("Expression")) {
    if (ImGui::SliderInt("active expression", &activeExpr, 0, int(scene.model().exprCount)))
      scene.setComponentCounts(scene.shapeComponents(), uint32_t(activeExpr));
    if (ImGui::Button("reset expression"))
      std::fill(scene.base().expression.begin(), scene.base().expression.end(), 0.0);
    for (uint32_t k = 0; k < scene.exprComponents(); ++k) {
      float e = float(scene.base().expression[k]);
      if (ImGui::SliderFloat(("expression " + std::to_string(k)).c_str(), &e, -3, 3)) scene.base().expression[k] = e;
    }
  }
}

void orbitCamera(Camera& camera) {
  ImGuiIO& io = ImGui::GetIO();
  if (!io.WantCaptureMouse) {
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
      camera.yaw -= io.MouseDelta.x * 0.008f;
      camera.pitch = std::clamp(camera.pitch + io.MouseDelta.y * 0.008f, -1.5f, 1.5f);
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Right) || ImGui::IsMouseDragging(ImGuiMouseButton_Middle)) {
      float s = camera.distance * 0.0015f;
      camera.target[0] -= std::cos(camera.yaw) * io.MouseDelta.x * s;
      camera.target[2] += std::sin(camera.yaw) * io.MouseDelta.x * s;
      camera.target[1] += io.MouseDelta.y * s;
    }
    if (io.MouseWheel != 0) camera.distance = std::clamp(camera.distance * std::pow(0.9f, io.MouseWheel), 0.3f, 80.f);
  }
}

}  // namespace armature::app
