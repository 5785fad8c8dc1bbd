#pragma once
// Named pose presets (axis-angle per joint, SMPL-X joint order), the default avatar and its paint, shared by the
// CLI, the viewer and the tests.
#include <string>
#include <vector>

#include "armature/body/body_model.h"

namespace armature::app {
// "t-pose", "a-pose", "walk", "wave", "sit", "shape" (a-pose with shape and expression), "fist".
const std::vector<std::string>& posePresetNames();
// Batch-1 parameters for `name`; throws armature::Error listing the names for an unknown one.
BodyParams posePreset(const BodyModel& model, const std::string& name);
// The default avatar's file: ARMATURE_DEFAULT_MODEL, else the one the build generated; empty where neither exists.
std::string defaultModelPath();
// The model at `path`, or (empty) the default avatar, synthesised where no file of it exists.
BodyModel loadModelOrDefault(const std::string& path);
// The avatar painted by body part, what `armature bake` and the viewer's baked-texture mode bake: per vertex
// (r, g, b, 1), a hue per joint (golden-ratio steps, so neighbours differ), that of the joint weighing most on it.
std::vector<float> bodyPartColours(const BodyModel& model);
// Adds a looping walk cycle at `phase` (radians of the gait) to a (J,3) pose.
void walkCycle(const BodyModel& model, double phase, double* pose);
}  // namespace armature::app
