#include "armature/backend.h"

#include <string>

#include "armature/error.h"

namespace armature {

Backend parseBackend(std::string_view name) {
  if (name == "cpu") return Backend::Cpu;
  if (name == "vulkan" || name == "vk") return Backend::Vulkan;
  if (name == "cuda") return Backend::Cuda;
  throw Error("unknown backend '" + std::string(name) + "' (expected cpu, vulkan or cuda)");
}

}  // namespace armature
