// One Adam step over a parameter vector (GLSL and CUDA), element by element (Kingma and Ba's update with bias
// correction): m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g², θ ← θ − lr·m̂ / (√v̂ + ε), m̂ = m/(1−β1ᵗ), v̂ = v/(1−β2ᵗ).
#ifndef ARMATURE_ADAM_IO_H
#define ARMATURE_ADAM_IO_H
#include "common_io.h"

#define ADAM_WORKGROUP_SIZE 256

#define ADAM_BINDING_PARAMS 0  // float (n), updated
#define ADAM_BINDING_GRADS 1   // float (n)
#define ADAM_BINDING_M 2       // float (n), updated: the first moment
#define ADAM_BINDING_V 3       // float (n), updated: the second moment
#define ADAM_BINDINGS 4

ARM_SHARED_STRUCT(AdamPush) {
  uint count;
  float lr, beta1, beta2, eps;
  float correction1, correction2;  // 1 − β1ᵗ and 1 − β2ᵗ, computed on the host in double
  uint pad0;
};

#ifdef __cplusplus
static_assert(sizeof(AdamPush) == 32);
#endif

#endif
