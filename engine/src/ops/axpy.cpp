#include "armature/ops/axpy.h"

#include "dispatch.h"

namespace armature {
namespace vk {
void axpy(const Exec& exec, const AxpyArgs& args);
}
namespace cuda {
void axpy(const Exec& exec, const AxpyArgs& args);
}

void axpy(const Exec& exec, const AxpyArgs& args) {
  OpChecks check("axpy", exec);
  check.view("x", args.x, ElementType::Float32, args.x.count);
  check.view("y", args.y, ElementType::Float32, args.x.count);
  ARM_CHECK(args.x.count <= UINT32_MAX, "axpy: %zu elements, at most 2^32 - 1", args.x.count);
  if (args.x.count == 0) return;
  dispatch("axpy", exec, args, &vk::axpy, ARM_CUDA_BACKEND(axpy));
}

void axpyRef(double a, std::span<const double> x, std::span<double> y) {
  ARM_CHECK(x.size() == y.size(), "axpy: x has %zu elements but y has %zu", x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + y[i];
}

}  // namespace armature
