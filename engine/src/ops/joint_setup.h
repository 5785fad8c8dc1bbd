#pragma once
// One pass of a joint forest's analysis on the GPU (shaders/shared/joint_propagation_setup.h): vk::jointsSetupPass,
// cuda::jointsSetupPass; DeviceJointForest plans them.
#include "armature/device.h"
#include "shared/joint_propagation_setup.h"

namespace armature {

struct JointsSetupPass {
  JointsSetupPush push{};
  DeviceView words, tables;
};
namespace vk {
void jointsSetupPass(const Exec& exec, const JointsSetupPass& pass);
}
namespace cuda {
void jointsSetupPass(const Exec& exec, const JointsSetupPass& pass);
}

}  // namespace armature
