// Requirements before a host creates its device (armature/vk/host.h). Every query goes through the host's
// vkGetInstanceProcAddr, so nothing here loads functions into anyone's table.
#include "armature/vk/host.h"

#include <algorithm>
#include <cstring>

#include "armature/error.h"
#include "armature/vk/context.h"
#include "keep_loaded.h"

#include <volk.h>

namespace armature::vk {

const std::vector<DeviceExtensionNeed>& deviceExtensionNeeds() {
  static const std::vector<DeviceExtensionNeed> needs = {
      {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, true, "every compute program binds its buffers as push descriptors"},
      {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, false, "CUDA writing into Vulkan buffers (zero-copy interop)"},
      {VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME, false, "CUDA and Vulkan waiting on each other's timelines"},
      {VK_EXT_MEMORY_BUDGET_EXTENSION_NAME, false, "device memory use and budget in profiles"},
      {VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME, false, "float atomic adds in backward passes (else a slower path)"},
      {VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME, false, "GPU zones placed on the host clock in profiles"},
  };
  return needs;
}

namespace {

template <typename T>
T* findInChain(void* chain, VkStructureType type) {
  for (auto* s = static_cast<VkBaseOutStructure*>(chain); s; s = s->pNext)
    if (s->sType == type) return reinterpret_cast<T*>(s);
  return nullptr;
}

}  // namespace

struct DeviceRequirements::State {
  VkPhysicalDeviceFeatures supported{};
  VkPhysicalDeviceVulkan12Features supported12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  bool floatAtomicAdd = false;
  std::vector<const char*> extensions;
  std::vector<DeviceExtensionNeed> missing;
  std::string unsupported;
  // Structures appended to a host's chain: stable addresses (a list of owned blocks).
  std::vector<std::unique_ptr<VkBaseOutStructure, void (*)(VkBaseOutStructure*)>> appended;

