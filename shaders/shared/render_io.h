// The avatar renderer's push constants and bindings, shared by its shaders and app/renderer.cpp.
#ifndef ARMATURE_RENDER_IO_H
#define ARMATURE_RENDER_IO_H
#include "common_io.h"

#define RENDER_MODE_MESH 0u     // indexed draw of the skinned avatars, one instance per avatar
#define RENDER_MODE_BACKGROUND 1u  // background.vert/.frag: 3 vertices over every pixel, or 6 over the bounds
#define RENDER_MODE_LINES 2u    // the mesh again as lines (wireframe overlay)
#define RENDER_MODE_BONES 3u    // joint-to-parent lines from the joint buffer (skeleton overlay)
#define RENDER_MODE_JOINTS 4u   // one point per joint (joint markers)
#define RENDER_MODE_VISIBILITY 5u  // a fullscreen pass shading the compute rasteriser's visibility buffer

#if defined(__cplusplus)
struct RenderPush {
  float viewProj[16];   // column-major, world -> clip (Vulkan: y down, z in [0,1])
  float camera[4];      // xyz: world position of the eye
  float clear[4];       // RENDER_MODE_BACKGROUND: rgb, the colour where no ground is
  uint mode;            // RENDER_MODE_*
  uint vertexCount;     // vertices per avatar in the position buffer
  float floorY;         // ground height
  uint width;           // RENDER_MODE_VISIBILITY: the visibility buffer's size
  uint height;
  uint textureSize;     // textured variants: texels per side of the surface texture
  uint faceCount;       // textured variants: faces per avatar
  uint ground;          // RENDER_MODE_BACKGROUND: 1 draws the floor's grid
};
static_assert(sizeof(RenderPush) == 128);  // the guaranteed push-constant size

// clip_transform.comp: skinned positions (3 floats each) to the rasteriser's clip space (4 floats each).
struct ClipPush {
  float viewProj[16];   // column-major, world -> the rasteriser's clip space
  uint count;           // vertices
  uint width, height;   // the image: clip_transform also bounds the pixels the vertices can cover
  uint pad;
};
static_assert(sizeof(ClipPush) == 80);
#elif !defined(RENDER_IO_OWN_PUSH)  // clip_transform.comp declares its own
layout(push_constant) uniform RenderPushBlock {
  mat4 viewProj;
  vec4 camera;
  vec4 clear;
  uint mode;
  uint vertexCount;
  float floorY;
  uint width;
  uint height;
  uint textureSize;
  uint faceCount;
  uint ground;
} pc;
#endif

// shade_frame.comp: the compute-raster mode's frame in one compute pass.
#define SHADE_GROUND 1u
#define SHADE_BGRA 2u
#define SHADE_UI 4u       // composite the UI layer (binding 5) over uiRect
#define SHADE_AVATARS 8u  // the visibility buffer's avatars (bindings 1-3); without it, the background alone
#if defined(__cplusplus)
struct ShadePush {
  float inverseViewProj[16];  // column-major, clip -> world
  float camera[4];
  float clear[4];
  uint width, height;
  float floorY;
  uint flags;
  uint uiRect[4];             // SHADE_UI: x0, y0, x1, y1 (pixels, x1/y1 exclusive)
};
static_assert(sizeof(ShadePush) == 128);  // the guaranteed push-constant size
#endif

