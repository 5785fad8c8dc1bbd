#pragma once
// What both backends of the Adam step share: its push constants (the bias corrections computed in double), and the
// backends' entry points.
#include "armature/ops/adam.h"
#include "shared/adam_io.h"

namespace armature {

AdamPush adamPush(const AdamArgs& args);

namespace vk {
void adamStep(const Exec& exec, const AdamArgs& args);
}
namespace cuda {
void adamStep(const Exec& exec, const AdamArgs& args);
}

}  // namespace armature
