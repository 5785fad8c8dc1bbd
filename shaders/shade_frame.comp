#version 450
// The compute-raster mode's whole frame in one compute pass (Renderer, when nothing needs the graphics pipeline but
// overlays): per pixel, the ground grid where the eye ray meets the floor, the avatar where the visibility buffer
// has a face and it is nearer, else the clear colour; packed to 8-bit RGBA (or BGRA) and copied into the image.
// Without SHADE_AVATARS it is the hardware rasteriser's background, which then draws the avatars over it.
// On GPUs with few graphics units (H100, H200) a full-screen raster pass costs more than this pass and its copy.
#extension GL_GOOGLE_include_directive : require
#define RENDER_IO_OWN_PUSH
#include "shared/render_io.h"
#include "shade.glsl"

layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, binding = SHADE_FRAME_BINDING_POSITIONS) readonly buffer Positions { float positions[]; };  // B × V × 3
layout(std430, binding = SHADE_FRAME_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = SHADE_FRAME_BINDING_FACE_IDS) readonly buffer FaceIds { int findices[]; };
layout(std430, binding = SHADE_FRAME_BINDING_BARY) readonly buffer Bary { float barycentrics[]; };
layout(std430, binding = SHADE_FRAME_BINDING_PIXELS) writeonly buffer Pixels { uint pixels[]; };
layout(std430, binding = SHADE_FRAME_BINDING_UI_LAYER) readonly buffer UiLayer { uint uiPixels[]; };  // premultiplied, in the image's order
layout(push_constant) uniform ShadePushBlock {
  mat4 inverseViewProj;  // clip -> world
  vec4 camera;           // xyz: the eye
  vec4 clear;            // rgb: background
  uint width, height;
  float floorY;
  uint flags;            // SHADE_*
  uvec4 uiRect;          // x0, y0, x1, y1
} sp;

vec3 corner(int face, int k) {
  uint v = uint(faces[face * 3 + k]) * 3u;
  return vec3(positions[v], positions[v + 1], positions[v + 2]);
}

// Where the eye ray through pixel centre (x + 0.5, y + 0.5) meets the floor: the distance along it, or -1.
float floorHit(vec2 pixel, out vec3 hit) {
  vec2 ndc = pixel / vec2(sp.width, sp.height) * 2.0 - 1.0;
  vec4 a = sp.inverseViewProj * vec4(ndc, 0.0, 1.0), b = sp.inverseViewProj * vec4(ndc, 1.0, 1.0);
  vec3 dir = normalize(b.xyz / b.w - a.xyz / a.w);
  float t = abs(dir.y) > 1e-9 ? (sp.floorY - sp.camera.y) / dir.y : -1.0;
  hit = sp.camera.xyz + t * dir;
  return t > 0.0 && t < 200.0 && abs(hit.x) < 400.0 && abs(hit.z) < 400.0 ? t : -1.0;  // the drawn quad, the far plane
}

void main() {
  uvec2 xy = gl_GlobalInvocationID.xy;
  if (xy.x >= sp.width || xy.y >= sp.height) return;
  uint pix = xy.y * sp.width + xy.x;
  vec3 color = sp.clear.rgb;
  float nearest = 1e30;
  vec3 q;
  if ((sp.flags & SHADE_GROUND) != 0u) {
    float t = floorHit(vec2(xy) + 0.5, q);
    if (t > 0.0) {
      vec3 qx, qy;  // the neighbours' hits stand in for the fragment shader's derivatives
      floorHit(vec2(xy) + vec2(1.5, 0.5), qx);
      floorHit(vec2(xy) + vec2(0.5, 1.5), qy);
      color = shadeGround(q.xz, abs(qx.xz - q.xz) + abs(qy.xz - q.xz));
      nearest = t;
    }
  }
  int id = (sp.flags & SHADE_AVATARS) != 0u ? findices[pix] : 0;
  if (id > 0) {
    vec3 p0 = corner(id - 1, 0), p1 = corner(id - 1, 1), p2 = corner(id - 1, 2);
    vec3 world = barycentrics[pix * 3] * p0 + barycentrics[pix * 3 + 1] * p1 + barycentrics[pix * 3 + 2] * p2;
    vec3 toEye = sp.camera.xyz - world;
    if (length(toEye) < nearest) color = shadeSkin(normalize(cross(p1 - p0, p2 - p0)), normalize(toEye));
  }
  color = clamp(color, 0.0, 1.0);
  if ((sp.flags & SHADE_BGRA) != 0u) color = color.bgr;
  if ((sp.flags & SHADE_UI) != 0u && all(greaterThanEqual(xy, sp.uiRect.xy)) && all(lessThan(xy, sp.uiRect.zw))) {
    vec4 ui = unpackUnorm4x8(uiPixels[pix]);  // the layer over the frame
    color = ui.rgb + color * (1.0 - ui.a);
  }
  uvec3 c = uvec3(color * 255.0 + 0.5);
  pixels[pix] = c.r | (c.g << 8) | (c.b << 16) | (255u << 24);
}
