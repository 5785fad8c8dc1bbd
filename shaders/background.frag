#version 450
// The first draw of every frame the graphics pipeline renders: each pixel's colour (the ground grid where the eye
// ray meets the floor, else the clear colour) and depth (the floor's, else the far plane). Writing every pixel lets
// the render pass neither clear nor load its attachments: on GPUs with few graphics units (H100, H200) those
// clears cost more than this pass and the avatars together.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"
#include "shade.glsl"

layout(location = 0) noperspective in vec4 nearPoint;
layout(location = 1) noperspective in vec4 farPoint;
layout(location = 0) out vec4 color;

void main() {
  vec3 a = nearPoint.xyz / nearPoint.w, b = farPoint.xyz / farPoint.w, dir = b - a;
  // The floor's point on the ray, computed for every pixel so that its derivatives (the grid lines' width) are
  // defined in the whole quad; s in (0, 1) lies between the near and far planes.
  float s = (pc.floorY - a.y) / (abs(dir.y) > 1e-12 ? dir.y : 1e-12);
  vec3 q = a + s * dir;
  vec2 perPixel = fwidth(q.xz);
  color = vec4(pc.clear.rgb, 1.0);
  gl_FragDepth = 1.0;
  if (pc.ground != 0u && s > 0.0 && s < 1.0 && abs(q.x) < 400.0 && abs(q.z) < 400.0) {
    color = vec4(shadeGround(q.xz, perPixel), 1.0);
    vec4 clip = pc.viewProj * vec4(q, 1.0);
    gl_FragDepth = clamp(clip.z / clip.w, 0.0, 1.0);
  }
}
