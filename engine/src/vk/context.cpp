#include "armature/vk/context.h"

#include <volk.h>

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>

#include "armature/shaders.h"
#include "keep_loaded.h"

namespace armature::vk {

std::string resultName(VkResult r) {
  switch (r) {
#define ARM_CASE(x) \
  case x:           \
    return #x
    ARM_CASE(VK_SUCCESS);
    ARM_CASE(VK_NOT_READY);
    ARM_CASE(VK_TIMEOUT);
    ARM_CASE(VK_INCOMPLETE);
    ARM_CASE(VK_ERROR_OUT_OF_HOST_MEMORY);
    ARM_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY);
    ARM_CASE(VK_ERROR_INITIALIZATION_FAILED);
    ARM_CASE(VK_ERROR_DEVICE_LOST);
    ARM_CASE(VK_ERROR_MEMORY_MAP_FAILED);
    ARM_CASE(VK_ERROR_LAYER_NOT_PRESENT);
    ARM_CASE(VK_ERROR_EXTENSION_NOT_PRESENT);
    ARM_CASE(VK_ERROR_FEATURE_NOT_PRESENT);
    ARM_CASE(VK_ERROR_INCOMPATIBLE_DRIVER);
    ARM_CASE(VK_ERROR_TOO_MANY_OBJECTS);
    ARM_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED);
    ARM_CASE(VK_ERROR_SURFACE_LOST_KHR);
    ARM_CASE(VK_ERROR_OUT_OF_DATE_KHR);
    ARM_CASE(VK_SUBOPTIMAL_KHR);
    ARM_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE);
#undef ARM_CASE
    default:
      return "VkResult(" + std::to_string(int(r)) + ")";
  }
}

const char* deviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU (software)";
    default:
      return "other";
  }
}

std::string versionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

namespace {

void loadVulkan() {
  static std::once_flag once;
  static VkResult result = VK_SUCCESS;
  std::call_once(once, [] { result = volkInitialize(); });
  if (result != VK_SUCCESS)
    throw Error(
        "no Vulkan loader found (libvulkan.so.1): install libvulkan1 and a driver "
        "(mesa-vulkan-drivers gives the CPU driver lavapipe)");
}

}  // namespace

PFN_vkGetInstanceProcAddr systemGetInstanceProcAddr() {
  loadVulkan();
  return vkGetInstanceProcAddr;
}

namespace {

bool hasExtension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(), [&](auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::vector<VkExtensionProperties> deviceExtensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  return exts;
}

PhysicalDeviceInfo describe(VkPhysicalDevice pd, uint32_t index) {
  PhysicalDeviceInfo d;
  d.handle = pd;
  d.index = index;
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &driver};
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, &subgroup};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &ids};
  vkGetPhysicalDeviceProperties2(pd, &props);
  d.name = props.properties.deviceName;
  d.type = props.properties.deviceType;
  d.apiVersion = props.properties.apiVersion;
  d.driverName = driver.driverName;
  d.driverInfo = driver.driverInfo;
  d.driverId = driver.driverID;
  d.subgroupSize = subgroup.subgroupSize;
  d.subgroupSums = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                   (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) &&
                   (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT);
  d.subgroupShuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  std::memcpy(d.deviceUuid, ids.deviceUUID, VK_UUID_SIZE);
  d.timestampPeriodNs = props.properties.limits.timestampPeriod;
  d.maxComputeSharedMemory = props.properties.limits.maxComputeSharedMemorySize;
  d.maxStorageBufferRange = props.properties.limits.maxStorageBufferRange;
  for (int i = 0; i < 3; ++i) d.maxComputeWorkGroupCount[i] = props.properties.limits.maxComputeWorkGroupCount[i];
  d.minStorageBufferOffsetAlignment = props.properties.limits.minStorageBufferOffsetAlignment;

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
  vkGetPhysicalDeviceFeatures2(pd, &f);
  d.int64Atomics = f12.shaderBufferInt64Atomics;
  d.float64 = f.features.shaderFloat64;
  d.int64 = f.features.shaderInt64;
  d.timelineSemaphore = f12.timelineSemaphore;
  d.hostQueryReset = f12.hostQueryReset;

  auto exts = deviceExtensions(pd);
  if (hasExtension(exts, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &af};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    d.float32AtomicAdd = af.shaderBufferFloat32AtomicAdd;
  }
  d.externalMemoryFd = hasExtension(exts, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  d.externalSemaphoreFd = hasExtension(exts, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  d.pushDescriptor = hasExtension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  d.memoryBudget = hasExtension(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (hasExtension(exts, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
      vkGetPhysicalDeviceCalibrateableTimeDomainsEXT) {
    uint32_t n = 0;
    vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(pd, &n, nullptr);
    std::vector<VkTimeDomainEXT> domains(n);
    vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(pd, &n, domains.data());
    auto has = [&](VkTimeDomainEXT t) { return std::find(domains.begin(), domains.end(), t) != domains.end(); };
    d.calibratedTimestamps = has(VK_TIME_DOMAIN_DEVICE_EXT) && has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
  }

  uint32_t qn = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> qs(qn);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, qs.data());
  for (auto& q : qs)
    if (q.queueFlags & VK_QUEUE_COMPUTE_BIT)
      d.timestampValidBits = std::max(d.timestampValidBits, q.timestampValidBits);

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d.deviceLocalBytes += mem.memoryHeaps[i].size;
  return d;
}

std::vector<PhysicalDeviceInfo> listDevices(VkInstance instance) {
  uint32_t n = 0;
  VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  std::vector<VkPhysicalDevice> pds(n);
  VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, pds.data()));
  std::vector<PhysicalDeviceInfo> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(describe(pds[i], i));
  return out;
}

