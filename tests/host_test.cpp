// A host renderer and libarmature side by side. This test is built as a host is: against the shared library
// (Armature::armature, its public headers only) and the system Vulkan loader with its prototypes, never the engine's
// static library or volk. The host makes its instance and device with the requirement helpers, attaches, and runs
// ops; the validation layer (the host's) must stay silent, and the host's own calls must still reach the loader.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "armature/device.h"
#include "armature/ops/axpy.h"
#include "armature/ops/raster.h"
#include "armature/vk/context.h"
#include "armature/vk/host.h"

using namespace armature;

namespace {

VkBool32 VKAPI_CALL countMessage(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  ++*static_cast<std::atomic<int>*>(user);
  ADD_FAILURE() << "Vulkan validation (host's layer): " << data->pMessage;
  return VK_FALSE;
}

// What a host does: its own instance (validation on) and device, the latter from Armature's requirements unless a
// test withholds some.
class Host {
 public:
  enum class Withhold { Nothing, Optional, ShaderInt64, PushDescriptor, TimelineSemaphore };

  explicit Host(Withhold withhold = Withhold::Nothing) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = vk::kRequiredApiVersion;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* debugUtils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    ici.enabledLayerCount = 1, ici.ppEnabledLayerNames = &layer;
    ici.enabledExtensionCount = 1, ici.ppEnabledExtensionNames = &debugUtils;
    if (vkCreateInstance(&ici, nullptr, &instance) != VK_SUCCESS) return;  // ok() is false: the test skips
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = countMessage;
    mi.pUserData = &messages;
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    create(instance, &mi, nullptr, &messenger);

    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> all(n);
    vkEnumeratePhysicalDevices(instance, &n, all.data());
    for (VkPhysicalDevice pd : all) {
      vk::DeviceRequirements r(instance, pd);
      if (r.unsupported().empty()) {
        physicalDevice = pd;
        break;
      }
    }
    if (!physicalDevice) return;
    requirementsHolder = std::make_unique<vk::DeviceRequirements>(instance, physicalDevice);
    vk::DeviceRequirements& requirements = *requirementsHolder;

    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physicalDevice, &families, nullptr);
    std::vector<VkQueueFamilyProperties> qs(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physicalDevice, &families, qs.data());
    while (queueFamily < families && !(qs[queueFamily].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++queueFamily;
    const float priority = 1;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = queueFamily, qci.queueCount = 1, qci.pQueuePriorities = &priority;

    // The host's own chain, holding a structure Armature also writes to.
    features12.pNext = nullptr;
    features.pNext = &features12;
    if (withhold == Withhold::Nothing) {
      requirements.addFeatures(features);
      for (const char* e : requirements.extensions()) extensions.emplace_back(e);
    } else if (withhold != Withhold::TimelineSemaphore) {
      features12.timelineSemaphore = VK_TRUE;  // only what is required, and the rasteriser's integer arithmetic
      features.features.shaderInt64 = withhold == Withhold::Optional ? VK_TRUE : VK_FALSE;
      if (withhold != Withhold::PushDescriptor) extensions.emplace_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    } else {
      extensions.emplace_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    }
    std::vector<const char*> names;
    for (const auto& e : extensions) names.push_back(e.c_str());
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features};
    dci.queueCreateInfoCount = 1, dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = uint32_t(names.size()), dci.ppEnabledExtensionNames = names.data();
    if (vkCreateDevice(physicalDevice, &dci, nullptr, &device) != VK_SUCCESS) return;
    vkGetDeviceQueue(device, queueFamily, 0, &queue);
  }
  ~Host() {
    if (device) vkDestroyDevice(device, nullptr);
    if (messenger)
      reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"))(instance, messenger, nullptr);
    if (instance) vkDestroyInstance(instance, nullptr);
  }
  bool ok() const { return device != VK_NULL_HANDLE; }

  // The description Armature attaches to; its submissions go through the host's lock.
  vk::HostDevice describe() {
    vk::HostDevice h;
    h.instance = instance, h.physicalDevice = physicalDevice, h.device = device;
    h.queueFamily = queueFamily, h.queue = queue;
    h.getInstanceProcAddr = vkGetInstanceProcAddr;
    h.extensions = extensions;
    h.features = &features;
    h.submit = [this](VkQueue q, uint32_t count, const VkSubmitInfo* submits, VkFence fence) {
      std::lock_guard<std::mutex> lock(queueLock);
      ++librarySubmits;
      return vkQueueSubmit(q, count, submits, fence);
    };
    return h;
  }

  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  std::vector<std::string> extensions;
  // Owns what addFeatures appended to `features`: the chain is read again at attach.
  std::unique_ptr<vk::DeviceRequirements> requirementsHolder;
  std::mutex queueLock;
  int librarySubmits = 0;
  std::atomic<int> messages{0};
};

#define REQUIRE_HOST(host)                                                                         \
  if (!(host).ok()) {                                                                              \
    if (std::getenv("ARMATURE_REQUIRE_VULKAN")) FAIL() << "no Vulkan device for a host to create"; \
    GTEST_SKIP() << "no Vulkan device with the validation layer for a host to create";             \
  }

