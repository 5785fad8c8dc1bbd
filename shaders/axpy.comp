#version 450
#extension GL_GOOGLE_include_directive : require
#include "shared/axpy_io.h"

layout(local_size_x = AXPY_WORKGROUP_SIZE) in;
layout(std430, binding = AXPY_BINDING_X) readonly buffer X { float x[]; };
layout(std430, binding = AXPY_BINDING_Y) buffer Y { float y[]; };
layout(push_constant) uniform Push { AxpyPush p; };

void main() {
  // Grid-stride: the host caps the group count, so any element count fits the dispatch limits.
  uint stride = gl_NumWorkGroups.x * AXPY_WORKGROUP_SIZE;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) y[i] = p.a * x[i] + y[i];
}
