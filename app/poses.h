#pragma once
// Named pose presets (axis-angle per joint, SMPL-X joint order), shared by the CLI, the viewer and the tests.
#include <string>
#include <vector>

#include "armature/body/body_model.h"

namespace armature::app {
// "t-pose", "a-pose", "walk", "wave", "sit", "shape" (a-pose with shape and expression), "fist".
const std::vector<std::string>& posePresetNames();
// Batch-1 parameters for `name`; throws armature::Error listing the names for an unknown one.
BodyParams posePreset(const BodyModel& model, const std::string& name);
// Adds a looping walk cycle at `phase` (radians of the gait) to a (J,3) pose.
void walkCycle(const BodyModel& model, double phase, double* pose);
}  // namespace armature::app
