#version 450
// Test probe: the float-only shaders' (no doubles) per-vertex arithmetic, written out so a test can compare it with
// the CPU's bit for bit: rasterVertex (grid position and depth level) and the resolve's NDC (rasterDivide).
#define RASTER_FP64 0
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "shared/raster_setup.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) writeonly buffer Vertices { RasterVertex vertices[]; };
layout(std430, binding = 2) writeonly buffer Ndc { vec2 ndc[]; };
layout(push_constant) uniform Push { RasterPush p; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= p.vertexCount) return;
  vec4 v = positions[i];
  vertices[i] = rasterVertex(v.x, v.y, v.z, v.w, p.width, p.height);
  ndc[i] = vec2(rasterDivide(v.x, v.w), rasterDivide(v.y, v.w));
}
