#pragma once
// Affine transforms as 3×4 row-major [A | t] in double (the last row 0 0 0 1 implied): the CPU side's one definition
// of composing transforms and of a rotation quaternion's matrix.
#include <array>

namespace armature {

using Mat34 = std::array<double, 12>;

inline constexpr Mat34 kIdentity34 = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};

// a · b.
inline Mat34 compose(const Mat34& a, const Mat34& b) {
  Mat34 c;
  for (int r = 0; r < 3; ++r)
    for (int col = 0; col < 4; ++col) {
      double x = col == 3 ? a[size_t(r * 4 + 3)] : 0.0;
      for (int k = 0; k < 3; ++k) x += a[size_t(r * 4 + k)] * b[size_t(k * 4 + col)];
      c[size_t(r * 4 + col)] = x;
    }
  return c;
}

// T(t) · R(q) · S(s) for a quaternion q = (x, y, z, w) by the unit quaternion's formula (not renormalised);
// s null: no scale.
inline Mat34 trsMatrix(const double* t, const double* q, const double* s = nullptr) {
  const double x = q[0], y = q[1], z = q[2], w = q[3];
  const double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
                       2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                       2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y)};
  Mat34 m;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) m[size_t(r * 4 + c)] = R[r * 3 + c] * (s ? s[c] : 1.0);
    m[size_t(r * 4 + 3)] = t[r];
  }
  return m;
}

}  // namespace armature
