#version 450
// The frame's background (background.frag) as one triangle over the whole viewport. Each corner carries its pixel
// ray's points on the near and far planes in homogeneous world coordinates: those are linear in screen position, so
// they interpolate exactly without perspective.
// BACKGROUND_BOUNDS: a rectangle over the pixels the avatars can cover (screen_bounds' pixel bounds) instead, for
// the depth alone where a compute pass has drawn the colour (Renderer's compute background).
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"
#ifndef BACKGROUND_BOUNDS
#define BACKGROUND_BOUNDS 0
#endif

layout(location = 0) noperspective out vec4 nearPoint;
layout(location = 1) noperspective out vec4 farPoint;
#if BACKGROUND_BOUNDS
layout(std430, binding = VISIBILITY_BINDING_BOUNDS) readonly buffer Bounds { uint bounds[]; };  // minX, minY, maxX, maxY (pixels)
const vec2 kQuad[6] = vec2[](vec2(0, 0), vec2(1, 0), vec2(1, 1), vec2(0, 0), vec2(1, 1), vec2(0, 1));
#endif

void main() {
#if BACKGROUND_BOUNDS
  if (bounds[0] > bounds[2] || bounds[1] > bounds[3]) {  // nothing drawn: no depth needed
    gl_Position = vec4(0.0);
    return;
  }
  vec2 edge = mix(vec2(bounds[0], bounds[1]), vec2(bounds[2] + 1u, bounds[3] + 1u), kQuad[gl_VertexIndex]);
  vec2 ndc = edge / vec2(pc.width, pc.height) * 2.0 - 1.0;
#else
  vec2 ndc = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2) * 2.0 - 1.0;  // (-1,-1), (3,-1), (-1,3)
#endif
  mat4 toWorld = inverse(pc.viewProj);
  nearPoint = toWorld * vec4(ndc, 0.0, 1.0);
  farPoint = toWorld * vec4(ndc, 1.0, 1.0);
  gl_Position = vec4(ndc, 1.0, 1.0);
}