int typeRank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

VkBool32 VKAPI_CALL debugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                  const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  static_cast<Context*>(user)->report(
      (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? MessageSeverity::Error : MessageSeverity::Warning,
      data->pMessage);
  return VK_FALSE;
}

void Context::report(MessageSeverity severity, const std::string& message) {
  m_messageCount++;
  if (m_onMessage)
    m_onMessage(severity, message.c_str());
  else
    std::cerr << "[vulkan validation] " << message << "\n";
}

std::string describeContext(const Context& ctx) {
  const PhysicalDeviceInfo& d = ctx.info();
  std::string s = detail::format("device %s (%s, Vulkan %s, %s)%s\n", d.name.c_str(), deviceTypeName(d.type),
                                 versionString(d.apiVersion).c_str(), d.driverName.c_str(),
                                 ctx.attached() ? ", attached to the host's device" : "");
  auto line = [&](bool on, const char* feature, const char* with, const char* without) {
    s += detail::format("%-26s %s: %s\n", feature, on ? "on " : "off", on ? with : without);
  };
  line(d.int64Atomics, "64-bit buffer atomics", "one-pass z-buffer", "the rasteriser's two-pass 32-bit z-buffer");
  line(d.float64, "shaderFloat64", "double setup and resolve", "integer setup and resolve in the rasteriser");
  line(d.subgroupSums, "subgroup ballot+shuffle", "segmented sums", "an atomic per pixel in the raster backward");
  line(d.float32AtomicAdd, "float32 atomic add", "atomic scatter-adds", "slower scatter-adds in backward passes");
  line(d.externalMemoryFd && d.externalSemaphoreFd, "external memory, semaphores", "CUDA interop can share memory",
       "no zero-copy CUDA interop");
  line(d.memoryBudget, "memory budget", "budget in profiles", "no budget in profiles");
  line(d.calibratedTimestamps, "calibrated timestamps", "GPU zones on the host clock", "GPU zones unaligned");
  return s;
}

std::vector<PhysicalDeviceInfo> enumerateDevices(uint32_t* instanceVersion) {
  loadVulkan();
  uint32_t version = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&version);
  if (instanceVersion) *instanceVersion = version;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "armature";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkInstance instance;
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS) throw Error("vkCreateInstance failed: " + resultName(r) + " (is a Vulkan driver installed?)");
  volkLoadInstanceOnly(instance);
  std::vector<PhysicalDeviceInfo> out;
  try {
    out = listDevices(instance);
  } catch (...) {
    vkDestroyInstance(instance, nullptr);
    throw;
  }
  vkDestroyInstance(instance, nullptr);
  return out;
}

void keepLibrariesLoaded() {
#if defined(__SANITIZE_ADDRESS__)
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        if (info->dlpi_name && *info->dlpi_name) dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        return 0;
      },
      nullptr);
#endif
}

Context::Context(const ContextOptions& options)
    : m_onMessage(options.onMessage), m_guardBuffers(options.guardBuffers || envFlag("ARMATURE_GUARD_BUFFERS")) {
  loadVulkan();
  try {
    createInstance(options);
    pickDevice();
    hide(options.hide);
    createDevice(options);
    hide(options.hide);  // attach() read the device afresh
    createOwnObjects();
    keepLibrariesLoaded();
  } catch (...) {
    destroy();  // a half-built context frees what it created
    throw;
  }
}

