#version 450
// The compute rasteriser's visibility buffer (face id + 1, perspective-correct barycentrics per pixel), shaded
// like the hardware draw: the surface point from the barycentrics, the face's flat normal, and the depth written
// so the ground grid and overlays composite with it. The textured variant (MESH_TEXTURED) lights the surface
// texture's colour at the barycentrics' (u, v).
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"
#include "shade.glsl"

layout(std430, binding = VISIBILITY_BINDING_POSITIONS) readonly buffer Positions { float positions[]; };  // B × V × 3
layout(std430, binding = VISIBILITY_BINDING_FACES) readonly buffer Faces { int faces[]; };  // every avatar's, offset
layout(std430, binding = VISIBILITY_BINDING_FACE_IDS) readonly buffer FaceIds { int findices[]; };
layout(std430, binding = VISIBILITY_BINDING_BARY) readonly buffer Bary { float barycentrics[]; };
#ifdef MESH_TEXTURED
layout(std430, binding = VISIBILITY_BINDING_UVS) readonly buffer Uvs { vec2 uvs[]; };  // one avatar's (F,3,2)
#define SURFACE_TEXELS_BINDING VISIBILITY_BINDING_TEXELS
#include "surface_texture.glsl"
#endif
layout(location = 0) out vec4 color;

vec3 corner(int face, int k) {
  uint v = uint(faces[face * 3 + k]) * 3u;
  return vec3(positions[v], positions[v + 1], positions[v + 2]);
}

void main() {
  uint pix = uint(gl_FragCoord.y) * pc.width + uint(gl_FragCoord.x);
  int id = findices[pix];
  if (id <= 0) discard;
  vec3 b = vec3(barycentrics[pix * 3], barycentrics[pix * 3 + 1], barycentrics[pix * 3 + 2]);
  vec3 p0 = corner(id - 1, 0), p1 = corner(id - 1, 1), p2 = corner(id - 1, 2);
  vec3 world = b.x * p0 + b.y * p1 + b.z * p2;
  vec3 n = normalize(cross(p1 - p0, p2 - p0));
  vec3 toEye = normalize(pc.camera.xyz - world);
#ifdef MESH_TEXTURED
  uint f = uint(id - 1) % pc.faceCount;  // the crowd's face ids run avatar by avatar
  vec2 uv = b.x * uvs[f * 3u] + b.y * uvs[f * 3u + 1u] + b.z * uvs[f * 3u + 2u];
  color = vec4(shadeSurface(surfaceAlbedo(uv), n, toEye), 1.0);
#else
  color = vec4(shadeSkin(n, toEye), 1.0);
#endif
  vec4 clip = pc.viewProj * vec4(world, 1.0);
  gl_FragDepth = clip.z / clip.w;
}
