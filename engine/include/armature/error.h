#pragma once
// Errors: armature::Error for API failures and bad user input (always on, Release too);
// assert() only for programmer invariants.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace armature {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
std::string format(const char* fmt, Args&&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return fmt;
  } else {
    int n = std::snprintf(nullptr, 0, fmt, args...);
    std::string s(n > 0 ? size_t(n) : 0, '\0');
    std::snprintf(s.data(), s.size() + 1, fmt, args...);
    return s;
  }
}
}  // namespace detail

}  // namespace armature

// Checks user input at an API boundary: ARM_CHECK(n > 0, "batch must be > 0, got %d", n).
#define ARM_CHECK(cond, ...)                                                       \
  do {                                                                             \
    if (!(cond)) throw ::armature::Error(::armature::detail::format(__VA_ARGS__)); \
  } while (0)
