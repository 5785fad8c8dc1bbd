#version 450
// Avatars read their skinned positions straight from the skinning output (B × V × 3 floats), one instance per
// avatar; no vertex attributes, so the same buffer serves Vulkan compute, CUDA interop and CPU uploads. The corners
// variant (MESH_CORNERS) draws every face's corners (3F per instance, not indexed) and passes on their (u, v), for
// textured drawing where fragments have no gl_PrimitiveID.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"

layout(std430, binding = MESH_BINDING_POSITIONS) readonly buffer Positions { float positions[]; };
layout(location = 0) out vec3 worldPos;
#if defined(MESH_TEXTURED) && !defined(MESH_CORNERS)
layout(location = 2) flat out uint avatar;  // mesh.frag's textured variant finds the face's corners with it
#endif
#ifdef MESH_CORNERS
layout(std430, binding = MESH_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = MESH_BINDING_UVS) readonly buffer Uvs { vec2 uvs[]; };
layout(location = 1) out vec2 uv;
#endif

void main() {
#ifdef MESH_CORNERS
  uint vertex = uint(faces[gl_VertexIndex]);
  uv = uvs[gl_VertexIndex];
#else
  uint vertex = uint(gl_VertexIndex);
#endif
#if defined(MESH_TEXTURED) && !defined(MESH_CORNERS)
  avatar = uint(gl_InstanceIndex);
#endif
  uint base = (uint(gl_InstanceIndex) * pc.vertexCount + vertex) * 3u;
  worldPos = vec3(positions[base], positions[base + 1], positions[base + 2]);
  gl_Position = pc.viewProj * vec4(worldPos, 1.0);
  gl_PointSize = 6.0;  // joint markers; ignored for triangles and lines
}
