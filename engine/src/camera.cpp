#include "armature/camera.h"

#include <cmath>

namespace armature {

std::array<float, 16> lookAtPerspective(const std::array<float, 3>& e, const std::array<float, 3>& target, float fovY,
                                        float aspect, float zNear, float zFar) {
  using Mat4 = std::array<float, 16>;
  float f[3] = {target[0] - e[0], target[1] - e[1], target[2] - e[2]};
  const float fl = std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  for (float& x : f) x /= fl;
  const float up[3] = {0, 1, 0};
  float s[3] = {f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0]};
  const float sl = std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
  for (float& x : s) x /= sl;
  const float u[3] = {s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0]};
  const Mat4 view = {s[0],
                     u[0],
                     -f[0],
                     0,
                     s[1],
                     u[1],
                     -f[1],
                     0,
                     s[2],
                     u[2],
                     -f[2],
                     0,
                     -(s[0] * e[0] + s[1] * e[1] + s[2] * e[2]),
                     -(u[0] * e[0] + u[1] * e[1] + u[2] * e[2]),
                     f[0] * e[0] + f[1] * e[1] + f[2] * e[2],
                     1};
  // Right-handed perspective to Vulkan clip space: y flipped (row 0 at the top), depth in [0, 1].
  const float t = 1.f / std::tan(fovY / 2);
  const Mat4 proj = {
      t / aspect, 0, 0, 0, 0, -t, 0, 0, 0, 0, zFar / (zNear - zFar), -1, 0, 0, zNear * zFar / (zNear - zFar), 0};
  Mat4 c{};  // proj · view
  for (int col = 0; col < 4; ++col)
    for (int row = 0; row < 4; ++row)
      for (int k = 0; k < 4; ++k) c[size_t(col * 4 + row)] += proj[size_t(k * 4 + row)] * view[size_t(col * 4 + k)];
  return c;
}

}  // namespace armature
