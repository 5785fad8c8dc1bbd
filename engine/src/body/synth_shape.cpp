// The synthetic humanoid: rest joints and the capsules and ellipsoids of its body (synth_geometry.h).
#include <algorithm>
#include <cmath>

#include "synth_geometry.h"

namespace armature::synth {

// ---- the humanoid ---------------------------------------------------------------------------------------

std::vector<Vec3> restJoints() {
  std::vector<Vec3> j(55);
  auto both = [&](int left, int right, Vec3 p) {
    j[size_t(left)] = p;
    j[size_t(right)] = {-p.x, p.y, p.z};
  };
  j[0] = {0, 0, 0};
  both(1, 2, {0.085, -0.07, 0.0});
  j[3] = {0, 0.11, -0.01};
  both(4, 5, {0.095, -0.47, 0.005});
  j[6] = {0, 0.24, 0.0};
  both(7, 8, {0.10, -0.86, -0.03});
  j[9] = {0, 0.31, 0.005};
  both(10, 11, {0.11, -0.915, 0.10});
  j[12] = {0, 0.48, -0.01};
  both(13, 14, {0.07, 0.43, 0.0});
  j[15] = {0, 0.58, 0.005};
  both(16, 17, {0.175, 0.44, -0.01});
  both(18, 19, {0.43, 0.44, -0.02});
  both(20, 21, {0.68, 0.44, -0.01});
  j[22] = {0, 0.585, 0.025};
  both(23, 24, {0.032, 0.655, 0.088});
  // Fingers in SMPL-X order: index, middle, pinky, ring, thumb; three joints each, palm down, fingers along +x.
  struct Finger {
    Vec3 base, dir;
    double len[3];
  };
  const Finger fingers[5] = {
      {{0.775, 0.44, 0.026}, {1, 0, 0.08}, {0.040, 0.025, 0.022}},
      {{0.780, 0.44, 0.003}, {1, 0, 0}, {0.045, 0.030, 0.024}},
      {{0.765, 0.44, -0.043}, {1, 0, -0.12}, {0.030, 0.020, 0.018}},
      {{0.775, 0.44, -0.020}, {1, 0, -0.06}, {0.042, 0.028, 0.023}},
      {{0.705, 0.43, 0.030}, {0.7, -0.12, 0.7}, {0.035, 0.030, 0.025}},
  };
  for (int f = 0; f < 5; ++f) {
    Vec3 p = fingers[f].base, d = normalize(fingers[f].dir);
    for (int k = 0; k < 3; ++k) {
      both(25 + f * 3 + k, 40 + f * 3 + k, p);
      p = p + d * fingers[f].len[k];
    }
  }
  return j;
}

namespace {
// Where the last segment of each finger ends (not a joint).
Vec3 fingerTip(const std::vector<Vec3>& j, int distal) {
  Vec3 d = j[size_t(distal)] - j[size_t(distal - 1)];
  return j[size_t(distal)] + normalize(d) * (length(d) * 0.85);
}
}  // namespace

std::vector<Primitive> humanoid(const std::vector<Vec3>& j) {
  std::vector<Primitive> p;
  auto ell = [&](Vec3 c, Vec3 r, int joint, double blend = 0.03) {
    p.push_back({Primitive::Ellipsoid, c, r, 0, 0, blend, joint});
  };
  auto cap = [&](Vec3 a, Vec3 b, double ra, double rb, int joint, double blend = 0.025) {
    p.push_back({Primitive::Capsule, a, b, ra, rb, blend, joint});
  };
  ell({0, -0.03, -0.005}, {0.155, 0.115, 0.105}, 0);
  ell({0, 0.10, 0.0}, {0.14, 0.12, 0.095}, 3);
  ell({0, 0.25, 0.0}, {0.155, 0.13, 0.105}, 6);
  ell({0, 0.36, -0.01}, {0.165, 0.10, 0.095}, 9);
  cap({0, 0.43, -0.015}, {0, 0.60, 0.0}, 0.052, 0.048, 12, 0.03);
  ell({0, 0.675, 0.012}, {0.078, 0.102, 0.092}, 15, 0.03);
  ell({0, 0.606, 0.045}, {0.052, 0.038, 0.05}, 22, 0.025);  // jaw and chin
  ell({0, 0.652, 0.097}, {0.013, 0.022, 0.02}, 15, 0.01);   // nose
  for (int side = 0; side < 2; ++side) {
    double sx = side ? -1 : 1;
    int o = side;  // right-side joints are the left ones + 1 (body) or + 15 (hands)
    cap({sx * 0.03, 0.43, -0.012}, j[size_t(16 + o)], 0.058, 0.052, 13 + o, 0.03);
    cap(j[size_t(16 + o)], j[size_t(18 + o)], 0.05, 0.04, 16 + o, 0.02);
    cap(j[size_t(18 + o)], j[size_t(20 + o)], 0.039, 0.027, 18 + o, 0.015);
    Vec3 w = j[size_t(20 + o)];
    ell({w.x + sx * 0.052, w.y - 0.002, w.z - 0.006}, {0.056, 0.017, 0.046}, 20 + o, 0.012);
    for (int f = 0; f < 5; ++f) {
      int base = (side ? 40 : 25) + f * 3;
      double r = f == 4 ? 0.0115 : f == 2 ? 0.0082 : 0.0092;
      Vec3 tip = fingerTip(j, base + 2);
      Vec3 start = f == 4 ? j[size_t(base)] + (w - j[size_t(base)]) * 0.3 : j[size_t(base)];
      cap(start, j[size_t(base + 1)], r, r * 0.95, base, 0.004);
      cap(j[size_t(base + 1)], j[size_t(base + 2)], r * 0.95, r * 0.88, base + 1, 0.003);
      cap(j[size_t(base + 2)], tip, r * 0.88, r * 0.8, base + 2, 0.003);
    }
    cap(j[size_t(1 + o)] + Vec3{0, 0.03, 0}, j[size_t(4 + o)], 0.085, 0.055, 1 + o, 0.04);
    cap(j[size_t(4 + o)], j[size_t(7 + o)], 0.053, 0.037, 4 + o, 0.02);
    cap(j[size_t(7 + o)] + Vec3{0, -0.03, -0.035}, j[size_t(10 + o)], 0.035, 0.03, 7 + o, 0.02);
    cap(j[size_t(10 + o)], j[size_t(10 + o)] + Vec3{0, 0.002, 0.055}, 0.029, 0.022, 10 + o, 0.015);
  }
  return p;
}

namespace {
double smin(double a, double b, double k) {
  double h = std::max(k - std::abs(a - b), 0.0) / k;
  return std::min(a, b) - h * h * k * 0.25;
}
}  // namespace

double field(const std::vector<Primitive>& prims, const std::vector<int>& subset, const Vec3& q) {
  double d = 1e9;
  for (int i : subset) d = smin(d, prims[size_t(i)].eval(q), prims[size_t(i)].blend);
  return d;
}

}  // namespace armature::synth
