#version 450
// Key light + hemisphere ambient on flat (per-triangle) normals from screen-space derivatives; a fading grid on
// the ground; dark lines for the wireframe overlay. The textured variant (MESH_TEXTURED) lights the surface
// texture's colour instead of the skin's.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"
#include "shade.glsl"
#ifdef MESH_TEXTURED
#define SURFACE_TEXELS_BINDING MESH_BINDING_TEXELS
#include "surface_texture.glsl"
layout(location = 1) in vec2 uv;
#endif

layout(location = 0) in vec3 worldPos;
layout(location = 0) out vec4 color;

void main() {
  vec3 toEye = normalize(pc.camera.xyz - worldPos);
  if (pc.mode == RENDER_MODE_GROUND) {
    color = vec4(shadeGround(worldPos.xz, fwidth(worldPos.xz)), 1.0);
    return;
  }
  if (pc.mode == RENDER_MODE_LINES) {
    color = vec4(0.08, 0.08, 0.1, 1.0);
    return;
  }
  if (pc.mode == RENDER_MODE_BONES || pc.mode == RENDER_MODE_JOINTS) {
    color = pc.mode == RENDER_MODE_BONES ? vec4(0.2, 0.85, 0.95, 1.0) : vec4(1.0, 0.75, 0.2, 1.0);
    return;
  }
  vec3 n = normalize(cross(dFdx(worldPos), dFdy(worldPos)));  // flat: the triangle's normal
#ifdef MESH_TEXTURED
  color = vec4(shadeSurface(surfaceAlbedo(uv), n, toEye), 1.0);
#else
  color = vec4(shadeSkin(n, toEye), 1.0);
#endif
}
