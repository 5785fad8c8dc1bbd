#version 450
// Generalised winding numbers and, on request, distances (shared/winding_io.h): a point per invocation, the faces
// in order.
#extension GL_GOOGLE_include_directive : require
#include "shared/winding_io.h"

layout(local_size_x = WINDING_WORKGROUP_SIZE) in;
layout(std430, binding = WINDING_BINDING_POINTS) readonly buffer Points { float points[]; };
layout(std430, binding = WINDING_BINDING_VERTICES) readonly buffer Vertices { float vertices[]; };
layout(std430, binding = WINDING_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = WINDING_BINDING_OUT) writeonly buffer Out { float windings[]; };
layout(std430, binding = WINDING_BINDING_DISTANCES) writeonly buffer Distances { float distances[]; };
layout(push_constant) uniform Push { WindingPush p; };

shared float sCorner[WINDING_TILE * 9];

void main() {
  const uint lid = gl_LocalInvocationID.x, q = gl_GlobalInvocationID.x;
  const bool inRange = q < p.points;
  const float x = inRange ? points[q * 3u] : 0.0, y = inRange ? points[q * 3u + 1u] : 0.0,
              z = inRange ? points[q * 3u + 2u] : 0.0;
  float sum = 0.0, nearest2 = 3.4e38;
  for (uint base = 0u; base < p.faces; base += WINDING_TILE) {
    barrier();
    const uint f = base + lid;
    if (f < p.faces)
      for (uint k = 0u; k < 3u; ++k)
        for (uint c = 0u; c < 3u; ++c) sCorner[lid * 9u + k * 3u + c] = vertices[uint(faces[f * 3u + k]) * 3u + c];
    barrier();
    const uint count = min(uint(WINDING_TILE), p.faces - base);
    for (uint t = 0u; t < count; ++t) {
      const uint o = t * 9u;
      sum += windingSolidAngle(sCorner[o] - x, sCorner[o + 1u] - y, sCorner[o + 2u] - z, sCorner[o + 3u] - x,
                               sCorner[o + 4u] - y, sCorner[o + 5u] - z, sCorner[o + 6u] - x, sCorner[o + 7u] - y,
                               sCorner[o + 8u] - z);
      if (p.distances != 0u)
        nearest2 = min(nearest2, windingTriangleDistance2(sCorner[o] - x, sCorner[o + 1u] - y, sCorner[o + 2u] - z,
                                                          sCorner[o + 3u] - x, sCorner[o + 4u] - y, sCorner[o + 5u] - z,
                                                          sCorner[o + 6u] - x, sCorner[o + 7u] - y, sCorner[o + 8u] - z));
    }
  }
  if (!inRange) return;
  windings[q] = sum * 0.07957747154594767;  // 1/4π
  if (p.distances != 0u) distances[q] = sqrt(nearest2);
}
