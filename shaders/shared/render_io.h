// The avatar renderer's push constants, shared by mesh.vert/mesh.frag and app/renderer.cpp.
#ifndef ARMATURE_RENDER_IO_H
#define ARMATURE_RENDER_IO_H
#include "common_io.h"

#define RENDER_MODE_MESH 0u     // indexed draw of the skinned avatars, one instance per avatar
#define RENDER_MODE_GROUND 1u   // 6 vertices: the ground plane with a grid
#define RENDER_MODE_LINES 2u    // the mesh again as lines (wireframe overlay)
#define RENDER_MODE_BONES 3u    // joint-to-parent lines from the joint buffer (skeleton overlay)
#define RENDER_MODE_JOINTS 4u   // one point per joint (joint markers)
#define RENDER_MODE_VISIBILITY 5u  // a fullscreen pass shading the compute rasteriser's visibility buffer

#if defined(__cplusplus)
struct RenderPush {
  float viewProj[16];   // column-major, world -> clip (Vulkan: y down, z in [0,1])
  float camera[4];      // xyz: world position of the eye
  uint mode;            // RENDER_MODE_*
  uint vertexCount;     // vertices per avatar in the position buffer
  float floorY;         // ground height
  uint width;           // RENDER_MODE_VISIBILITY: the visibility buffer's row length
};
static_assert(sizeof(RenderPush) == 96);

// clip_transform.comp: skinned positions (3 floats each) to the rasteriser's clip space (4 floats each).
struct ClipPush {
  float viewProj[16];   // column-major, world -> the rasteriser's clip space
  uint count;           // vertices
  uint pad[3];
};
static_assert(sizeof(ClipPush) == 80);
#else
layout(push_constant) uniform RenderPushBlock {
  mat4 viewProj;
  vec4 camera;
  uint mode;
  uint vertexCount;
  float floorY;
  uint width;
} pc;
#endif
#endif
