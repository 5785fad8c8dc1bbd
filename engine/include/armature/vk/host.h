#pragma once
// Armature inside a host renderer's Vulkan device: what the library needs before the host creates its instance and
// device (Intel XeSS's pattern: ask, then patch the host's feature chain), and the description of the host's device
// that vk::Context attaches to (as Dear ImGui's ImGui_ImplVulkan_InitInfo or VMA's VmaAllocatorCreateInfo). The
// recording contract an attached host relies on is in docs/embedding.md.
#include <vulkan/vulkan_core.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace armature::vk {

// The instance and device API version Armature needs (it needs no instance extension).
inline constexpr uint32_t kRequiredApiVersion = VK_API_VERSION_1_2;

// A device extension Armature uses: required (a device without it is refused), or optional with what it enables.
struct DeviceExtensionNeed {
  const char* name;
  bool required;
  const char* enables;  // what a device without it loses (its fallback)
};
const std::vector<DeviceExtensionNeed>& deviceExtensionNeeds();

// A physical device as Armature would use it: which extensions to enable, and the features to add to the host's
// VkDeviceCreateInfo chain. `getInstanceProcAddr` is the host's (null: the system loader's).
class DeviceRequirements {
 public:
  DeviceRequirements(VkInstance instance, VkPhysicalDevice physicalDevice,
                     PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr);
  ~DeviceRequirements();
  DeviceRequirements(const DeviceRequirements&) = delete;
  DeviceRequirements& operator=(const DeviceRequirements&) = delete;

  // Why Armature cannot run on this device (its API version, a required extension or feature, named), else empty.
  const std::string& unsupported() const;
  // The extensions to enable: every required one and each optional one the device has.
  const std::vector<const char*>& extensions() const;
  // The optional extensions the device lacks, with what each would have enabled (for diagnostics).
  std::vector<DeviceExtensionNeed> missingOptional() const;
  // Turns on, in `features` and the structures chained to it, every feature Armature uses that the device has
  // (timelineSemaphore is required); a structure the chain lacks is appended, owned by this object, which must then
  // outlive vkCreateDevice. Throws armature::Error with unsupported() where the device cannot run Armature.
  void addFeatures(VkPhysicalDeviceFeatures2& features);

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

// The host's device, borrowed: the context never destroys any handle given here. Zero-initialise, then fill.
struct HostDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;  // must do compute
  VkQueue queue = VK_NULL_HANDLE;
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;  // null: the system loader's
  const VkAllocationCallbacks* allocator = nullptr;         // for every object the context creates
  VkPipelineCache pipelineCache = VK_NULL_HANDLE;           // for its compute pipelines
  uint32_t apiVersion = kRequiredApiVersion;                // the device's, as the host created it
  // What the host enabled at vkCreateDevice: a VkDevice cannot be asked. Ops take the paths these allow.
  std::vector<std::string> extensions;
  const VkPhysicalDeviceFeatures2* features = nullptr;  // the chain passed to vkCreateDevice (read during attach)
  // The library's own submissions (uploads, downloads, set-up, Device::run) go through this, so that the host can
  // serialise them with its own (a queue needs external synchronisation). Null: the library calls vkQueueSubmit on
  // `queue` itself, and the host must not use that queue from another thread meanwhile.
  std::function<VkResult(VkQueue queue, uint32_t count, const VkSubmitInfo* submits, VkFence fence)> submit;
};

// The recording contract (docs/embedding.md): before an op, its inputs must be visible to compute-shader reads and
// its outputs to compute-shader writes; inside, an op places the barriers between its own passes only; after it,
// nothing: no trailing barrier (use orderOutputsFor). An op leaves the compute bind point's pipeline, push
// descriptors (set 0) and push constants changed and never touches the graphics bind point. A host VkBuffer is a
// valid view with STORAGE_BUFFER usage (and TRANSFER_DST for outputs an op clears), an offset that is a multiple of
// minStorageBufferOffsetAlignment and a range within maxStorageBufferRange. CUDA ops enqueue on the caller's stream
// and never synchronise the host.
//
// Who reads an op's outputs next.
enum class Consumer {
  VertexInput,  // vertex and index buffers of a draw
  Fragment,     // storage reads in vertex and fragment shaders
  Transfer,     // copies
  Compute,      // another compute dispatch (the host's or an op's)
  Host,         // a mapped read after the submission's fence
};
// Records the barrier that makes every write the ops recorded before it in `cmd` visible to `consumer`.
void orderOutputsFor(VkCommandBuffer cmd, Consumer consumer);

}  // namespace armature::vk
