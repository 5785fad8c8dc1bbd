#include "armature/read_limits.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "armature/error.h"

namespace armature {

namespace {

// A positive whole number from the environment, or `fallback` where the variable is unset.
uint64_t fromEnvironment(const char* name, uint64_t fallback, uint64_t scale, uint64_t most) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno || *end || v == 0 || v > most / scale)
    throw Error(std::string(name) + "='" + text + "': expected a whole number from 1 to " +
                std::to_string(most / scale));
  return uint64_t(v) * scale;
}

ReadLimits limitsFromEnvironment() {
  ReadLimits l;
  l.totalBytes = fromEnvironment("ARMATURE_READ_BUDGET_MIB", l.totalBytes, uint64_t(1) << 20, uint64_t(1) << 50);
  l.arrayBytes = l.totalBytes / 2;
  l.frames = fromEnvironment("ARMATURE_MAX_FRAMES", l.frames, 1, uint64_t(1) << 32);
  l.gaussians = fromEnvironment("ARMATURE_MAX_GAUSSIANS", l.gaussians, 1, uint64_t(1) << 32);
  return l;
}

}  // namespace

std::string mebibytes(uint64_t bytes) {
  char text[40];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / 1048576.0);
  return text;
}

const ReadLimits& readLimits() {
  static const ReadLimits limits = limitsFromEnvironment();
  return limits;
}

uint64_t checkedProduct(std::initializer_list<uint64_t> factors, const std::string& what) {
  uint64_t product = 1;
  bool overflow = false;
  for (uint64_t f : factors) overflow |= __builtin_mul_overflow(product, f, &product);
  if (overflow) {
    std::string text;
    for (uint64_t f : factors) text += (text.empty() ? "" : " x ") + std::to_string(f);
    throw Error(what + ": " + text + " does not fit 64 bits (a corrupt or crafted size)");
  }
  return product;
}

uint64_t checkedSum(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    throw Error(what + ": " + std::to_string(a) + " + " + std::to_string(b) +
                " does not fit 64 bits (a corrupt or crafted size)");
  return sum;
}

void checkLimit(uint64_t value, uint64_t limit, const std::string& what, const char* unit, const char* raise) {
  if (value > limit)
    throw Error(what + ": " + std::to_string(value) + " " + unit + ", over the limit of " + std::to_string(limit) +
                " (" + raise + ")");
}

void checkArrayBytes(uint64_t bytes, const std::string& what) {
  if (bytes > readLimits().arrayBytes)
    throw Error(what + ": " + mebibytes(bytes) + " once decoded, over the limit of " +
                mebibytes(readLimits().arrayBytes) + " an array (ARMATURE_READ_BUDGET_MIB raises it)");
}

void checkFinite(const double* values, uint64_t count, double maxMagnitude, const std::string& what) {
  for (uint64_t i = 0; i < count; ++i)
    if (!(std::fabs(values[i]) <= maxMagnitude)) {
      char text[96];
      if (std::isfinite(values[i]))
        std::snprintf(text, sizeof text, "%g, past the magnitude of %g a valid value has", values[i], maxMagnitude);
      else
        std::snprintf(text, sizeof text, "%g, not a finite number", values[i]);
      throw Error(what + ": element " + std::to_string(i) + " is " + text);
    }
}

}  // namespace armature
