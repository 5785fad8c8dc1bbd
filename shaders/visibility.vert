#version 450
// A rectangle over the pixels the avatars can cover (clip_transform's bounds): the fragment shader shades the
// visibility buffer there only — on GPUs with few graphics units a full-screen pass costs as much as the rest.
#extension GL_GOOGLE_include_directive : require
#include "shared/render_io.h"

layout(std430, binding = VISIBILITY_BINDING_BOUNDS) readonly buffer Bounds { uint bounds[]; };  // minX, minY, maxX, maxY (pixels)
const vec2 kQuad[6] = vec2[](vec2(0, 0), vec2(1, 0), vec2(1, 1), vec2(0, 0), vec2(1, 1), vec2(0, 1));

void main() {
  if (bounds[0] > bounds[2] || bounds[1] > bounds[3]) {  // no vertex: nothing to shade
    gl_Position = vec4(0.0);
    return;
  }
  vec2 edge = mix(vec2(bounds[0], bounds[1]), vec2(bounds[2] + 1u, bounds[3] + 1u), kQuad[gl_VertexIndex]);
  gl_Position = vec4(edge / vec2(pc.width, pc.height) * 2.0 - 1.0, 0.0, 1.0);
}
