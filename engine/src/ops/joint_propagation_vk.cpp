#include "armature/ops/joint_propagation.h"
#include "armature/error.h"
#include "armature/shaders.h"
#include "shared/joints_io.h"

namespace armature::vk {

namespace {

void checkWalk(const Exec& exec, const DeviceJointForest& forest, const char* op) {
  ARM_CHECK(!exec.context().info().isCpu() || forest.longestWalk() <= JOINTS_LAVAPIPE_MAX_WALK,
            "%s: a path of this forest takes %llu steps, more than the %u llvmpipe runs in one invocation (it stops "
            "loops after 65535 iterations); use a GPU or CUDA",
            op, (unsigned long long)forest.longestWalk(), JOINTS_LAVAPIPE_MAX_WALK);
}

// One dispatch per generation, each after what it reads (forward: the generation before; backward: the one after).
void runGenerations(const Exec& exec, const ComputeProgram& program, const DeviceJointForest& forest, uint32_t batch,
                    uint32_t flags, const std::vector<BufferView>& buffers, bool reverse) {
  const JointForest& f = forest.forest();
  const uint32_t G = f.generations();
  for (uint32_t step = 0; step < G; ++step) {
    const uint32_t g = reverse ? G - 1 - step : step;
    const uint32_t first = f.generationStart()[g], paths = f.generationStart()[g + 1] - first;
    const JointsPush push{f.size(), batch, first, paths, flags, 0, 0, 0};
    // Before the first too: the inputs may come from work recorded just before (the backward after its forward).
    computeBarrier(exec.commandBuffer());
    dispatch(exec.commandBuffer(), program, groupCount(uint64_t(paths) * batch, JOINTS_WORKGROUP_SIZE), buffers, push);
  }
}

// An optional argument's binding: `spare` where it is absent (bound, never read: its flag is off).
BufferView bound(const DeviceView& view, const BufferView& spare) { return view.empty() ? spare : view.vulkan(); }

// Bindings 0 to 7, the same in both directions: the forest's tables, the locals, the inverse binds (`spare` where an
// argument is absent: bound, never read).
template <typename Args>
std::vector<BufferView> sharedBuffers(const Args& a, const BufferView& spare) {
  const DeviceJointForest& f = *a.forest;
  const bool affine = a.kind == LocalTransform::Affine;
  return {f.order().vulkan(),           f.pathStart().vulkan(),     f.parents().vulkan(),
          f.lightStart().vulkan(),      f.lightChildren().vulkan(), affine ? a.affine.vulkan() : a.rotations.vulkan(),
          bound(a.translations, spare), bound(a.inverseBind, spare)};
}

}  // namespace

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  const auto& program = exec.context().program(shaders::joints_forward, JOINTS_BINDINGS, sizeof(JointsPush));
  const DeviceJointForest& f = *a.forest;
  checkWalk(exec, f, "propagateJoints");
  const bool affine = a.kind == LocalTransform::Affine;
  const BufferView spare = a.globals.vulkan();
  const uint32_t flags = (affine ? JOINTS_AFFINE : 0u) | (a.skinning.empty() ? 0u : JOINTS_SKINNING) |
                         (a.positions.empty() ? 0u : JOINTS_POSITIONS);
  std::vector<BufferView> buffers = sharedBuffers(a, spare);
  buffers.insert(buffers.end(),
                 {a.globals.vulkan(), bound(a.skinning, spare), bound(a.positions, spare), spare, spare, spare, spare});
  runGenerations(exec, program, f, a.batch, flags, buffers, false);
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const auto& program = exec.context().program(shaders::joints_backward, JOINTS_BINDINGS, sizeof(JointsPush));
  const DeviceJointForest& f = *a.forest;
  checkWalk(exec, f, "propagateJointsBackward");
  const bool affine = a.kind == LocalTransform::Affine;
  const BufferView spare = a.globals.vulkan();
  const uint32_t flags = (affine ? JOINTS_AFFINE : 0u) | (a.gradSkinning.empty() ? 0u : JOINTS_SKINNING) |
                         (a.gradPositions.empty() ? 0u : JOINTS_POSITIONS) |
                         (a.gradGlobals.empty() ? 0u : JOINTS_GRAD_GLOBALS);
  std::vector<BufferView> buffers = sharedBuffers(a, spare);
  buffers.insert(buffers.end(), {a.globals.vulkan(), bound(a.gradSkinning, spare), bound(a.gradPositions, spare),
                                 bound(a.gradGlobals, spare), a.adjoint.vulkan(),
                                 affine ? a.gradAffine.vulkan() : a.gradRotations.vulkan(),
                                 affine ? a.adjoint.vulkan() : a.gradTranslations.vulkan()});
  runGenerations(exec, program, f, a.batch, flags, buffers, true);
}

}  // namespace armature::vk
