#pragma once
// Affine transforms as 3×4 row-major [A | t] in double (the last row 0 0 0 1 implied) and rotations as quaternions:
// the CPU side's one definition of composing transforms, a quaternion's matrix and back, and slerp.
#include <algorithm>
#include <array>
#include <cmath>

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

// The unit quaternion (x, y, z, w) of a rotation matrix R (row-major 3×3), by Shepperd's method: from the largest of
// the trace and the diagonal, so no division is by a small number.
inline std::array<double, 4> quaternionFromRotation(const double* R) {
  const double trace = R[0] + R[4] + R[8];
  if (trace > 0) {
    const double s = 2 * std::sqrt(trace + 1);
    return {(R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s, s / 4};
  }
  if (R[0] > R[4] && R[0] > R[8]) {
    const double s = 2 * std::sqrt(1 + R[0] - R[4] - R[8]);
    return {s / 4, (R[1] + R[3]) / s, (R[2] + R[6]) / s, (R[7] - R[5]) / s};
  }
  if (R[4] > R[8]) {
    const double s = 2 * std::sqrt(1 + R[4] - R[0] - R[8]);
    return {(R[1] + R[3]) / s, s / 4, (R[5] + R[7]) / s, (R[2] - R[6]) / s};
  }
  const double s = 2 * std::sqrt(1 + R[8] - R[0] - R[4]);
  return {(R[2] + R[6]) / s, (R[5] + R[7]) / s, s / 4, (R[3] - R[1]) / s};
}

// Spherical interpolation of unit quaternions along the shorter arc, renormalised (any component order: it uses
// only dot products and sums).
inline std::array<double, 4> slerp(const std::array<double, 4>& a, std::array<double, 4> b, double t) {
  double dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  if (dot < 0) {
    for (double& c : b) c = -c;
    dot = -dot;
  }
  double wa = 1 - t, wb = t;
  if (dot < 1 - 1e-9) {
    const double theta = std::acos(std::min(dot, 1.0)), s = std::sin(theta);
    wa = std::sin((1 - t) * theta) / s, wb = std::sin(t * theta) / s;
  }
  std::array<double, 4> q;
  double norm = 0;
  for (size_t c = 0; c < 4; ++c) q[c] = wa * a[c] + wb * b[c], norm += q[c] * q[c];
  for (double& c : q) c = norm > 0 ? c / std::sqrt(norm) : 0.0;
  return q;
}

}  // namespace armature
