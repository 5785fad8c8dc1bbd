#include <algorithm>

#include "armature/ops/gaussian_pose.h"
#include "armature/shaders.h"
#include "shared/gaussian_pose_io.h"

namespace armature::vk {

void poseGaussians(const Exec& exec, const GaussianPoseArgs& args) {
  GaussianPosePush push{};
  std::copy(args.post.begin(), args.post.end(), push.post);
  push.gaussians = args.gaussians, push.joints = args.joints;
  const size_t N = args.gaussians;
  const auto& program = exec.context().program(shaders::gaussian_pose, GAUSSIAN_POSE_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), program, exactGroupCount(args.gaussians, GAUSSIAN_POSE_THREADS),
           {args.transforms.slice(0, size_t(args.joints) * 12).vulkan(), args.gaussianJoints.slice(0, N).vulkan(),
            args.means.slice(0, N * 3).vulkan(), args.cholesky.slice(0, N * 6).vulkan(),
            args.posedMeans.slice(0, N * 3).vulkan(), args.posedCholesky.slice(0, N * 6).vulkan()},
           push);
}

}  // namespace armature::vk
