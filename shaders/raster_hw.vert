#version 450
// The hardware rasteriser's visibility buffer (HardwareRasterVk): no vertex attributes; vertex i is corner i % 3
// of face i / 3, pulled from the same position (N,4) and face (M,3) buffers as the compute rasteriser.
#extension GL_GOOGLE_include_directive : require
#include "shared/raster_io.h"

layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(push_constant) uniform Push { RasterPush p; };
layout(location = 0) out vec2 bary;      // (b0, b1); perspective-correct interpolation
layout(location = 1) flat out int face1;  // face + 1

void main() {
  int v = faces[gl_VertexIndex];
  int k = gl_VertexIndex % 3;
  face1 = gl_VertexIndex / 3 + 1;
  bary = vec2(k == 0 ? 1.0 : 0.0, k == 1 ? 1.0 : 0.0);
  if (v < 0 || uint(v) >= p.vertexCount) {
    gl_Position = vec4(0.0);  // an out-of-range id: the triangle degenerates and draws nothing
    return;
  }
  vec4 c = positions[v];
  gl_Position = vec4(c.x, c.y, (c.z + c.w) * 0.5, c.w);  // z/w from [-1, 1] (the original's) to Vulkan's [0, 1]
}