// One triangle over part of a 16×16 image: the rasteriser's paths (64-bit atomics or not, doubles or not) must all
// give the reference's face indices and barycentrics.
void expectRasterMatchesReference(vk::Context& ctx) {
  Device device(&ctx, Sharing::VulkanOnly);
  const RasterDesc desc{.width = 16, .height = 16};
  const std::vector<float> positions = {-0.9f, -0.8f, 0.1f, 1, 0.7f, -0.6f, 0.3f, 1, -0.2f, 0.9f, 0.5f, 1};
  const std::vector<int32_t> faces = {0, 1, 2};
  DeviceBuffer pos = device.upload(positions), tri = device.upload(faces);
  DeviceBuffer scratch = device.allocate(ElementType::Byte, rasterScratchBytes(desc));
  DeviceBuffer findices = device.allocate(ElementType::Int32, desc.pixels());
  DeviceBuffer bary = device.allocate(ElementType::Float32, desc.pixels() * 3);
  device.run(Backend::Vulkan, [&](const Exec& exec) {
    rasterize(exec, {.desc = desc,
                     .vertexCount = 3,
                     .faceCount = 1,
                     .positions = pos,
                     .faces = tri,
                     .scratch = scratch,
                     .findices = findices,
                     .barycentrics = bary});
  });
  const RasterResult want = rasterizeRef(positions, faces, desc);
  EXPECT_EQ(findices.download<int32_t>(), want.findices);
  const std::vector<float> got = bary.download<float>();
  size_t covered = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want.barycentrics[i], 1e-6) << "at " << i;  // fp32 barycentrics of one plane equation
    covered += want.findices[i / 3] != 0;
  }
  EXPECT_GT(covered, 0u);
}

}  // namespace

TEST(Host, AttachesRunsOpsAndKeepsItsOwnCalls) {
  Host host;
  REQUIRE_HOST(host);
  {
    vk::Context ctx(host.describe());
    EXPECT_TRUE(ctx.attached());
    Device device(&ctx, Sharing::VulkanOnly);
    std::vector<float> x(1000), y(1000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i), y[i] = 1;
    DeviceBuffer dx = device.upload(x), dy = device.upload(y);
    device.run(Backend::Vulkan, [&](const Exec& exec) { axpy(exec, {.a = 2, .x = dx, .y = dy}); });
    const std::vector<float> got = dy.download<float>();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 1 + 2 * float(i)) << i;  // exact: small integers
    expectRasterMatchesReference(ctx);
    EXPECT_GT(host.librarySubmits, 0) << "the library's submissions must go through the host's callback";

    // The host records and submits its own work with its own (loader) functions, on the library's buffer.
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = host.queueFamily;
    VkCommandPool pool;
    ASSERT_EQ(vkCreateCommandPool(host.device, &pci, nullptr, &pool), VK_SUCCESS);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool, ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, ai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    ASSERT_EQ(vkAllocateCommandBuffers(host.device, &ai, &cmd), VK_SUCCESS);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(cmd, &bi);
    vkCmdFillBuffer(cmd, dy.view().vkBuffer, 0, dy.view().bytes(), 0x40400000u);  // 3.0f (not a guard band)
    vkEndCommandBuffer(cmd);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1, si.pCommandBuffers = &cmd;
    ASSERT_EQ(vkQueueSubmit(host.queue, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
    vkQueueWaitIdle(host.queue);
    vkDestroyCommandPool(host.device, pool, nullptr);
    EXPECT_EQ(dy.download<float>()[999], 3.0f);
  }
  EXPECT_EQ(host.messages.load(), 0);
}

TEST(Host, WithheldOptionalFeaturesTakeTheFallbacks) {
  Host host(Host::Withhold::Optional);
  REQUIRE_HOST(host);
  {
    vk::Context ctx(host.describe());
    EXPECT_FALSE(ctx.info().int64Atomics);
    EXPECT_FALSE(ctx.info().float64);
    EXPECT_FALSE(ctx.info().float32AtomicAdd);
    const std::string paths = vk::describeContext(ctx);
    EXPECT_NE(paths.find("64-bit buffer atomics      off"), std::string::npos) << paths;
    expectRasterMatchesReference(ctx);
  }
  EXPECT_EQ(host.messages.load(), 0);
}

// shaderInt64 has no fallback: the rasteriser's exact edge functions need it, and refuse by name without it.
TEST(Host, TheRasteriserNamesShaderInt64) {
  Host host(Host::Withhold::ShaderInt64);
  REQUIRE_HOST(host);
  vk::Context ctx(host.describe());
  try {
    expectRasterMatchesReference(ctx);
    ADD_FAILURE() << "rasterised without shaderInt64";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shaderInt64"), std::string::npos) << e.what();
  }
}

TEST(Host, MissingRequirementsAreNamed) {
  for (auto [withhold, name] : {std::pair{Host::Withhold::PushDescriptor, "VK_KHR_push_descriptor"},
                                std::pair{Host::Withhold::TimelineSemaphore, "timelineSemaphore"}}) {
    Host host(withhold);
    REQUIRE_HOST(host);
    try {
      vk::Context ctx(host.describe());
      ADD_FAILURE() << "attached without " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

// The library keeps its Vulkan function table to itself: no vk* or volk* symbol is exported, so the host's calls
// resolve to the loader whether the library is loaded or not.
TEST(Host, LibraryExportsNoVulkanSymbols) {
  Dl_info info{};
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(&vk::describeContext), &info)) << "the library's own symbol";
  void* library = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_TRUE(library) << info.dli_fname;
  for (const char* symbol :
       {"vkCmdDispatch", "vkCreateDevice", "vkGetInstanceProcAddr", "volkInitialize", "volkLoadInstance", "cudaMalloc"})
    EXPECT_EQ(dlsym(library, symbol), nullptr) << symbol << " is exported by " << info.dli_fname;
  EXPECT_NE(dlsym(library, "armature_last_error"), nullptr) << "the C API must be exported";
  dlclose(library);
  Dl_info loader{};
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(&vkCmdDispatch), &loader));
  EXPECT_NE(std::string(loader.dli_fname).find("libvulkan"), std::string::npos) << loader.dli_fname;
}