void Context::hide(const ContextOptions::Hidden& hidden) {
  m_info.int64Atomics = m_info.int64Atomics && !hidden.int64Atomics;
  m_info.subgroupSums = m_info.subgroupSums && !hidden.subgroupSums;
  m_info.float64 = m_info.float64 && !hidden.float64;
}

Context::Context(const HostDevice& host, const ContextOptions& options)
    : m_onMessage(options.onMessage), m_guardBuffers(options.guardBuffers || envFlag("ARMATURE_GUARD_BUFFERS")) {
  m_attached = true;  // borrowed: destroy() frees only what this context creates
  m_instanceVersion = host.apiVersion;
  try {
    attach(host);
    hide(options.hide);
    createOwnObjects();
    keepLibrariesLoaded();
  } catch (...) {
    destroy();  // only what this context created
    throw;
  }
}

namespace {
// The features a host enabled, read from the chain it gave vkCreateDevice (1.2's from either of their homes).
struct EnabledFeatures {
  VkPhysicalDeviceFeatures core{};
  bool timelineSemaphore = false, hostQueryReset = false, int64Atomics = false, float32AtomicAdd = false;
};
EnabledFeatures readChain(const VkPhysicalDeviceFeatures2& chain) {
  EnabledFeatures e;
  e.core = chain.features;
  for (auto* s = static_cast<const VkBaseInStructure*>(chain.pNext); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s);
        e.timelineSemaphore |= f->timelineSemaphore, e.hostQueryReset |= f->hostQueryReset;
        e.int64Atomics |= f->shaderBufferInt64Atomics;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
        e.timelineSemaphore |= reinterpret_cast<const VkPhysicalDeviceTimelineSemaphoreFeatures*>(s)->timelineSemaphore;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES:
        e.hostQueryReset |= reinterpret_cast<const VkPhysicalDeviceHostQueryResetFeatures*>(s)->hostQueryReset;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES:
        e.int64Atomics |=
            reinterpret_cast<const VkPhysicalDeviceShaderAtomicInt64Features*>(s)->shaderBufferInt64Atomics;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT:
        e.float32AtomicAdd |=
            reinterpret_cast<const VkPhysicalDeviceShaderAtomicFloatFeaturesEXT*>(s)->shaderBufferFloat32AtomicAdd;
        break;
      default:
        break;
    }
  }
  return e;
}
}  // namespace

