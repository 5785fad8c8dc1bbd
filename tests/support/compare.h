#pragma once
// Comparing a GPU result with the double reference: every value must be finite (so an unwritten, NaN-poisoned
// output fails) and within |got - want| <= abs + rel * |want|. On failure it reports the worst element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

namespace armature::test {

struct Tol {
  double abs = 0;
  double rel = 0;
};

template <typename Got, typename Want>
::testing::AssertionResult allClose(std::span<const Got> got, std::span<const Want> want, Tol tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  size_t nonFinite = 0, bad = 0, worst = 0;
  double worstExcess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = double(got[i]), w = double(want[i]);
    if (!std::isfinite(g)) {
      if (nonFinite++ == 0 && worstExcess < INFINITY) worst = i, worstExcess = INFINITY;
      continue;
    }
    double err = std::abs(g - w), allowed = tol.abs + tol.rel * std::abs(w);
    if (err > allowed) {
      ++bad;
      if (err - allowed > worstExcess) worst = i, worstExcess = err - allowed;
    }
  }
  if (nonFinite == 0 && bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << nonFinite << " non-finite and " << bad << " out-of-tolerance values of "
                                       << got.size() << "; worst at [" << worst << "]: got " << double(got[worst])
                                       << ", expected " << double(want[worst]) << " (abs " << tol.abs << ", rel "
                                       << tol.rel << ")";
}

template <typename Got, typename Want>
::testing::AssertionResult allClose(const std::vector<Got>& got, const std::vector<Want>& want, Tol tol) {
  return allClose(std::span<const Got>(got), std::span<const Want>(want), tol);
}

// The bits of a quiet NaN: what outputs are filled with before a GPU run.
inline uint32_t nanBits() {
  float f = std::numeric_limits<float>::quiet_NaN();
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The largest magnitude in v (0 for an empty one): the scale gradient tolerances are stated against.
inline double largest(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Fresh random values for every run (seed from the test's random seed, printed by gtest on failure).
inline std::mt19937_64& rng() {
  static std::mt19937_64 gen(::testing::UnitTest::GetInstance()->random_seed() ^ 0x9e3779b97f4a7c15ull);
  return gen;
}

inline std::vector<double> uniform(size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

// ‖a − b‖ / ‖b‖ over whole vectors (infinite when a holds a non-finite value): for sums of many terms, where one
// element's error says less than the whole vector's.
inline double relativeError(const std::vector<float>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

template <typename To, typename From>
std::vector<To> cast(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

}  // namespace armature::test
