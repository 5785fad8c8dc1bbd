#version 450
// One Adam step (shared/adam_io.h), grid-stride over the elements.
#extension GL_GOOGLE_include_directive : require
#include "shared/adam_io.h"

layout(local_size_x = ADAM_WORKGROUP_SIZE) in;
layout(std430, binding = ADAM_BINDING_PARAMS) buffer Params { float params[]; };
layout(std430, binding = ADAM_BINDING_GRADS) readonly buffer Grads { float grads[]; };
layout(std430, binding = ADAM_BINDING_M) buffer M { float m[]; };
layout(std430, binding = ADAM_BINDING_V) buffer V { float v[]; };
layout(push_constant) uniform Push { AdamPush p; };

void main() {
  const uint stride = gl_NumWorkGroups.x * ADAM_WORKGROUP_SIZE;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    const float g = grads[i];
    const float mi = p.beta1 * m[i] + (1.0 - p.beta1) * g, vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
    m[i] = mi, v[i] = vi;
    params[i] -= p.lr * (mi / p.correction1) / (sqrt(vi / p.correction2) + p.eps);
  }
}
