#version 450
// One invocation adds one to a counter: the Vulkan half of the interop ping-pong.
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Counter { uint counter; };
layout(std430, binding = 1) buffer Unused { uint unused; };
layout(push_constant) uniform Push { uint add; };
void main() { counter += add; }
