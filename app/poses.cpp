#include "app/poses.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "armature/body/synth.h"
#include "armature/error.h"

namespace armature::app {

const std::vector<std::string>& posePresetNames() {
  static const std::vector<std::string> names = {"t-pose", "a-pose", "walk", "wave", "sit", "shape", "fist"};
  return names;
}

BodyParams posePreset(const BodyModel& m, const std::string& name) {
  BodyParams p = BodyParams::zeros(m, 1);
  auto set = [&](const char* joint, double x, double y, double z) {
    for (uint32_t j = 0; j < m.jointCount; ++j)
      if (m.jointNames[j] == joint) {
        p.pose[j * 3] = x, p.pose[j * 3 + 1] = y, p.pose[j * 3 + 2] = z;
        return;
      }
  };
  auto arms = [&](double down) {
    set("left_shoulder", 0, 0, -down);
    set("right_shoulder", 0, 0, down);
  };
  auto curl = [&](double amount) {
    for (uint32_t j = 25; j < m.jointCount && j < 55; ++j) {
      bool thumb = m.jointNames[j].find("thumb") != std::string::npos;
      double s = j < 40 ? -1 : 1;
      p.pose[j * 3 + 2] = s * amount * (thumb ? 0.4 : 1.0);
    }
  };
  if (name == "t-pose") return p;
  if (name == "a-pose" || name == "shape") {
    arms(1.0);
    if (name == "shape" && p.shapeComponents >= 3) {
      p.betas[0] = 1.5, p.betas[1] = 2.0, p.betas[2] = -1.0;
      if (p.exprComponents >= 2) p.expression[0] = 2, p.expression[1] = 2;
    }
    return p;
  }
  if (name == "walk") {
    arms(1.2);
    set("left_hip", -0.5, 0, 0);
    set("right_hip", 0.35, 0, 0);
    set("left_knee", 0.25, 0, 0);
    set("right_knee", 0.6, 0, 0);
    set("left_elbow", 0, -0.4, 0);
    set("right_elbow", 0, 0.4, 0);
    set("left_shoulder", 0.4, 0, -1.2);
    set("right_shoulder", -0.4, 0, 1.2);
    curl(0.4);
    return p;
  }
  if (name == "wave") {
    set("left_shoulder", 0, 0, 0.6);
    set("left_elbow", 0, -1.6, 0);
    set("right_shoulder", 0, 0, 1.2);
    set("neck", 0, 0.3, 0);
    set("jaw", 0.25, 0, 0);
    return p;
  }
  if (name == "sit") {
    arms(1.1);
    set("left_hip", -1.5, 0, 0.1);
    set("right_hip", -1.5, 0, -0.1);
    set("left_knee", 1.5, 0, 0);
    set("right_knee", 1.5, 0, 0);
    set("left_elbow", 0, -0.6, 0);
    set("right_elbow", 0, 0.6, 0);
    return p;
  }
  if (name == "fist") {
    arms(0.9);
    set("left_elbow", 0, -1.2, 0);
    set("right_elbow", 0, 1.2, 0);
    curl(1.3);
    return p;
  }
  std::string all;
  for (auto& n : posePresetNames()) all += " " + n;
  throw Error("unknown pose preset '" + name + "' (known:" + all + ")");
}

void walkCycle(const BodyModel& m, double phase, double* pose) {
  auto add = [&](const char* joint, double x, double y, double z) {
    for (uint32_t j = 0; j < m.jointCount; ++j)
      if (m.jointNames[j] == joint) {
        pose[j * 3] += x, pose[j * 3 + 1] += y, pose[j * 3 + 2] += z;
        return;
      }
  };
  double s = std::sin(phase), c = std::cos(phase);
  add("left_hip", -0.45 * s, 0, 0);
  add("right_hip", 0.45 * s, 0, 0);
  add("left_knee", 0.55 * std::max(0.0, c), 0, 0);
  add("right_knee", 0.55 * std::max(0.0, -c), 0, 0);
  add("left_shoulder", 0.35 * s, 0, 0);
  add("right_shoulder", -0.35 * s, 0, 0);
  add("left_elbow", 0, -0.3 - 0.15 * s, 0);
  add("right_elbow", 0, 0.3 - 0.15 * s, 0);
  add("spine2", 0, 0.08 * s, 0);
  add("neck", 0, -0.06 * s, 0);
}

std::string defaultModelPath() {
  if (const char* env = std::getenv("ARMATURE_DEFAULT_MODEL"); env && std::filesystem::exists(env)) return env;
#ifdef ARMATURE_BUILD_DEFAULT_MODEL
  if (std::filesystem::exists(ARMATURE_BUILD_DEFAULT_MODEL)) return ARMATURE_BUILD_DEFAULT_MODEL;
#endif
  return "";
}

BodyModel loadModelOrDefault(const std::string& path) {
  const std::string file = path.empty() ? defaultModelPath() : path;
  return file.empty() ? synthesizeBodyModel({0}) : loadBodyModel(file);
}

std::vector<float> bodyPartColours(const BodyModel& model) {
  const uint32_t V = model.vertexCount, J = model.jointCount;
  std::vector<float> colours(size_t(V) * 4);
  for (uint32_t v = 0; v < V; ++v) {
    const double* w = &model.weights[size_t(v) * J];
    const uint32_t joint = uint32_t(std::max_element(w, w + J) - w);
    const double hue = std::fmod(joint * 0.6180339887, 1.0) * 6;
    for (int c = 0; c < 3; ++c) {  // the hue's red, green and blue at offsets 0, 4 and 2 of its six sectors
      const double channel = std::clamp(std::abs(std::fmod(hue + (6 - 2 * c) % 6, 6.0) - 3.0) - 1.0, 0.0, 1.0);
      colours[size_t(v) * 4 + size_t(c)] = float(0.25 + 0.75 * channel);
    }
    colours[size_t(v) * 4 + 3] = 1.0f;
  }
  return colours;
}

}  // namespace armature::app
