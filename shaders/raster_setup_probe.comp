#version 450
// Test probe: rasterSetup of every triangle, written out so a test can compare the GPU's fixed-point vertices,
// depth levels and boxes with the CPU's bit for bit (the face ids depend on them).
#define RASTER_FP64 1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_ARB_gpu_shader_fp64 : enable
#include "shared/raster_setup.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };  // three per triangle
layout(std430, binding = 1) writeonly buffer Setups { RasterTri setups[]; };
layout(push_constant) uniform Push { RasterPush p; };

void main() {
  uint f = gl_GlobalInvocationID.x;
  if (f >= p.triangleCount) return;
  vec4 a = positions[f * 3], b = positions[f * 3 + 1], c = positions[f * 3 + 2];
  setups[f] = rasterSetup(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w, p.width, p.height);
}
