// One Adam step on CUDA: shaders/adam.comp's update, element by element.
#include "check.h"
#include "ops/adam_backend.h"

namespace armature {
namespace cuda {
namespace {

__global__ void adamKernel(float* __restrict__ params, const float* __restrict__ grads, float* __restrict__ m,
                           float* __restrict__ v, AdamPush p) {
  for (uint32_t i = blockIdx.x * ADAM_WORKGROUP_SIZE + threadIdx.x; i < p.count; i += gridDim.x * ADAM_WORKGROUP_SIZE) {
    const float g = grads[i];
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * g, vi = p.beta2 * v[i] + (1.0f - p.beta2) * g * g;
    m[i] = mi, v[i] = vi;
    params[i] -= p.lr * (mi / p.correction1) / (sqrtf(vi / p.correction2) + p.eps);
  }
}

}  // namespace

void adamStep(const Exec& exec, const AdamArgs& a) {
  const AdamPush push = adamPush(a);
  const unsigned blocks = std::min<unsigned>((push.count + ADAM_WORKGROUP_SIZE - 1) / ADAM_WORKGROUP_SIZE, 65535);
  adamKernel<<<blocks, ADAM_WORKGROUP_SIZE, 0, stream(exec)>>>(a.params.cuda<float>(), a.grads.cuda<float>(),
                                                               a.m.cuda<float>(), a.v.cuda<float>(), push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace armature
