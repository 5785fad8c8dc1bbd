// Adam's entry point and CPU reference; the backends are adam_vk.cpp and cuda/src/adam.cu.
#include "armature/ops/adam.h"

#include <cmath>

#include "adam_backend.h"
#include "dispatch.h"

namespace armature {

namespace {
void checkSettings(const AdamSettings& s, uint32_t step) {
  ARM_CHECK(step >= 1, "adamStep: steps count from 1, got %u", step);
  ARM_CHECK(std::isfinite(s.lr) && s.lr > 0 && s.beta1 >= 0 && s.beta1 < 1 && s.beta2 >= 0 && s.beta2 < 1 && s.eps > 0,
            "adamStep: lr %g, beta1 %g, beta2 %g, eps %g: need lr > 0, betas in [0, 1), eps > 0", s.lr, s.beta1,
            s.beta2, s.eps);
}
}  // namespace

void adamStepRef(std::vector<double>& params, const std::vector<double>& grads, std::vector<double>& m,
                 std::vector<double>& v, const AdamSettings& s, uint32_t step) {
  checkSettings(s, step);
  ARM_CHECK(grads.size() == params.size() && m.size() == params.size() && v.size() == params.size(),
            "adamStep: %zu params, %zu grads, %zu and %zu moments", params.size(), grads.size(), m.size(), v.size());
  const double c1 = 1 - std::pow(s.beta1, step), c2 = 1 - std::pow(s.beta2, step);
  for (size_t i = 0; i < params.size(); ++i) {
    m[i] = s.beta1 * m[i] + (1 - s.beta1) * grads[i];
    v[i] = s.beta2 * v[i] + (1 - s.beta2) * grads[i] * grads[i];
    params[i] -= s.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + s.eps);
  }
}

AdamPush adamPush(const AdamArgs& a) {
  const AdamSettings& s = a.settings;
  return {uint32_t(a.params.count),
          float(s.lr),
          float(s.beta1),
          float(s.beta2),
          float(s.eps),
          float(1 - std::pow(s.beta1, a.step)),
          float(1 - std::pow(s.beta2, a.step)),
          0};
}

void adamStep(const Exec& exec, const AdamArgs& a) {
  const char* op = "adamStep";
  OpChecks check(op, exec);
  checkSettings(a.settings, a.step);
  const size_t n = a.params.count;
  ARM_CHECK(n <= UINT32_MAX, "%s: %zu parameters: more than 2^32", op, n);
  check.view("params", a.params, ElementType::Float32, n);
  check.view("grads", a.grads, ElementType::Float32, n);
  check.view("m", a.m, ElementType::Float32, n);
  check.view("v", a.v, ElementType::Float32, n);
  if (n == 0) return;
  dispatch(op, exec, a, &vk::adamStep, ARM_CUDA_BACKEND(adamStep));
}

}  // namespace armature
