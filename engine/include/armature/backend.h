#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace armature {

enum class Backend { Cpu, Vulkan, Cuda };

inline const char* backendName(Backend b) {
  switch (b) {
    case Backend::Cpu:
      return "cpu";
    case Backend::Vulkan:
      return "vulkan";
    case Backend::Cuda:
      return "cuda";
  }
  return "?";
}

// Parses "cpu" | "vulkan" | "cuda"; throws armature::Error otherwise.
Backend parseBackend(std::string_view name);

}  // namespace armature
