#version 450
// Key light + hemisphere ambient on flat (per-triangle) normals from screen-space derivatives; dark lines for the
// wireframe overlay. The textured variants light the surface texture's colour instead
// of the skin's, at the (u, v) the corners variant of mesh.vert passes on (MESH_CORNERS), or (MESH_TEXTURED alone)
// found here: the face is gl_PrimitiveID (per instance, so the avatar's), the barycentrics those of the fragment's
// point in it, so the draw stays indexed (a GPU with few graphics units shades 3F corners per avatar ~6× slower
// than its V vertices).
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"
#include "shade.glsl"
#ifdef MESH_TEXTURED
#define SURFACE_TEXELS_BINDING MESH_BINDING_TEXELS
#include "surface_texture.glsl"
#ifdef MESH_CORNERS
layout(location = 1) in vec2 uv;
#else
layout(std430, binding = MESH_BINDING_POSITIONS) readonly buffer Positions { float positions[]; };
layout(std430, binding = MESH_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = MESH_BINDING_UVS) readonly buffer Uvs { vec2 uvs[]; };
layout(location = 2) flat in uint avatar;

vec3 corner(uint f, uint k) {
  uint base = (avatar * pc.vertexCount + uint(faces[f * 3u + k])) * 3u;
  return vec3(positions[base], positions[base + 1u], positions[base + 2u]);
}

// (u, v) at `p` on face gl_PrimitiveID: its barycentrics from the projection onto the face's plane.
vec2 surfaceUv(vec3 p) {
  uint f = uint(gl_PrimitiveID);
  vec3 p0 = corner(f, 0u), e1 = corner(f, 1u) - p0, e2 = corner(f, 2u) - p0, d = p - p0;
  float d11 = dot(e1, e1), d12 = dot(e1, e2), d22 = dot(e2, e2), d1 = dot(d, e1), d2 = dot(d, e2);
  float det = d11 * d22 - d12 * d12;
  float b1 = det > 0.0 ? (d22 * d1 - d12 * d2) / det : 0.0, b2 = det > 0.0 ? (d11 * d2 - d12 * d1) / det : 0.0;
  return (1.0 - b1 - b2) * uvs[f * 3u] + b1 * uvs[f * 3u + 1u] + b2 * uvs[f * 3u + 2u];
}
#endif
#endif

layout(location = 0) in vec3 worldPos;
layout(location = 0) out vec4 color;

void main() {
  vec3 toEye = normalize(pc.camera.xyz - worldPos);
  if (pc.mode == RENDER_MODE_LINES) {
    color = vec4(0.08, 0.08, 0.1, 1.0);
    return;
  }
  if (pc.mode == RENDER_MODE_BONES || pc.mode == RENDER_MODE_JOINTS) {
    color = pc.mode == RENDER_MODE_BONES ? vec4(0.2, 0.85, 0.95, 1.0) : vec4(1.0, 0.75, 0.2, 1.0);
    return;
  }
  vec3 n = normalize(cross(dFdx(worldPos), dFdy(worldPos)));  // flat: the triangle's normal
#if defined(MESH_CORNERS)
  color = vec4(shadeSurface(surfaceAlbedo(uv), n, toEye), 1.0);
#elif defined(MESH_TEXTURED)
  color = vec4(shadeSurface(surfaceAlbedo(surfaceUv(worldPos)), n, toEye), 1.0);
#else
  color = vec4(shadeSkin(n, toEye), 1.0);
#endif
}
