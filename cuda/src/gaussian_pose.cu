#include "armature/ops/gaussian_pose.h"
#include "check.h"
#include "shared/gaussian_pose_io.h"

namespace armature::cuda {
namespace {
__global__ void poseGaussiansKernel(GaussianPosePush p, const float* __restrict__ transforms,
                                    const int* __restrict__ joints, const float* __restrict__ means,
                                    const float* __restrict__ cholesky, float* __restrict__ outMeans,
                                    float* __restrict__ outCholesky) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.gaussians) return;
  const int j = joints[i];
  if (j < 0 || uint32_t(j) >= p.joints) {  // the defined result of a bad index: NaN
    for (int k = 0; k < 3; ++k) outMeans[i * 3 + k] = __int_as_float(0x7fc00000);
    for (int k = 0; k < 6; ++k) outCholesky[i * 6 + k] = __int_as_float(0x7fc00000);
    return;
  }
  float t[12], m[12], mean[3], params[6], posedMean[3], posedParams[6];
  for (int k = 0; k < 12; ++k) t[k] = transforms[size_t(j) * 12 + k];
  gaussianPoseCompose(p.post, t, m);
  for (int k = 0; k < 3; ++k) mean[k] = means[i * 3 + k];
  for (int k = 0; k < 6; ++k) params[k] = cholesky[i * 6 + k];
  gaussianPoseOne(m, mean, params, posedMean, posedParams);
  for (int k = 0; k < 3; ++k) outMeans[i * 3 + k] = posedMean[k];
  for (int k = 0; k < 6; ++k) outCholesky[i * 6 + k] = posedParams[k];
}
}  // namespace

void poseGaussians(const Exec& exec, const GaussianPoseArgs& args) {
  GaussianPosePush push{};
  for (int k = 0; k < 12; ++k) push.post[k] = args.post[size_t(k)];
  push.gaussians = args.gaussians, push.joints = args.joints;
  const unsigned blocks = (args.gaussians + GAUSSIAN_POSE_THREADS - 1) / GAUSSIAN_POSE_THREADS;
  poseGaussiansKernel<<<blocks, GAUSSIAN_POSE_THREADS, 0, stream(exec)>>>(
      push, args.transforms.cuda<float>(), args.gaussianJoints.cuda<int>(), args.means.cuda<float>(),
      args.cholesky.cuda<float>(), args.posedMeans.cuda<float>(), args.posedCholesky.cuda<float>());
  CUDA_CHECK_LAUNCH();
}

}  // namespace armature::cuda
