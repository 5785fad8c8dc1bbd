#include "armature/ops/axpy.h"

#include "armature/shaders.h"
#include "shared/axpy_io.h"

namespace armature {

void axpyRef(double a, std::span<const double> x, std::span<double> y) {
  ARM_CHECK(x.size() == y.size(), "axpy: x has %zu elements but y has %zu", x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + y[i];
}

void axpyVk(vk::Context& ctx, VkCommandBuffer cmd, float a, const vk::Buffer& x, vk::Buffer& y, uint32_t count) {
  ARM_CHECK(x.size() >= count * sizeof(float) && y.size() >= count * sizeof(float),
            "axpy: buffers hold %llu and %llu bytes, %u floats need %llu", (unsigned long long)x.size(),
            (unsigned long long)y.size(), count, (unsigned long long)count * sizeof(float));
  const VkDeviceSize bytes = VkDeviceSize(count) * sizeof(float);
  ARM_CHECK(bytes <= ctx.info().maxStorageBufferRange,
            "axpy: %u floats exceed the device's storage buffer range (%llu bytes)", count,
            (unsigned long long)ctx.info().maxStorageBufferRange);
  if (count == 0) return;
  const auto& program = ctx.program(shaders::axpy, 2, sizeof(AxpyPush));
  AxpyPush push{a, count};
  vk::dispatch(cmd, program, vk::groupCount(count, AXPY_WORKGROUP_SIZE), {x.view(0, bytes), y.view(0, bytes)}, push);
}

}  // namespace armature
