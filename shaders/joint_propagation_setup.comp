#version 450
// A joint forest analysed on the GPU: one pass of shared/joint_propagation_setup.h per dispatch.
#extension GL_GOOGLE_include_directive : require
#include "shared/joint_propagation_setup.h"

layout(local_size_x = JOINTS_SETUP_THREADS) in;
layout(push_constant) uniform Push { JointsSetupPush p; };

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.items; i += gl_NumWorkGroups.x * JOINTS_SETUP_THREADS)
    jointsSetupStep(p, i);
}
