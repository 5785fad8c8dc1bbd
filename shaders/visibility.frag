#version 450
// The compute rasteriser's visibility buffer (face id + 1, perspective-correct barycentrics per pixel), shaded
// like the hardware draw: the surface point from the barycentrics, the face's flat normal, and the depth written
// so the ground grid and overlays composite with it.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"
#include "shade.glsl"

layout(std430, binding = 0) readonly buffer Positions { float positions[]; };  // B × V × 3
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };            // every avatar's faces, offset
layout(std430, binding = 2) readonly buffer FaceIds { int findices[]; };
layout(std430, binding = 3) readonly buffer Bary { float barycentrics[]; };
layout(location = 0) out vec4 color;

vec3 corner(int face, int k) {
  uint v = uint(faces[face * 3 + k]) * 3u;
  return vec3(positions[v], positions[v + 1], positions[v + 2]);
}

void main() {
  uint pix = uint(gl_FragCoord.y) * pc.width + uint(gl_FragCoord.x);
  int id = findices[pix];
  if (id <= 0) discard;
  vec3 p0 = corner(id - 1, 0), p1 = corner(id - 1, 1), p2 = corner(id - 1, 2);
  vec3 world = barycentrics[pix * 3] * p0 + barycentrics[pix * 3 + 1] * p1 + barycentrics[pix * 3 + 2] * p2;
  vec3 n = normalize(cross(p1 - p0, p2 - p0));
  color = vec4(shadeSkin(n, normalize(pc.camera.xyz - world)), 1.0);
  vec4 clip = pc.viewProj * vec4(world, 1.0);
  gl_FragDepth = clip.z / clip.w;
}
