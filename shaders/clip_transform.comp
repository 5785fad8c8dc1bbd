#version 450
// Skinned positions (B × V × 3 floats) to clip space (B × V × 4) for the compute rasteriser (the viewer's
// compute-raster mode).
#extension GL_GOOGLE_include_directive : require
#include "shared/common_io.h"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Positions { float positions[]; };
layout(std430, binding = 1) writeonly buffer Clip { vec4 clip[]; };
layout(push_constant) uniform Push {
  mat4 viewProj;
  uint count;
} pc;

void main() {
  uint v = gl_GlobalInvocationID.x;
  if (v >= pc.count) return;
  clip[v] = pc.viewProj * vec4(positions[v * 3], positions[v * 3 + 1], positions[v * 3 + 2], 1.0);
}
