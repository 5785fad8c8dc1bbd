#pragma once
// The message of the armature::Error a call throws ("" when it throws none), for matching with HasSubstr.
#include <functional>
#include <string>

#include "armature/error.h"

namespace armature::test {

inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace armature::test
