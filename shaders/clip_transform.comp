#version 450
// Skinned positions (B × V × 3 floats) to clip space (B × V × 4) for the compute rasteriser (the viewer's
// compute-raster mode), and the pixel bounds of every vertex in front of the eye, so the shading pass covers only
// the pixels the avatars can reach. A vertex at w <= 0 makes the bounds the whole image (conservative).
// CLIP_BOUNDS_ONLY (the hardware rasteriser's frames, where depth is initialised over the bounds only): the bounds
// alone, binding 1 unread.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#ifndef CLIP_BOUNDS_ONLY
#define CLIP_BOUNDS_ONLY 0
#endif
#include "shared/render_io.h"

layout(local_size_x = CLIP_BOUNDS_GROUP) in;
layout(std430, binding = CLIP_TRANSFORM_BINDING_POSITIONS) readonly buffer Positions { float positions[]; };
#if !CLIP_BOUNDS_ONLY
layout(std430, binding = CLIP_TRANSFORM_BINDING_CLIP) writeonly buffer Clip { vec4 clip[]; };
#endif
layout(std430, binding = CLIP_TRANSFORM_BINDING_BOUNDS) buffer Bounds { uint bounds[]; };  // minX, minY, maxX, maxY (filled ~0, ~0, 0, 0)
layout(push_constant) uniform Push {
  mat4 viewProj;
  uint count;
  uint width;
  uint height;
} cp;

shared uint groupBounds[4];

void main() {
  if (gl_LocalInvocationIndex == 0) groupBounds[0] = groupBounds[1] = ~0u, groupBounds[2] = groupBounds[3] = 0u;
  barrier();
  uint lo[2] = uint[](~0u, ~0u), hi[2] = uint[](0u, 0u);
  for (uint v = gl_GlobalInvocationID.x; v < cp.count; v += gl_NumWorkGroups.x * CLIP_BOUNDS_GROUP) {
    vec4 c = cp.viewProj * vec4(positions[v * 3], positions[v * 3 + 1], positions[v * 3 + 2], 1.0);
#if !CLIP_BOUNDS_ONLY
    clip[v] = c;
#endif
    uint size[2] = uint[](cp.width, cp.height);
    for (int a = 0; a < 2; ++a) {
      bool front = c.w > 0.0;
      lo[a] = min(lo[a], front ? clipBoundsLow(c[a] / c.w, size[a]) : 0u);
      hi[a] = max(hi[a], front ? clipBoundsHigh(c[a] / c.w, size[a]) : size[a] - 1u);
    }
  }
  atomicMin(groupBounds[0], lo[0]), atomicMin(groupBounds[1], lo[1]);
  atomicMax(groupBounds[2], hi[0]), atomicMax(groupBounds[3], hi[1]);
  barrier();
  if (gl_LocalInvocationIndex == 0) {
    atomicMin(bounds[0], groupBounds[0]), atomicMin(bounds[1], groupBounds[1]);
    atomicMax(bounds[2], groupBounds[2]), atomicMax(bounds[3], groupBounds[3]);
  }
}
