#version 450
// The skinned vertices straight from Armature's output (tightly packed xyz), placed by an orthographic front view.
layout(location = 0) in vec3 position;
layout(push_constant) uniform View {
  vec4 centre;  // xyz: the box's centre; w: the box's depth
  vec4 scale;   // x, y: NDC per metre
} view;
layout(location = 0) out vec3 world;
void main() {
  world = position;
  const vec3 d = position - view.centre.xyz;
  gl_Position = vec4(d.x * view.scale.x, -d.y * view.scale.y, 0.5 - d.z / view.centre.w, 1.0);
}
