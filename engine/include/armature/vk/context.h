#pragma once
// The Vulkan core: instance, one device, one queue that does compute (and graphics when asked), a cache of
// compute programs, and one-shot submission. A context creates its own instance and device, or attaches to a host
// renderer's (armature/vk/host.h), whose handles it then only borrows. The library calls Vulkan through its own copy
// of volk's function pointers, private to libarmature: a host's loader or volk is never touched.
#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "armature/error.h"
#include "armature/vk/host.h"

namespace armature::shaders {
struct SpirvBlob;
}

namespace armature::vk {

std::string resultName(VkResult r);

}  // namespace armature::vk

// Always-on check of a Vulkan call: throws armature::Error with the call, file:line and the VkResult.
#define VK_CHECK(expr)                                                                              \
  do {                                                                                              \
    VkResult vkCheckResult_ = (expr);                                                               \
    if (vkCheckResult_ != VK_SUCCESS)                                                               \
      throw ::armature::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +              \
                              ": " #expr " failed: " + ::armature::vk::resultName(vkCheckResult_)); \
  } while (0)

namespace armature::vk {

// What `armature info` prints for each physical device, and what device selection reads.
struct PhysicalDeviceInfo {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t index = 0;
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t apiVersion = 0;
  std::string driverName, driverInfo;
  VkDriverId driverId = VkDriverId(0);
  uint32_t subgroupSize = 0;
  bool int64Atomics = false;      // shaderBufferInt64Atomics
  bool subgroupSums = false;      // compute shaders have subgroup ballot and relative shuffles (segmented sums)
  bool subgroupShuffle = false;   // compute shaders have subgroup shuffles (shuffle-xor trees)
  bool float64 = false;           // shaderFloat64
  bool int64 = false;             // shaderInt64
  bool float32AtomicAdd = false;  // VK_EXT_shader_atomic_float: shaderBufferFloat32AtomicAdd
  bool memoryBudget = false;      // VK_EXT_memory_budget
  bool timelineSemaphore = false;
  bool externalMemoryFd = false;     // VK_KHR_external_memory_fd
  bool externalSemaphoreFd = false;  // VK_KHR_external_semaphore_fd
  bool pushDescriptor = false;       // VK_KHR_push_descriptor (required by our compute programs)
  bool hostQueryReset = false;
  bool calibratedTimestamps = false;  // VK_EXT_calibrated_timestamps with the device and CLOCK_MONOTONIC domains
  uint8_t deviceUuid[VK_UUID_SIZE] = {};
  float timestampPeriodNs = 0;
  uint32_t timestampValidBits = 0;
  uint32_t maxComputeSharedMemory = 0;
  uint64_t maxStorageBufferRange = 0;
  uint32_t maxComputeWorkGroupCount[3] = {65535, 65535, 65535};
  uint64_t minStorageBufferOffsetAlignment = 4;
  uint64_t deviceLocalBytes = 0;
  bool isCpu() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
};

const char* deviceTypeName(VkPhysicalDeviceType t);
std::string versionString(uint32_t apiVersion);

enum class MessageSeverity { Warning, Error };
using MessageHandler = std::function<void(MessageSeverity, const char* message)>;

struct ContextOptions {
  // Enables VK_LAYER_KHRONOS_validation (also when ARMATURE_VALIDATION=1 is set) and routes its messages to
  // onMessage (default: print to stderr). Tests turn every message into a failure.
  bool validation = false;
  MessageHandler onMessage;
  // Instance extensions a window system needs (GLFW's list) and whether the device must present.
  std::vector<std::string> instanceExtensions;
  bool swapchain = false;
  // Features the context hides: it reports them absent (info()) and does not enable them, so every op takes the
  // path of a device without them. Tests and benchmarks run those paths on a device that has the features.
  struct Hidden {
    bool int64Atomics = false;  // the rasteriser's two-pass 32-bit z-buffer
    bool subgroupSums = false;  // the rasteriser backward's atomic per pixel
    bool float64 = false;       // the rasteriser's integer setup and resolve
  } hide;
  // Guard bands (the sanitizer build's tests; also ARMATURE_GUARD_BUFFERS=1): every Device allocation gets canary
  // words (NaN as floats) past its end that its views bind with it, checked when it is freed. A shader that reads
  // past its buffer then reads NaN, which the tests' comparisons catch, and one that writes past it is reported
  // through onMessage. Without them a driver that clamps accesses to the bound range, as lavapipe does, hides both.
  bool guardBuffers = false;
};

class Context;

// A compute pipeline with its push-descriptor layout: `bindingCount` storage buffers at bindings 0..n-1 and
// `pushSize` bytes of push constants.
struct ComputeProgram {
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindingCount = 0;
  uint32_t pushSize = 0;
  const char* name = "";                   // the shader's, for messages
  uint32_t maxGroups[2] = {65535, 65535};  // the device's maxComputeWorkGroupCount x and y
};

struct TimelineValue {
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t value = 0;
};

struct BufferView {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = VK_WHOLE_SIZE;
};

class Context {
 public:
  // A context of its own: an instance and the first usable device (or ARMATURE_VK_DEVICE's).
  explicit Context(const ContextOptions& options = {});
  // Attached to a host's device: Armature's needs are checked against what the host enabled (an Error names a
  // missing required one; a missing optional one takes the path a device without it takes), and options.hide hides
  // more. Validation, window and swapchain options are the host's business and ignored here.
  explicit Context(const HostDevice& host, const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkInstance instance() const { return m_instance; }
  VkDevice device() const { return m_device; }
  VkPhysicalDevice physicalDevice() const { return m_info.handle; }
  const PhysicalDeviceInfo& info() const { return m_info; }
  const std::vector<PhysicalDeviceInfo>& allDevices() const { return m_allDevices; }
  uint32_t instanceVersion() const { return m_instanceVersion; }
  VkQueue queue() const { return m_queue; }
  bool attached() const { return m_attached; }
  const VkAllocationCallbacks* allocator() const { return m_allocator; }
  uint32_t queueFamily() const { return m_queueFamily; }
  uint32_t memoryType(uint32_t typeBits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred = 0) const;
  // Bytes of device-local memory in use by this process and the budget the driver grants (both 0 without
  // VK_EXT_memory_budget).
  std::pair<uint64_t, uint64_t> deviceLocalUsage() const;
  // Number of validation messages seen so far (warnings and errors).
  uint32_t validationMessageCount() const { return m_messageCount; }
  // Reports a problem found outside the validation layer (a guard band overwritten) as a validation message would be.
  void report(MessageSeverity severity, const std::string& message);
  bool guardsBuffers() const { return m_guardBuffers; }

  // The compute program for `spirv`, created on first use and owned by the context.
  const ComputeProgram& program(const shaders::SpirvBlob& spirv, uint32_t bindingCount, uint32_t pushSize);

  // Records with `record` into a fresh command buffer, submits, and waits with a finite timeout
  // (a GPU hang becomes an armature::Error, never a hung process). The submission may wait for and signal
  // timeline semaphore values.
  void submitAndWait(const std::function<void(VkCommandBuffer)>& record, uint64_t timeoutNs = 60'000'000'000ull,
                     const std::vector<TimelineValue>& waits = {}, const std::vector<TimelineValue>& signals = {});
  // Submits a recorded command buffer without waiting: it starts when every `waits` value is reached and
  // signals every `signals` value (and `fence`) when done. Attached, through the host's submit callback.
  void submit(VkCommandBuffer cmd, const std::vector<TimelineValue>& waits, const std::vector<TimelineValue>& signals,
              VkFence fence = VK_NULL_HANDLE);

 private:
  void createInstance(const ContextOptions& options);
  void pickDevice();
  void createDevice(const ContextOptions& options);
  void attach(const HostDevice& host);
  // Reports `hidden` absent in info(), before the device is created (so they are not enabled either).
  void hide(const ContextOptions::Hidden& hidden);
  // Narrows info() to what `chain` and `extensions` enabled (both paths: own device and attached).
  void followEnabled(const VkPhysicalDeviceFeatures2& chain, const std::vector<std::string>& extensions);
  void createOwnObjects();
  void destroy();

  VkInstance m_instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT m_messenger = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT m_destroyMessenger = nullptr;
  MessageHandler m_onMessage;
  uint32_t m_messageCount = 0;
  bool m_guardBuffers = false;
  bool m_shaderStatistics = false;  // ARMATURE_SHADER_STATS: print each compute pipeline's statistics
  uint32_t m_instanceVersion = 0;
  std::vector<PhysicalDeviceInfo> m_allDevices;
  PhysicalDeviceInfo m_info;
  VkPhysicalDeviceMemoryProperties m_memory{};
  VkDevice m_device = VK_NULL_HANDLE;
  uint32_t m_queueFamily = 0;
  VkQueue m_queue = VK_NULL_HANDLE;
  bool m_attached = false;  // the instance, device and queue are the host's: never destroyed here
  const VkAllocationCallbacks* m_allocator = nullptr;
  VkPipelineCache m_pipelineCache = VK_NULL_HANDLE;
  std::function<VkResult(VkQueue, uint32_t, const VkSubmitInfo*, VkFence)> m_hostSubmit;
  VkCommandPool m_oneShotPool = VK_NULL_HANDLE;
  VkFence m_oneShotFence = VK_NULL_HANDLE;
  // One program per shader and interface (a caller may bind more buffers than the shader uses).
  std::map<std::tuple<const void*, uint32_t, uint32_t>, ComputeProgram> m_programs;

  friend VkBool32 VKAPI_CALL debugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                           const VkDebugUtilsMessengerCallbackDataEXT*, void*);
};

// The system loader's vkGetInstanceProcAddr (loaded on first use); throws armature::Error when there is none.
PFN_vkGetInstanceProcAddr systemGetInstanceProcAddr();

// What a context runs with: its device, and each optional feature with whether ops use it (`armature info`'s lines,
// and what an attached host can print to see which fallbacks its device takes).
std::string describeContext(const Context& ctx);

// Lists the physical devices of a fresh instance without creating a device (for `armature info`).
// Throws armature::Error when no Vulkan loader or driver is present.
std::vector<PhysicalDeviceInfo> enumerateDevices(uint32_t* instanceVersion = nullptr);

// Records a compute dispatch: binds the program, pushes the buffer descriptors (binding i = buffers[i]) and
// the push constants, and dispatches groupCountX × groupCountY groups. A count past the device's
// maxComputeWorkGroupCount throws armature::Error naming the shader (ops refuse such sizes at their entry; this is
// the last line).
void dispatch(VkCommandBuffer cmd, const ComputeProgram& program, uint32_t groupCountX,
              const std::vector<BufferView>& buffers, const void* push, uint32_t pushSize, uint32_t groupCountY = 1);

template <typename Push>
void dispatch(VkCommandBuffer cmd, const ComputeProgram& program, uint32_t groupCountX,
              const std::vector<BufferView>& buffers, const Push& push, uint32_t groupCountY = 1) {
  dispatch(cmd, program, groupCountX, buffers, &push, sizeof(Push), groupCountY);
}

// Groups for `count` items with `groupSize` items per group, capped for grid-stride shaders (every device has at
// least 65535 groups along x).
uint32_t groupCount(uint64_t count, uint32_t groupSize, uint32_t cap = 65535);
// The same, uncapped, for shaders with one item per invocation: a count past the device's limit is then refused by
// dispatch() instead of leaving items undone.
uint32_t exactGroupCount(uint64_t count, uint32_t groupSize);

// A full compute→compute/transfer/host memory barrier: what most op sequences need between dispatches.
void computeBarrier(VkCommandBuffer cmd);

}  // namespace armature::vk