void Context::followEnabled(const VkPhysicalDeviceFeatures2& chain, const std::vector<std::string>& extensions) {
  auto enabled = [&](const char* name) {
    return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
  };
  for (const DeviceExtensionNeed& need : deviceExtensionNeeds())
    ARM_CHECK(!need.required || enabled(need.name),
              "the device was created without %s, which Armature requires (%s); "
              "vk::DeviceRequirements lists what to enable",
              need.name, need.enables);
  const EnabledFeatures f = readChain(chain);
  ARM_CHECK(f.timelineSemaphore,
            "the device was created without the timelineSemaphore feature, which Armature requires "
            "(vk::DeviceRequirements::addFeatures adds it)");
  // Ops follow what was enabled: what the device has but was not enabled is absent here.
  m_info.pushDescriptor = m_info.timelineSemaphore = true;
  m_info.int64Atomics = m_info.int64Atomics && f.int64Atomics;
  m_info.float64 = m_info.float64 && f.core.shaderFloat64;
  m_info.int64 = m_info.int64 && f.core.shaderInt64;
  m_info.hostQueryReset = m_info.hostQueryReset && f.hostQueryReset;
  m_info.float32AtomicAdd =
      m_info.float32AtomicAdd && f.float32AtomicAdd && enabled(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  m_info.memoryBudget = m_info.memoryBudget && enabled(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  m_info.externalMemoryFd = m_info.externalMemoryFd && enabled(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  m_info.externalSemaphoreFd = m_info.externalSemaphoreFd && enabled(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  m_info.calibratedTimestamps = m_info.calibratedTimestamps && enabled(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
}

void Context::attach(const HostDevice& host) {
  ARM_CHECK(host.instance && host.physicalDevice && host.device && host.queue,
            "attach: the host's instance, physical device, device and queue are all required");
  ARM_CHECK(host.features && host.features->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            "attach: host.features must be the VkPhysicalDeviceFeatures2 chain the device was created with (a VkDevice "
            "cannot be asked which features it has)");
  // Function pointers come from the host's vkGetInstanceProcAddr, into libarmature's private table: the loader's
  // trampolines, which dispatch on each handle, so this context and any other (own or attached) coexist.
  if (host.getInstanceProcAddr)
    volkInitializeCustom(host.getInstanceProcAddr);
  else
    loadVulkan();
  volkLoadInstance(host.instance);
  m_instance = host.instance, m_device = host.device, m_queue = host.queue, m_queueFamily = host.queueFamily;
  m_allocator = host.allocator, m_pipelineCache = host.pipelineCache, m_hostSubmit = host.submit;

  m_allDevices = listDevices(m_instance);
  for (const auto& d : m_allDevices)
    if (d.handle == host.physicalDevice) m_info = d;
  ARM_CHECK(m_info.handle, "attach: host.physicalDevice is not one of host.instance's physical devices");
  ARM_CHECK(host.apiVersion >= kRequiredApiVersion && m_info.apiVersion >= kRequiredApiVersion,
            "attach: '%s' was created for Vulkan %s (the device supports %s); Armature needs %s", m_info.name.c_str(),
            versionString(host.apiVersion).c_str(), versionString(m_info.apiVersion).c_str(),
            versionString(kRequiredApiVersion).c_str());
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(m_info.handle, &families, nullptr);
  std::vector<VkQueueFamilyProperties> qs(families);
  vkGetPhysicalDeviceQueueFamilyProperties(m_info.handle, &families, qs.data());
  ARM_CHECK(host.queueFamily < families && (qs[host.queueFamily].queueFlags & VK_QUEUE_COMPUTE_BIT),
            "attach: queue family %u of '%s' does not do compute", host.queueFamily, m_info.name.c_str());

  followEnabled(*host.features, host.extensions);
  vkGetPhysicalDeviceMemoryProperties(m_info.handle, &m_memory);
}

void Context::createInstance(const ContextOptions& options) {
  m_instanceVersion = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&m_instanceVersion);
  if (m_instanceVersion < VK_API_VERSION_1_2)
    throw Error("the Vulkan loader is " + versionString(m_instanceVersion) + "; Armature needs 1.2 or newer");

  bool validation = options.validation || envFlag("ARMATURE_VALIDATION");
  std::vector<const char*> layers, exts;
  for (auto& e : options.instanceExtensions) exts.push_back(e.c_str());
  if (validation) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    vkEnumerateInstanceLayerProperties(&n, props.data());
    bool found = std::any_of(props.begin(), props.end(),
                             [](auto& l) { return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0; });
    if (!found)
      throw Error(
          "validation requested but VK_LAYER_KHRONOS_validation is not installed "
          "(apt-get install vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "armature";
  app.pEngineName = "armature";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  VkResult r = vkCreateInstance(&ci, nullptr, &m_instance);
  if (r != VK_SUCCESS) throw Error("vkCreateInstance failed: " + resultName(r) + " (is a Vulkan driver installed?)");
  // Instance and device functions through the loader's trampolines, which dispatch on the handle: volk's table
  // is process-global, and several contexts (tests, tools) must not overwrite each other's device pointers.
  volkLoadInstance(m_instance);

  if (validation) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = debugCallback;
    mi.pUserData = this;
    VK_CHECK(vkCreateDebugUtilsMessengerEXT(m_instance, &mi, nullptr, &m_messenger));
    // Instance-extension entry points differ per instance, and volk's table holds the latest instance's:
    // keep our own for teardown.
    m_destroyMessenger = vkDestroyDebugUtilsMessengerEXT;
  }
}

void Context::pickDevice() {
  m_allDevices = listDevices(m_instance);
  if (m_allDevices.empty()) throw Error("no Vulkan physical device found (install mesa-vulkan-drivers for lavapipe)");
  std::vector<PhysicalDeviceInfo> usable;
  for (auto& d : m_allDevices)
    if (d.apiVersion >= VK_API_VERSION_1_2 && d.pushDescriptor && d.timelineSemaphore) usable.push_back(d);

  if (const char* sel = std::getenv("ARMATURE_VK_DEVICE"); sel && *sel) {
    std::string s = sel;
    bool numeric = s.size() <= 9 && std::all_of(s.begin(), s.end(), ::isdigit);
    for (auto& d : m_allDevices) {
      if (numeric ? d.index == uint32_t(std::stoul(s)) : d.name.find(s) != std::string::npos) {
        if (std::find_if(usable.begin(), usable.end(), [&](auto& u) { return u.index == d.index; }) == usable.end())
          throw Error("ARMATURE_VK_DEVICE=" + s + " selects '" + d.name +
                      "', which lacks Vulkan 1.2, VK_KHR_push_descriptor or timeline semaphores");
        m_info = d;
        break;
      }
    }
    if (!m_info.handle) throw Error("ARMATURE_VK_DEVICE=" + s + " matches no device (see `armature info`)");
  } else {
    if (usable.empty())
      throw Error("no Vulkan device supports Vulkan 1.2 with VK_KHR_push_descriptor and timeline semaphores");
    std::stable_sort(usable.begin(), usable.end(),
                     [](auto& a, auto& b) { return typeRank(a.type) < typeRank(b.type); });
    m_info = usable.front();
  }
  vkGetPhysicalDeviceMemoryProperties(m_info.handle, &m_memory);
}

void Context::createDevice(const ContextOptions& options) {
  uint32_t qn = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(m_info.handle, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> qs(qn);
  vkGetPhysicalDeviceQueueFamilyProperties(m_info.handle, &qn, qs.data());
  // One queue that does graphics and compute when it exists (the viewer draws what compute wrote), else compute.
  int family = -1;
  for (uint32_t i = 0; i < qn && family < 0; ++i)
    if ((qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && (qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = int(i);
  for (uint32_t i = 0; i < qn && family < 0; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = int(i);
  if (family < 0) throw Error("device '" + m_info.name + "' has no compute queue");
  m_queueFamily = uint32_t(family);

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = m_queueFamily;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;

  // The library creates its device as a host would: what DeviceRequirements asks for, then the same reading of what
  // was enabled as an attached context makes (followEnabled), so that path runs in every test.
  DeviceRequirements requirements(m_instance, m_info.handle, vkGetInstanceProcAddr);
  if (!requirements.unsupported().empty()) throw Error(requirements.unsupported());
  std::vector<const char*> exts = requirements.extensions();
  if (options.swapchain) exts.push_back(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
  requirements.addFeatures(f);
  // Hidden features (ContextOptions::hide) are not enabled, so the ops take the paths of a device without them.
  f12.shaderBufferInt64Atomics = f12.shaderBufferInt64Atomics && m_info.int64Atomics;
  f.features.shaderFloat64 = f.features.shaderFloat64 && m_info.float64;
  // The viewer's renderer (wireframes, wide lines); cheap where supported.
  VkPhysicalDeviceFeatures supported{};
  vkGetPhysicalDeviceFeatures(m_info.handle, &supported);
  f.features.fillModeNonSolid = supported.fillModeNonSolid;
  f.features.wideLines = supported.wideLines;
  // ARMATURE_SHADER_STATS=1: the driver's statistics of each compute pipeline (registers, shared memory, spills:
  // what decides occupancy) on stderr, where it reports them.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executableInfo{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (envFlag("ARMATURE_SHADER_STATS") &&
      hasExtension(deviceExtensions(m_info.handle), VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    executableInfo.pipelineExecutableInfo = VK_TRUE;
    executableInfo.pNext = f.pNext;
    f.pNext = &executableInfo;
    m_shaderStatistics = true;
  }

  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = uint32_t(exts.size());
  dci.ppEnabledExtensionNames = exts.data();
  VkDevice device = VK_NULL_HANDLE;
  VK_CHECK(vkCreateDevice(m_info.handle, &dci, nullptr, &device));
  m_device = device;  // destroyed with the context, even where attaching to it fails
  // Then the context attaches to its own device exactly as to a host's, so that every context made this way (the
  // viewer's, the tools', the tests') runs the embedding contract's path.
  HostDevice host;
  host.instance = m_instance, host.physicalDevice = m_info.handle, host.device = device;
  host.queueFamily = m_queueFamily;
  vkGetDeviceQueue(device, m_queueFamily, 0, &host.queue);
  host.getInstanceProcAddr = vkGetInstanceProcAddr;
  host.apiVersion = m_info.apiVersion;
  host.extensions.assign(exts.begin(), exts.end());
  host.features = &f;
  attach(host);  // owning what it attaches to (m_attached stays false)
}

void Context::createOwnObjects() {
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT | VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = m_queueFamily;
  VK_CHECK(vkCreateCommandPool(m_device, &pci, m_allocator, &m_oneShotPool));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VK_CHECK(vkCreateFence(m_device, &fci, m_allocator, &m_oneShotFence));
}

namespace {

// One line per executable of `pipeline`: the driver's statistics (VK_KHR_pipeline_executable_properties).
void printShaderStatistics(VkDevice device, VkPipeline pipeline, const char* name) {
  VkPipelineInfoKHR pipelineInfo{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pipelineInfo.pipeline = pipeline;
  uint32_t executables = 0;
  if (vkGetPipelineExecutablePropertiesKHR(device, &pipelineInfo, &executables, nullptr) != VK_SUCCESS) return;
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    info.pipeline = pipeline;
    info.executableIndex = e;
    uint32_t n = 0;
    vkGetPipelineExecutableStatisticsKHR(device, &info, &n, nullptr);
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    vkGetPipelineExecutableStatisticsKHR(device, &info, &n, stats.data());
    std::string line = detail::format("shader %s:", name);
    for (const auto& s : stats) {
      line += detail::format(" %s=", s.name);
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
          line += s.value.b32 ? "yes" : "no";
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
          line += std::to_string(s.value.i64);
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
          line += std::to_string(s.value.u64);
          break;
        default:
          line += detail::format("%g", s.value.f64);
          break;
      }
    }
    std::cerr << line << "\n";
  }
}

}  // namespace

Context::~Context() { destroy(); }

void Context::destroy() {
  if (m_device) {
    // Attached, the host's device is not waited for: the work this context recorded must be done (its own
    // submissions always are; docs/embedding.md).
    if (!m_attached) vkDeviceWaitIdle(m_device);
    for (auto& [key, p] : m_programs) {
      vkDestroyPipeline(m_device, p.pipeline, m_allocator);
      vkDestroyPipelineLayout(m_device, p.layout, m_allocator);
      vkDestroyDescriptorSetLayout(m_device, p.setLayout, m_allocator);
    }
    if (m_oneShotFence) vkDestroyFence(m_device, m_oneShotFence, m_allocator);
    if (m_oneShotPool) vkDestroyCommandPool(m_device, m_oneShotPool, m_allocator);
    if (!m_attached) vkDestroyDevice(m_device, nullptr);
  }
  if (m_messenger) m_destroyMessenger(m_instance, m_messenger, nullptr);
  if (m_instance && !m_attached) vkDestroyInstance(m_instance, nullptr);
  m_device = VK_NULL_HANDLE;
  m_messenger = VK_NULL_HANDLE;
  m_instance = VK_NULL_HANDLE;
}

std::pair<uint64_t, uint64_t> Context::deviceLocalUsage() const {
  if (!m_info.memoryBudget) return {0, 0};
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, &budget};
  vkGetPhysicalDeviceMemoryProperties2(m_info.handle, &props);
  uint64_t used = 0, total = 0;
  for (uint32_t i = 0; i < props.memoryProperties.memoryHeapCount; ++i)
    if (props.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      used += budget.heapUsage[i], total += budget.heapBudget[i];
  return {used, total};
}

uint32_t Context::memoryType(uint32_t typeBits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  for (VkMemoryPropertyFlags want : {required | preferred, required})
    for (uint32_t i = 0; i < m_memory.memoryTypeCount; ++i)
      if ((typeBits & (1u << i)) && (m_memory.memoryTypes[i].propertyFlags & want) == want) return i;
  throw Error("no Vulkan memory type with the required properties on '" + m_info.name + "'");
}

namespace {
// What a compute shader's SPIR-V uses: one past its highest binding of descriptor set 0 (bindings the compiler
// dropped as unused do not count), and the bytes its push constant block spans (the end of its last member). Read from
// the decorations and types, so the counts and sizes the C++ side states are checked against the shader itself instead
// of by hand.
struct ShaderInterface {
  uint32_t bindingCount = 0;
  uint32_t pushBytes = 0;
};
ShaderInterface reflect(const shaders::SpirvBlob& spirv) {
  enum : uint32_t {
    TypeInt = 21,
    TypeFloat = 22,
    TypeVector = 23,
    TypeMatrix = 24,
    TypeArray = 28,
    TypeStruct = 30,
    TypePointer = 32,
    Constant = 43,
    Variable = 59,
    Decorate = 71,
    MemberDecorate = 72
  };
  enum : uint32_t { ArrayStride = 6, Binding = 33, Offset = 35, PushConstant = 9 };
  std::map<uint32_t, std::vector<uint32_t>> types;  // id -> the instruction's words from its opcode on
  std::map<uint32_t, uint32_t> constants, arrayStride;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> memberOffset;
  ShaderInterface out;
  uint32_t pushType = 0;
  for (size_t i = 5; i < spirv.wordCount;) {
    const uint32_t* w = spirv.words + i;
    const uint32_t op = w[0] & 0xffff, count = w[0] >> 16;
    if (count == 0 || i + count > spirv.wordCount) throw Error(std::string(spirv.name) + ": malformed SPIR-V");
    if (op == TypeInt || op == TypeFloat || op == TypeVector || op == TypeMatrix || op == TypeArray ||
        op == TypeStruct || op == TypePointer)
      types[w[1]].assign(w, w + count);
    else if (op == Constant && count >= 4)
      constants[w[2]] = w[3];
    else if (op == Decorate && count >= 4 && w[2] == Binding)
      out.bindingCount = std::max(out.bindingCount, w[3] + 1);
    else if (op == Decorate && count >= 4 && w[2] == ArrayStride)
      arrayStride[w[1]] = w[3];
    else if (op == MemberDecorate && count >= 5 && w[3] == Offset)
      memberOffset[{w[1], w[2]}] = w[4];
    else if (op == Variable && count >= 4 && w[3] == PushConstant)
      pushType = w[1];
    i += count;
  }
  std::function<uint32_t(uint32_t)> size = [&](uint32_t id) -> uint32_t {
    const auto& t = types.at(id);
    switch (t[0] & 0xffff) {
      case TypeInt:
      case TypeFloat:
        return t[2] / 8;
      case TypeVector:
        return size(t[2]) * t[3];
      case TypeMatrix:
        return size(t[2]) * t[3];  // columns of vec4 (the matrices our push blocks hold)
      case TypeArray:
        return arrayStride.at(id) * constants.at(t[3]);
      case TypeStruct: {
        uint32_t end = 0;
        for (uint32_t m = 0; m + 2 < t.size(); ++m) end = std::max(end, memberOffset.at({id, m}) + size(t[2 + m]));
        return end;
      }
    }
    throw Error(std::string(spirv.name) + ": unsupported push constant member type");
  };
  if (pushType) out.pushBytes = size(types.at(pushType).at(3));  // the pointer's pointee: the block's struct
  return out;
}
}  // namespace

const ComputeProgram& Context::program(const shaders::SpirvBlob& spirv, uint32_t bindingCount, uint32_t pushSize) {
  const auto key = std::make_tuple(static_cast<const void*>(spirv.words), bindingCount, pushSize);
  if (auto it = m_programs.find(key); it != m_programs.end()) return it->second;
  // The caller's bindings must cover every binding the shader uses (it may bind more: the compiler drops unused
  // ones), and its push struct must hold the shader's block (with up to 15 bytes of trailing padding GLSL lacks).
  const ShaderInterface declared = reflect(spirv);
  if (declared.bindingCount > bindingCount)
    throw Error(detail::format("shader %s uses %u buffer bindings, the caller binds %u", spirv.name,
                               declared.bindingCount, bindingCount));
  if (pushSize < declared.pushBytes || pushSize >= declared.pushBytes + 16)
    throw Error(detail::format("shader %s's push constants span %u bytes, the caller's struct has %u", spirv.name,
                               declared.pushBytes, pushSize));
  ComputeProgram p;
  p.bindingCount = bindingCount;
  p.pushSize = pushSize;
  p.name = spirv.name;
  p.maxGroups[0] = m_info.maxComputeWorkGroupCount[0], p.maxGroups[1] = m_info.maxComputeWorkGroupCount[1];
  std::vector<VkDescriptorSetLayoutBinding> bindings(bindingCount);
  for (uint32_t i = 0; i < bindingCount; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  sl.bindingCount = bindingCount;
  sl.pBindings = bindings.data();
  VK_CHECK(vkCreateDescriptorSetLayout(m_device, &sl, m_allocator, &p.setLayout));
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushSize};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.setLayout;
  pl.pushConstantRangeCount = pushSize ? 1 : 0;
  pl.pPushConstantRanges = &range;
  VK_CHECK(vkCreatePipelineLayout(m_device, &pl, m_allocator, &p.layout));
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = spirv.wordCount * sizeof(uint32_t);
  sm.pCode = spirv.words;
  VkShaderModule module;
  VK_CHECK(vkCreateShaderModule(m_device, &sm, m_allocator, &module));
  VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cp.stage.module = module;
  cp.stage.pName = "main";
  cp.layout = p.layout;
  if (m_shaderStatistics) cp.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = vkCreateComputePipelines(m_device, m_pipelineCache, 1, &cp, m_allocator, &p.pipeline);
  vkDestroyShaderModule(m_device, module, m_allocator);
  VK_CHECK(r);
  if (m_shaderStatistics) printShaderStatistics(m_device, p.pipeline, spirv.name);
  return m_programs.emplace(key, p).first->second;
}

void Context::submit(VkCommandBuffer cmd, const std::vector<TimelineValue>& waits,
                     const std::vector<TimelineValue>& signals, VkFence fence) {
  std::vector<VkSemaphore> waitSems, signalSems;
  std::vector<uint64_t> waitValues, signalValues;
  std::vector<VkPipelineStageFlags> stages(waits.size(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  for (auto& w : waits) waitSems.push_back(w.semaphore), waitValues.push_back(w.value);
  for (auto& g : signals) signalSems.push_back(g.semaphore), signalValues.push_back(g.value);
  VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ti.waitSemaphoreValueCount = uint32_t(waitValues.size());
  ti.pWaitSemaphoreValues = waitValues.data();
  ti.signalSemaphoreValueCount = uint32_t(signalValues.size());
  ti.pSignalSemaphoreValues = signalValues.data();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, &ti};
  si.waitSemaphoreCount = uint32_t(waitSems.size());
  si.pWaitSemaphores = waitSems.data();
  si.pWaitDstStageMask = stages.data();
  si.commandBufferCount = cmd ? 1 : 0;
  si.pCommandBuffers = &cmd;
  si.signalSemaphoreCount = uint32_t(signalSems.size());
  si.pSignalSemaphores = signalSems.data();
  VK_CHECK(m_hostSubmit ? m_hostSubmit(m_queue, 1, &si, fence) : vkQueueSubmit(m_queue, 1, &si, fence));
}

void Context::submitAndWait(const std::function<void(VkCommandBuffer)>& record, uint64_t timeoutNs,
                            const std::vector<TimelineValue>& waits, const std::vector<TimelineValue>& signals) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = m_oneShotPool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  VK_CHECK(vkAllocateCommandBuffers(m_device, &ai, &cmd));
  struct Free {
    VkDevice d;
    VkCommandPool p;
    VkCommandBuffer c;
    ~Free() { vkFreeCommandBuffers(d, p, 1, &c); }
  } freeLater{m_device, m_oneShotPool, cmd};
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
  record(cmd);
  VK_CHECK(vkEndCommandBuffer(cmd));
  VK_CHECK(vkResetFences(m_device, 1, &m_oneShotFence));
  submit(cmd, waits, signals, m_oneShotFence);
  VkResult r = vkWaitForFences(m_device, 1, &m_oneShotFence, VK_TRUE, timeoutNs);
  if (r == VK_TIMEOUT) {
    // Vulkan cannot cancel submitted work, and throwing now would free buffers that it still reads and writes (a
    // crash on CPU drivers). Every op's work is bounded, so wait for the end, then report the overrun.
    const auto start = std::chrono::steady_clock::now();
    std::fprintf(stderr, "armature: GPU work has run for %llu ms; waiting for it to finish\n",
                 (unsigned long long)(timeoutNs / 1000000));
    VK_CHECK(vkWaitForFences(m_device, 1, &m_oneShotFence, VK_TRUE, UINT64_MAX));
    const double total =
        double(timeoutNs) / 1e9 + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw Error(detail::format("GPU work took %.0f s, past the limit of %llu s (a smaller call fits)", total,
                               (unsigned long long)(timeoutNs / 1000000000)));
  }
  VK_CHECK(r);
}

void dispatch(VkCommandBuffer cmd, const ComputeProgram& program, uint32_t groupCountX,
              const std::vector<BufferView>& buffers, const void* push, uint32_t pushSize, uint32_t groupCountY) {
  assert(buffers.size() == program.bindingCount && pushSize == program.pushSize);
  if (groupCountX > program.maxGroups[0] || groupCountY > program.maxGroups[1])
    throw Error(detail::format("%s: a dispatch of %u × %u workgroups is past the device's %u × %u", program.name,
                               groupCountX, groupCountY, program.maxGroups[0], program.maxGroups[1]));
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i].buffer, buffers[i].offset, buffers[i].range};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, program.pipeline);
  vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, program.layout, 0, uint32_t(writes.size()),
                            writes.data());
  if (pushSize) vkCmdPushConstants(cmd, program.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pushSize, push);
  if (groupCountX && groupCountY) vkCmdDispatch(cmd, groupCountX, groupCountY, 1);
}

uint32_t groupCount(uint64_t count, uint32_t groupSize, uint32_t cap) {
  return uint32_t(std::min<uint64_t>((count + groupSize - 1) / groupSize, cap));
}

uint32_t exactGroupCount(uint64_t count, uint32_t groupSize) { return groupCount(count, groupSize, UINT32_MAX); }

void computeBarrier(VkCommandBuffer cmd) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                    VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(
      cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0,
      nullptr, 0, nullptr);
}

}  // namespace armature::vk
