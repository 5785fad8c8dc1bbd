#version 450
// The frame's background (background.frag) as one triangle over the whole viewport. Each corner carries its pixel
// ray's points on the near and far planes in homogeneous world coordinates: those are linear in screen position, so
// they interpolate exactly without perspective.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"

layout(location = 0) noperspective out vec4 nearPoint;
layout(location = 1) noperspective out vec4 farPoint;

void main() {
  vec2 ndc = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2) * 2.0 - 1.0;  // (-1,-1), (3,-1), (-1,3)
  mat4 toWorld = inverse(pc.viewProj);
  nearPoint = toWorld * vec4(ndc, 0.0, 1.0);
  farPoint = toWorld * vec4(ndc, 1.0, 1.0);
  gl_Position = vec4(ndc, 1.0, 1.0);
}