  // The chain's structure of `type`, or a new one appended to it (owned here).
  template <typename T>
  T& findOrAppend(VkPhysicalDeviceFeatures2& chain, VkStructureType type) {
    if (T* found = findInChain<T>(&chain, type)) return *found;
    auto* block = new T{};
    block->sType = type;
    block->pNext = chain.pNext;
    chain.pNext = block;
    appended.emplace_back(reinterpret_cast<VkBaseOutStructure*>(block),
                          [](VkBaseOutStructure* p) { delete reinterpret_cast<T*>(p); });
    return *block;
  }
};

DeviceRequirements::DeviceRequirements(VkInstance instance, VkPhysicalDevice physicalDevice,
                                       PFN_vkGetInstanceProcAddr getInstanceProcAddr)
    : m_state(std::make_unique<State>()) {
  ARM_CHECK(instance && physicalDevice, "DeviceRequirements: the instance and physical device are required");
  keepLibrariesLoaded();  // a host's instance: its driver and layers are loaded by now
  PFN_vkGetInstanceProcAddr gipa = getInstanceProcAddr ? getInstanceProcAddr : systemGetInstanceProcAddr();
  auto load = [&](const char* name) {
    PFN_vkVoidFunction f = gipa(instance, name);
    if (!f) throw Error(std::string("DeviceRequirements: the instance has no ") + name);
    return f;
  };
  const auto getProperties = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(load("vkGetPhysicalDeviceProperties"));
  const auto getFeatures2 = reinterpret_cast<PFN_vkGetPhysicalDeviceFeatures2>(load("vkGetPhysicalDeviceFeatures2"));
  const auto enumerate =
      reinterpret_cast<PFN_vkEnumerateDeviceExtensionProperties>(load("vkEnumerateDeviceExtensionProperties"));

  State& s = *m_state;
  VkPhysicalDeviceProperties props;
  getProperties(physicalDevice, &props);
  uint32_t n = 0;
  enumerate(physicalDevice, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> available(n);
  enumerate(physicalDevice, nullptr, &n, available.data());
  auto has = [&](const char* name) {
    return std::any_of(available.begin(), available.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
  };

  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  s.supported12.pNext = has(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) ? &atomicFloat : nullptr;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &s.supported12};
  getFeatures2(physicalDevice, &f2);
  s.supported = f2.features;
  s.supported12.pNext = nullptr;
  s.floatAtomicAdd = atomicFloat.shaderBufferFloat32AtomicAdd;

  if (props.apiVersion < kRequiredApiVersion)
    s.unsupported = std::string("'") + props.deviceName + "' supports Vulkan " + versionString(props.apiVersion) +
                    "; Armature needs " + versionString(kRequiredApiVersion);
  for (const DeviceExtensionNeed& need : deviceExtensionNeeds()) {
    if (has(need.name)) {
      // The float atomics extension is worth enabling only with its feature.
      if (std::strcmp(need.name, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) != 0 || s.floatAtomicAdd)
        s.extensions.push_back(need.name);
    } else if (need.required) {
      if (s.unsupported.empty())
        s.unsupported = std::string("'") + props.deviceName + "' lacks " + need.name + ", which Armature requires (" +
                        need.enables + ")";
    } else {
      s.missing.push_back(need);
    }
  }
  if (s.unsupported.empty() && !s.supported12.timelineSemaphore)
    s.unsupported =
        std::string("'") + props.deviceName + "' lacks the timelineSemaphore feature, which Armature requires";
}

DeviceRequirements::~DeviceRequirements() = default;

const std::string& DeviceRequirements::unsupported() const { return m_state->unsupported; }
const std::vector<const char*>& DeviceRequirements::extensions() const { return m_state->extensions; }
std::vector<DeviceExtensionNeed> DeviceRequirements::missingOptional() const { return m_state->missing; }

void DeviceRequirements::addFeatures(VkPhysicalDeviceFeatures2& features) {
  State& s = *m_state;
  if (!s.unsupported.empty()) throw Error(s.unsupported);
  ARM_CHECK(features.sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            "addFeatures: the chain must start with a VkPhysicalDeviceFeatures2");
  features.features.shaderInt64 |= s.supported.shaderInt64;
  features.features.shaderFloat64 |= s.supported.shaderFloat64;
  features.features.geometryShader |= s.supported.geometryShader;  // gl_PrimitiveID in RasterHardware's fragments
  // Vulkan 1.2's features: in the host's VkPhysicalDeviceVulkan12Features, or (a chain may not hold both) in the
  // structures they were promoted from.
  if (auto* f12 = findInChain<VkPhysicalDeviceVulkan12Features>(
          &features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)) {
    f12->timelineSemaphore = VK_TRUE;
    f12->hostQueryReset |= s.supported12.hostQueryReset;
    f12->shaderBufferInt64Atomics |= s.supported12.shaderBufferInt64Atomics;
  } else {
    s.findOrAppend<VkPhysicalDeviceTimelineSemaphoreFeatures>(
         features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES)
        .timelineSemaphore = VK_TRUE;
    if (s.supported12.hostQueryReset)
      s.findOrAppend<VkPhysicalDeviceHostQueryResetFeatures>(
           features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES)
          .hostQueryReset = VK_TRUE;
    if (s.supported12.shaderBufferInt64Atomics)
      s.findOrAppend<VkPhysicalDeviceShaderAtomicInt64Features>(
           features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES)
          .shaderBufferInt64Atomics = VK_TRUE;
  }
  if (s.floatAtomicAdd)
    s.findOrAppend<VkPhysicalDeviceShaderAtomicFloatFeaturesEXT>(
         features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT)
        .shaderBufferFloat32AtomicAdd = VK_TRUE;
}

void orderOutputsFor(VkCommandBuffer cmd, Consumer consumer) {
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  VkAccessFlags access = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  switch (consumer) {
    case Consumer::VertexInput:
      stage = VK_PIPELINE_STAGE_VERTEX_INPUT_BIT,
      access = VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT | VK_ACCESS_INDEX_READ_BIT;
      break;
    case Consumer::Fragment:
      stage = VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
      access = VK_ACCESS_SHADER_READ_BIT;
      break;
    case Consumer::Transfer:
      stage = VK_PIPELINE_STAGE_TRANSFER_BIT, access = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      break;
    case Consumer::Compute:
      break;
    case Consumer::Host:
      stage = VK_PIPELINE_STAGE_HOST_BIT, access = VK_ACCESS_HOST_READ_BIT;
      break;
  }
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = access;
  // Ops write from compute shaders and transfers (fills, copies of their scratch).
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, stage, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace armature::vk
