#pragma once
// What both backends of the IK step share: its push constants, and the backends' entry points.
#include "armature/ops/ik.h"
#include "shared/ik_io.h"

namespace armature {

IkPush ikPush(const IkStepArgs& args);

namespace vk {
void ikStep(const Exec& exec, const IkStepArgs& args);
}
namespace cuda {
void ikStep(const Exec& exec, const IkStepArgs& args);
}

}  // namespace armature
