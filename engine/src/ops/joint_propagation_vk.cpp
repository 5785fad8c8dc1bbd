#include "armature/error.h"
#include "armature/shaders.h"
#include "ops/joint_propagation_backend.h"

namespace armature::vk {

namespace {

// An optional argument's binding, null where it is absent (run() binds a spare there, never read: its flag is off).
BufferView optional(const DeviceView& view) { return view.empty() ? BufferView{} : view.vulkan(); }

// Either direction: bindings 0 to 7 (the forest's tables, the locals, the inverse binds) from `a`, then `rest`; one
// dispatch per generation, each after what it reads (the generation before, or after in the backward; the first
// after work recorded just before it, such as the backward's forward).
template <typename Args>
void run(const Exec& exec, const char* op, const shaders::SpirvBlob& spirv, const Args& a,
         const std::vector<BufferView>& rest, bool reverse) {
  const DeviceJointForest& f = *a.forest;
  ARM_CHECK(!exec.context().info().isCpu() || f.longestWalk() <= JOINTS_LAVAPIPE_MAX_WALK,
            "%s: a path of this forest takes %llu steps, more than the %u llvmpipe runs in one invocation (it stops "
            "loops after 65535 iterations); use a GPU or CUDA",
            op, (unsigned long long)f.longestWalk(), JOINTS_LAVAPIPE_MAX_WALK);
  std::vector<BufferView> buffers = {
      f.order().vulkan(),         f.pathStart().vulkan(),
      f.parents().vulkan(),       f.lightStart().vulkan(),
      f.lightChildren().vulkan(), a.kind == LocalTransform::Affine ? a.affine.vulkan() : a.rotations.vulkan(),
      optional(a.translations),   optional(a.inverseBind)};
  buffers.insert(buffers.end(), rest.begin(), rest.end());
  for (BufferView& b : buffers)
    if (!b.buffer) b = a.globals.vulkan();
  const auto& program = exec.context().program(spirv, JOINTS_BINDINGS, sizeof(JointsPush));
  forEachGeneration(f, a.batch, jointsFlags(a), reverse, [&](const JointsPush& push) {
    computeBarrier(exec.commandBuffer());
    dispatch(exec.commandBuffer(), program, groupCount(uint64_t(push.paths) * push.batch, JOINTS_WORKGROUP_SIZE),
             buffers, push);
  });
}

}  // namespace

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  run(exec, "propagateJoints", shaders::joints_forward, a,
      {a.globals.vulkan(), optional(a.skinning), optional(a.positions), {}, {}, {}, {}}, false);
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const bool affine = a.kind == LocalTransform::Affine;
  run(exec, "propagateJointsBackward", shaders::joints_backward, a,
      {a.globals.vulkan(), optional(a.gradSkinning), optional(a.gradPositions), optional(a.gradGlobals),
       a.adjoint.vulkan(), affine ? a.gradAffine.vulkan() : a.gradRotations.vulkan(),
       affine ? BufferView{} : a.gradTranslations.vulkan()},
      true);
}

}  // namespace armature::vk