// Bindings of the viewer's programs, shared by the shaders and app/ (whose views come in this order).
// mesh.vert/mesh.frag and their textured variants (MESH_TEXTURED; the corners one draws 3F corners per avatar).
#define MESH_BINDING_POSITIONS 0
#define MESH_BINDING_FACES 1    // one avatar's (F,3) vertex ids
#define MESH_BINDING_UVS 2      // (F,3,2): corner k of face f at (u, v), v down
#define MESH_BINDING_TEXELS 3   // size² × 4 floats: colour premultiplied by coverage (the baker's texture)
#define MESH_BINDINGS 4
#define MESH_PLAIN_BINDINGS 1   // the untextured shaders read the positions only
// visibility.vert/visibility.frag (RENDER_MODE_VISIBILITY)
#define VISIBILITY_BINDING_POSITIONS 0
#define VISIBILITY_BINDING_FACES 1
#define VISIBILITY_BINDING_FACE_IDS 2
#define VISIBILITY_BINDING_BARY 3
#define VISIBILITY_BINDING_BOUNDS 4
#define VISIBILITY_BINDING_UVS 5
#define VISIBILITY_BINDING_TEXELS 6
#define VISIBILITY_BINDINGS 7
#define VISIBILITY_PLAIN_BINDINGS 5
// shade_frame.comp
#define SHADE_FRAME_BINDING_POSITIONS 0
#define SHADE_FRAME_BINDING_FACES 1
#define SHADE_FRAME_BINDING_FACE_IDS 2
#define SHADE_FRAME_BINDING_BARY 3
#define SHADE_FRAME_BINDING_PIXELS 4
#define SHADE_FRAME_BINDING_UI_LAYER 5
#define SHADE_FRAME_BINDINGS 6
// crowd_faces.comp
#define CROWD_FACES_BINDING_BASE 0
#define CROWD_FACES_BINDING_CROWD 1
#define CROWD_FACES_BINDINGS 2
// gather_rows.comp
#define GATHER_ROWS_BINDING_SOURCE 0
#define GATHER_ROWS_BINDING_TARGET 1
#define GATHER_ROWS_BINDINGS 2
// The field's ray march (a FieldVolume: size³ cell-centre values, x fastest), in two passes:
//   - field_march.comp: emission–absorption along each ray through the box, at half the frame's resolution (the field
//     is smooth), over the half-resolution pixels the box can cover, into a buffer of premultiplied colours (two
//     uints a pixel: packHalf2x16 of (r, g) and (b, a));
//   - field_composite.vert/.frag: the box's faces, depth-tested against the frame, each pixel once (by the face its
//     ray enters by) blending the buffer's colour, bilinear, over the frame.
// The march runs in compute, as the crowd's raster does: GPUs with few graphics units shade fragments slowly.
#define FIELD_MARCH_GROUP 8  // 8×8 pixels a workgroup
#define FIELD_MARCH_BINDING_VALUES 0
#define FIELD_MARCH_BINDING_COLOURS 1
#define FIELD_MARCH_BINDINGS 2
ARM_SHARED_STRUCT(FieldMarchPush) {
#if defined(__cplusplus)
  float inverseViewProj[16];  // column-major, clip -> world
  float camera[4];            // xyz: the eye; w: absorption per metre at value 1
  float lo[3];                // the box, world space
  uint size;                  // cells per side
  float hi[3];
  uint frame;                 // the frame's width | height << 16 (the colour buffer: half of each, rounded up)
  uint rect[4];               // the half-resolution pixels marched: x0, y0, x1, y1 (exclusive)
#else
  mat4 inverseViewProj;
  vec4 camera;
  vec3 lo;
  uint size;
  vec3 hi;
  uint frame;
  uvec4 rect;
#endif
};
ARM_SHARED_STRUCT(FieldCompositePush) {
#if defined(__cplusplus)
  float viewProj[16];  // column-major, world -> clip
  float camera[4];     // xyz: the eye
  float lo[3];
  uint width;          // the colour buffer's row length
  float hi[3];
  uint height;         // the colour buffer's rows
#else
  mat4 viewProj;
  vec4 camera;
  vec3 lo;
  uint width;
  vec3 hi;
  uint height;
#endif
};
#if defined(__cplusplus)
static_assert(sizeof(FieldMarchPush) == 128 && sizeof(FieldCompositePush) == 112);
#endif
// clip_transform.comp
#define CLIP_TRANSFORM_BINDING_POSITIONS 0
#define CLIP_TRANSFORM_BINDING_CLIP 1
#define CLIP_TRANSFORM_BINDING_BOUNDS 2
#define CLIP_TRANSFORM_BINDINGS 3

#define CLIP_BOUNDS_GROUP 256   // clip_transform's workgroup (and CUDA block): one bounds reduction per group
#define CLIP_BOUNDS_GROUPS 1024 // at most: grid-stride beyond, so the global atomics stay few
// The pixel column (or row) of a clip-space vertex in the rasteriser's viewport (NDC ±1 at pixel centres 0 and
// size-1), widened by a pixel each side: every pixel whose centre a triangle covers lies between its vertices'.
ARM_FN uint clipBoundsLow(float ndc, uint size) {
  float p = ndc * (float(size) - 1.0f) * 0.5f + float(size) * 0.5f - 1.0f;
  return p > 0.0f ? (p < float(size) - 1.0f ? uint(p) : size - 1u) : 0u;
}
ARM_FN uint clipBoundsHigh(float ndc, uint size) {
  float p = ndc * (float(size) - 1.0f) * 0.5f + float(size) * 0.5f + 1.0f;
  return p > 0.0f ? (p < float(size) - 1.0f ? uint(p) : size - 1u) : 0u;
}

// crowd_faces.comp: the compute raster's crowd as one mesh: copy b of one avatar's face indices offset by b·V (so face
// id = b·F + f), written on the GPU (257 MB for 1,024 avatars: building and uploading it on the host stalled the
// first frame ~0.4 s).
#define CROWD_FACES_GROUP 256
ARM_SHARED_STRUCT(CrowdFacesPush) {
  uint indices;      // 3·F of one avatar
  uint vertexCount;  // V of one avatar
  uint copies;       // avatars
  uint pad;
};

// gather_rows.comp: a composite scene's gather (app/composite_scene.h). Row r of the source (rowWords words, rows
// back to back) goes to word r·targetStride + targetOffset of the target: a part's member r into member r's slice.
#define GATHER_ROWS_GROUP 256
ARM_SHARED_STRUCT(GatherRowsPush) {
  uint rows;
  uint rowWords;
  uint targetStride;
  uint targetOffset;
};
#endif
