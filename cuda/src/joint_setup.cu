// A joint forest analysed on CUDA: shaders/joint_propagation_setup.comp's passes (shared/joint_propagation_setup.h), a thread per
// invocation.
#include <algorithm>

#include "check.h"
#define JOINTS_SETUP_BUFFERS uint32_t* __restrict__ words, uint32_t* __restrict__ tables,
#include "ops/joint_setup.h"

namespace armature::cuda {
namespace {

__global__ void __launch_bounds__(JOINTS_SETUP_THREADS)
    setupKernel(uint32_t* words, uint32_t* tables, JointsSetupPush p) {
  for (uint32_t i = blockIdx.x * JOINTS_SETUP_THREADS + threadIdx.x; i < p.items; i += gridDim.x * JOINTS_SETUP_THREADS)
    jointsSetupStep(words, tables, p, i);
}

}  // namespace

void jointsSetupPass(const Exec& exec, const JointsSetupPass& pass) {
  const uint32_t groups =
      std::max(1u, std::min<uint32_t>((pass.push.items + JOINTS_SETUP_THREADS - 1) / JOINTS_SETUP_THREADS, 65535u * 4));
  setupKernel<<<groups, JOINTS_SETUP_THREADS, 0, stream(exec)>>>(pass.words.cuda<uint32_t>(),
                                                                 pass.tables.cuda<uint32_t>(), pass.push);
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
