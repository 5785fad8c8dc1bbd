#pragma once
// A path in the system's temporary folder, unique to this test process.
#include <unistd.h>

#include <filesystem>
#include <string>

namespace armature::test {
inline std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("armature_" + std::to_string(::getpid()) + "_" + name)).string();
}
}  // namespace armature::test
