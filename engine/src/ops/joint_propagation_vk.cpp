#include "armature/error.h"
#include <volk.h>  // the library's own Vulkan function table
#include "armature/shaders.h"
#include "armature/vk/timer.h"
#include "ops/joint_propagation_backend.h"

namespace armature::vk {

namespace {

// An optional argument's binding, null where it is absent (run() binds a spare there, never read: its flag is off).
BufferView optional(const DeviceView& view) { return view.empty() ? BufferView{} : view.vulkan(); }

// Either direction: bindings 0 to 6 (the forest's tables, the locals, the inverse binds) from `a`, then `rest`, then
// the path tops' parents; each dispatch after what it reads (the one before; the first after work recorded just
// before it, such as the backward's forward). `small` runs a small forest (DeviceJointForest::small()), its workgroup
// holding `smallJoints` joints; `scan` any other forest.
template <typename Args>
void run(const Exec& exec, const char* op, const shaders::SpirvBlob& small, uint32_t smallJoints,
         const shaders::SpirvBlob& scan, const Args& a, const std::vector<BufferView>& rest, bool reverse) {
  const DeviceJointForest& f = *a.forest;
  VkCommandBuffer cmd = exec.commandBuffer();
  auto bind = [&](std::vector<BufferView> buffers) {
    buffers.insert(buffers.end(), rest.begin(), rest.end());
    buffers.push_back(f.topParents().vulkan());
    for (BufferView& b : buffers)
      if (!b.buffer) b = a.globals.vulkan();
    return buffers;
  };
  const BufferView locals = a.kind == LocalTransform::Affine ? a.affine.vulkan() : a.rotations.vulkan();
  // Stages for a caller that times them: the scans (each with what it waits on), and the forward's PLACE passes.
  vk::StageZones zones{exec.stages(), cmd};
  if (f.small()) {
    zones.next(reverse ? "joints backward: small forest" : "joints: small forest");
    uint32_t groups;
    const JointsPush push = jointsSmallPush(f, a.batch, jointsFlags(a), smallJoints, groups);
    computeBarrier(cmd);
    dispatch(cmd, exec.context().program(small, JOINTS_BINDINGS, sizeof(JointsPush)), groups,
             bind({f.levels().vulkan(), f.parents().vulkan(), f.childStart().vulkan(), f.children().vulkan(), locals,
                   optional(a.translations), optional(a.inverseBind)}),
             push);
    return;
  }
  ARM_CHECK(!exec.context().info().isCpu() || f.widestFanOut() <= JOINTS_LAVAPIPE_MAX_FAN_OUT,
            "%s: a joint of this forest has %u children that start paths, more than the %u llvmpipe gathers in one "
            "invocation (it stops loops after 65535 iterations); use a GPU or CUDA",
            op, f.widestFanOut(), JOINTS_LAVAPIPE_MAX_FAN_OUT);
  const std::vector<BufferView> buffers =
      bind({f.order().vulkan(), f.parents().vulkan(), f.lightStart().vulkan(), f.lightChildren().vulkan(), locals,
            optional(a.translations), optional(a.inverseBind)});
  const auto& program = exec.context().program(scan, JOINTS_BINDINGS, sizeof(JointsPush));
  // One pass per scan where workgroups may wait on earlier ones (a GPU), three on lavapipe.
  const uint32_t singlePassTiles = exec.context().info().isCpu() ? 0 : 65535;
  zones.next(reverse ? "joints backward: scans" : "joints: scan");
  computeBarrier(cmd);  // the status words may still be read by earlier work
  vkCmdFillBuffer(cmd, a.scratch.vulkan().buffer, a.scratch.vulkan().offset, f.scratchStatusWords(a.batch) * 4, 0);
  forEachPhase(f, a.batch, jointsFlags(a), reverse, singlePassTiles, JointsTileChoice{},
               [&](const JointsPush& push, uint32_t groups) {
                 if (push.phase == JOINTS_PLACE) zones.next("joints: place");
                 computeBarrier(cmd);
                 dispatch(cmd, program, groups, buffers, push);
               });
}

}  // namespace

void propagateJoints(const Exec& exec, const JointPropagationArgs& a) {
  // A skeleton larger than the forward's workgroup holds (JOINTS_SMALL_FORWARD_JOINTS) takes its variant that holds
  // any small forest.
  const bool whole = a.forest->size() > JOINTS_SMALL_FORWARD_JOINTS;
  run(exec, "propagateJoints", whole ? shaders::joint_propagation_small_forward_whole : shaders::joint_propagation_small_forward,
      whole ? JOINTS_SMALL_JOINTS : JOINTS_SMALL_FORWARD_JOINTS, shaders::joint_propagation_forward, a,
      {a.globals.vulkan(), optional(a.skinning), optional(a.positions), {}, {}, {}, {}, a.scratch.vulkan()}, false);
}

void propagateJointsBackward(const Exec& exec, const JointPropagationBackwardArgs& a) {
  const bool affine = a.kind == LocalTransform::Affine;
  run(exec, "propagateJointsBackward", shaders::joint_propagation_small_backward, JOINTS_SMALL_BACKWARD_JOINTS,
      shaders::joint_propagation_backward, a,
      {a.globals.vulkan(), optional(a.gradSkinning), optional(a.gradPositions), optional(a.gradGlobals),
       a.adjoint.vulkan(), affine ? a.gradAffine.vulkan() : a.gradRotations.vulkan(),
       affine ? BufferView{} : a.gradTranslations.vulkan(), a.scratch.vulkan()},
      true);
}

void jointPoints(const Exec& exec, const JointPointsArgs& a) {
  const BufferView spare = a.globals.vulkan();
  auto or_ = [&](const DeviceView& v) { return v.empty() ? spare : v.vulkan(); };
  const JointsPointsPush push = jointsPointsPush(a);
  const uint64_t items = a.mode == JOINTS_POINTS_FORWARD       ? uint64_t(a.batch) * push.points
                         : a.mode == JOINTS_POINTS_JOINT_GRADS ? uint64_t(a.batch) * push.joints
                                                               : push.points;
  computeBarrier(exec.commandBuffer());
  dispatch(exec.commandBuffer(),
           exec.context().program(shaders::joint_propagation_points, JOINTS_POINTS_BINDINGS, sizeof(JointsPointsPush)),
           groupCount(items, 64),
           {a.forest->pointJoints().vulkan(), a.forest->pointStart().vulkan(), a.forest->pointOrder().vulkan(),
            a.points.vulkan(), a.globals.vulkan(), a.moved.vulkan(), or_(a.gradGlobals), or_(a.jointGrads),
            or_(a.gradPoints)},
           push);
}

}  // namespace armature::vk
