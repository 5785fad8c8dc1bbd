#include "armature/ops/axpy.h"
#include "check.h"

namespace armature::cuda {
namespace {
__global__ void axpyKernel(float a, const float* __restrict__ x, float* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = a * x[i] + y[i];
}
}  // namespace

void axpy(const Exec& exec, const AxpyArgs& args) {
  const size_t n = args.x.count;
  const unsigned blocks = unsigned(std::min<size_t>((n + 255) / 256, 65535 * 8));
  axpyKernel<<<blocks, 256, 0, stream(exec)>>>(args.a, args.x.cuda<float>(), args.y.cuda<float>(), n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
