#include "armature/ops/axpy.h"
#include "armature/shaders.h"
#include "shared/axpy_io.h"

namespace armature::vk {

void axpy(const Exec& exec, const AxpyArgs& args) {
  const uint32_t count = uint32_t(args.x.count);
  const AxpyPush push{args.a, count};
  const auto& program = exec.context().program(shaders::axpy, AXPY_BINDINGS, sizeof push);
  dispatch(exec.commandBuffer(), program, groupCount(count, AXPY_WORKGROUP_SIZE),
           {args.x.slice(0, count).vulkan(), args.y.slice(0, count).vulkan()}, push);
}

}  // namespace armature::vk
