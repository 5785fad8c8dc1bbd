#version 450
// Flat shading from the face's normal (screen-space derivatives of the position), lit as `armature model render` lights.
layout(location = 0) in vec3 world;
layout(location = 0) out vec4 colour;
void main() {
  vec3 n = normalize(cross(dFdx(world), dFdy(world)));
  if (n.z < 0.0) n = -n;
  const vec3 light = normalize(vec3(-0.4, 0.6, 0.7));
  const float shade = 0.18 + 0.62 * max(0.0, dot(n, light)) + 0.2 * (0.5 + 0.5 * n.y);
  colour = vec4(min(vec3(1.0), vec3(235.0, 190.0, 165.0) / 255.0 * shade), 1.0);
}
