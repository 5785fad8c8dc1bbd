// A minimal Vulkan host with Armature as middleware: it creates its own instance and device (asking Armature what to
// enable first), attaches Armature to them, skins a body model into a vertex buffer it allocated itself, draws it
// with its own graphics pipeline into its own image, and writes a PNG.
//
//   host_renderer MODEL.npz OUT.png [HEIGHT] [--validation] [--cuda]
//
// With --cuda, Armature's CUDA backend skins into the host's vertex buffer: the host allocates it exportable, and
// Device::adopt imports that memory into CUDA (zero-copy), where CUDA and Vulkan drive the same GPU.
//
// The picture is the front view `armature model render MODEL -o X.png --poses t-pose --height HEIGHT` draws with the
// CPU reference (same projection and lighting), so the two can be compared pixel by pixel.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <stb_image_write.h>

#include "armature/body/body_model.h"
#include "armature/device.h"
#include "armature/ops/skinning.h"
#include "armature/vk/context.h"
#include "armature/vk/host.h"

namespace {

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    if (VkResult r_ = (call); r_ != VK_SUCCESS)                                                      \
      throw std::runtime_error(std::string(#call) + " failed: VkResult " + std::to_string(int(r_))); \
  } while (0)

int g_validationMessages = 0;
VkBool32 VKAPI_CALL onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                              const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  ++g_validationMessages;
  std::fprintf(stderr, "validation: %s\n", data->pMessage);
  return VK_FALSE;
}

// The first memory type among `bits` with every flag of `want`.
uint32_t memoryType(VkPhysicalDevice pd, uint32_t bits, VkMemoryPropertyFlags want) {
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(pd, &props);
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) return i;
  throw std::runtime_error("no memory type with the properties asked for");
}

// A buffer in host-visible memory (simple for an example; a renderer would use device-local memory).
struct HostBuffer {
  VkDevice device = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  HostBuffer(VkPhysicalDevice pd, VkDevice d, VkDeviceSize bytes, VkBufferUsageFlags usage) : device(d) {
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes, bi.usage = usage;
    CHECK(vkCreateBuffer(d, &bi, nullptr, &buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d, buffer, &req);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex =
        memoryType(pd, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    CHECK(vkAllocateMemory(d, &ai, nullptr, &memory));
    CHECK(vkBindBufferMemory(d, buffer, memory, 0));
    CHECK(vkMapMemory(d, memory, 0, VK_WHOLE_SIZE, 0, &mapped));
  }
  ~HostBuffer() {
    vkDestroyBuffer(device, buffer, nullptr);
    vkFreeMemory(device, memory, nullptr);
  }
};

// A device-local buffer whose memory CUDA can import (dedicated, exportable as an opaque fd).
struct ExportableBuffer {
  VkDevice device = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  ExportableBuffer(VkPhysicalDevice pd, VkDevice d, VkDeviceSize bytes, VkBufferUsageFlags usage) : device(d) {
    VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
    external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &external};
    bi.size = bytes, bi.usage = usage;
    CHECK(vkCreateBuffer(d, &bi, nullptr, &buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d, buffer, &req);
    VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
    dedicated.buffer = buffer;
    VkExportMemoryAllocateInfo exportInfo{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, &dedicated};
    exportInfo.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &exportInfo};
    ai.allocationSize = size = req.size;
    ai.memoryTypeIndex = memoryType(pd, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    CHECK(vkAllocateMemory(d, &ai, nullptr, &memory));
    CHECK(vkBindBufferMemory(d, buffer, memory, 0));
  }
  ~ExportableBuffer() {
    vkDestroyBuffer(device, buffer, nullptr);
    vkFreeMemory(device, memory, nullptr);
  }
};

struct Options {
  std::string model, output;
  bool cuda = false;
  int height = 512;
  bool validation = false;
};

int run(const Options& o) {
  const int H = o.height, W = H * 3 / 4;  // the CPU render's panel

  // ---- the host's instance and device, with what Armature asks for ----
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "armature host example";
  app.apiVersion = armature::vk::kRequiredApiVersion;
  std::vector<const char*> layers, instanceExtensions;
  if (o.validation) layers.push_back("VK_LAYER_KHRONOS_validation"), instanceExtensions.push_back("VK_EXT_debug_utils");
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = uint32_t(layers.size()), ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = uint32_t(instanceExtensions.size());
  ici.ppEnabledExtensionNames = instanceExtensions.data();
  VkInstance instance;
  CHECK(vkCreateInstance(&ici, nullptr, &instance));
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  if (o.validation) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = onMessage;
    CHECK(reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"))(instance, &mi, nullptr, &messenger));
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physicalDevices(count);
  vkEnumeratePhysicalDevices(instance, &count, physicalDevices.data());
  VkPhysicalDevice pd = VK_NULL_HANDLE;
  for (VkPhysicalDevice candidate : physicalDevices) {  // a GPU before a CPU driver
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(candidate, &props);
    if (!armature::vk::DeviceRequirements(instance, candidate).unsupported().empty()) continue;
    if (!pd || props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) pd = candidate;
  }
  if (!pd) throw std::runtime_error("no Vulkan device can run Armature");
  armature::vk::DeviceRequirements requirements(instance, pd);
  for (const auto& missing : requirements.missingOptional())
    std::printf("optional %s missing: no %s\n", missing.name, missing.enables);

  vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
  uint32_t family = 0;
  const VkQueueFlags wanted = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
  while (family < count && (families[family].queueFlags & wanted) != wanted) ++family;
  if (family == count) throw std::runtime_error("no queue does graphics and compute");
  const float priority = 1;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family, qci.queueCount = 1, qci.pQueuePriorities = &priority;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  requirements.addFeatures(features);  // the host would add its own to the same chain
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features};
  dci.queueCreateInfoCount = 1, dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = uint32_t(requirements.extensions().size());
  dci.ppEnabledExtensionNames = requirements.extensions().data();
  VkDevice device;
  CHECK(vkCreateDevice(pd, &dci, nullptr, &device));
  VkQueue queue;
  vkGetDeviceQueue(device, family, 0, &queue);

  {
    // ---- Armature, attached: it borrows the device and submits its uploads through the host's queue ----
    armature::vk::HostDevice host;
    host.instance = instance, host.physicalDevice = pd, host.device = device;
    host.queueFamily = family, host.queue = queue;
    host.getInstanceProcAddr = vkGetInstanceProcAddr;
    host.extensions.assign(requirements.extensions().begin(), requirements.extensions().end());
    host.features = &features;
    armature::vk::Context armature(host);
    // With --cuda, CUDA joins where it drives the same GPU (and the device's allocations are shared).
    armature::Device gpu(&armature, o.cuda ? armature::Sharing::Auto : armature::Sharing::VulkanOnly);
    const armature::Backend backend = o.cuda ? armature::Backend::Cuda : armature::Backend::Vulkan;
    if (auto why = gpu.unavailable(backend)) {
      std::fprintf(stderr, "host_renderer: %s cannot run here: %s\n", armature::backendName(backend), why->c_str());
      return 3;
    }
    std::printf("%s", armature::vk::describeContext(armature).c_str());

    const armature::BodyModel model = armature::loadBodyModel(o.model);
    const uint32_t V = model.vertexCount, J = model.jointCount, S = 10, E = 10;
    armature::Skinning skinning(gpu, backend, model, S, E, /*maxBatch=*/1);
    armature::DeviceBuffer pose = gpu.upload(std::vector<float>(J * 3, 0.0f));  // the T-pose
    armature::DeviceBuffer betas = gpu.upload(std::vector<float>(S, 0.0f));
    armature::DeviceBuffer expression = gpu.upload(std::vector<float>(E, 0.0f));
    armature::DeviceBuffer transl = gpu.upload(std::vector<float>(3, 0.0f));
    armature::DeviceBuffer joints = gpu.allocate(armature::ElementType::Float32, size_t(J) * 3);

    // The host's own buffers: Armature writes the vertex buffer (storage usage), the draw reads it.
    HostBuffer vertices(
        pd, device, VkDeviceSize(V) * 12,
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT);
    HostBuffer indices(pd, device, model.faces.size() * 4, VK_BUFFER_USAGE_INDEX_BUFFER_BIT);
    std::memcpy(indices.mapped, model.faces.data(), model.faces.size() * 4);
    HostBuffer readback(pd, device, VkDeviceSize(W) * H * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT);

    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = family;
    VkCommandPool pool;
    CHECK(vkCreateCommandPool(device, &pci, nullptr, &pool));
    auto submitAndWait = [&](auto&& record) {
      VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      ai.commandPool = pool, ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, ai.commandBufferCount = 1;
      VkCommandBuffer cmd;
      CHECK(vkAllocateCommandBuffers(device, &ai, &cmd));
      VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      CHECK(vkBeginCommandBuffer(cmd, &bi));
      record(cmd);
      CHECK(vkEndCommandBuffer(cmd));
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1, si.pCommandBuffers = &cmd;
      CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
      CHECK(vkQueueWaitIdle(queue));
      vkFreeCommandBuffers(device, pool, 1, &cmd);
    };

    // ---- skinning: recorded into the host's command buffer, or with --cuda enqueued on CUDA, into the host's
    // exportable buffer (imported once), then copied where the box below reads it ----
    const armature::SkinningForwardArgs args{
        .batch = 1,
        .pose = pose,
        .betas = betas,
        .expression = expression,
        .transl = transl,
        .vertices = {vertices.buffer, nullptr, 0, size_t(V) * 3, armature::ElementType::Float32},
        .joints = joints};
    if (!o.cuda) {
      submitAndWait([&](VkCommandBuffer cmd) {
        skinning.forward(armature::Exec::vulkan(armature, cmd), args);
        armature::vk::orderOutputsFor(cmd, armature::vk::Consumer::Host);  // the box below reads them
      });
    } else {
      ExportableBuffer shared(pd, device, VkDeviceSize(V) * 12,
                              VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
      const armature::DeviceBuffer imported = gpu.adopt(
          {.buffer = shared.buffer, .memory = shared.memory, .allocationSize = shared.size, .dedicated = true},
          armature::ElementType::Float32, size_t(V) * 3);
      armature::SkinningForwardArgs cudaArgs = args;
      cudaArgs.vertices = imported;
      gpu.run(armature::Backend::Cuda, [&](const armature::Exec& e) { skinning.forward(e, cudaArgs); });  // waits
      submitAndWait([&](VkCommandBuffer cmd) {  // a renderer would draw from `shared` itself
        const VkBufferCopy region{0, 0, VkDeviceSize(V) * 12};
        vkCmdCopyBuffer(cmd, shared.buffer, vertices.buffer, 1, &region);
        VkMemoryBarrier toHost{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        toHost.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &toHost, 0, nullptr,
                             0, nullptr);
      });
    }
    const float* p = static_cast<const float*>(vertices.mapped);
    float lo[3] = {1e30f, 1e30f, 1e30f}, hi[3] = {-1e30f, -1e30f, -1e30f};
    for (uint32_t v = 0; v < V; ++v)
      for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[v * 3 + k]), hi[k] = std::max(hi[k], p[v * 3 + k]);

    // ---- the host's own render pass and pipeline ----
    auto image = [&](VkFormat format, VkImageUsageFlags usage, VkImageAspectFlags aspect, VkImage& img,
                     VkDeviceMemory& mem, VkImageView& view) {
      VkImageCreateInfo ii{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
      ii.imageType = VK_IMAGE_TYPE_2D, ii.format = format, ii.extent = {uint32_t(W), uint32_t(H), 1};
      ii.mipLevels = 1, ii.arrayLayers = 1, ii.samples = VK_SAMPLE_COUNT_1_BIT, ii.tiling = VK_IMAGE_TILING_OPTIMAL;
      ii.usage = usage;
      CHECK(vkCreateImage(device, &ii, nullptr, &img));
      VkMemoryRequirements req;
      vkGetImageMemoryRequirements(device, img, &req);
      VkPhysicalDeviceMemoryProperties props;
      vkGetPhysicalDeviceMemoryProperties(pd, &props);
      VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      ai.allocationSize = req.size;
      while (!(req.memoryTypeBits & (1u << ai.memoryTypeIndex))) ++ai.memoryTypeIndex;
      CHECK(vkAllocateMemory(device, &ai, nullptr, &mem));
      CHECK(vkBindImageMemory(device, img, mem, 0));
      VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
      vi.image = img, vi.viewType = VK_IMAGE_VIEW_TYPE_2D, vi.format = format;
      vi.subresourceRange = {aspect, 0, 1, 0, 1};
      CHECK(vkCreateImageView(device, &vi, nullptr, &view));
    };
    VkImage colourImage, depthImage;
    VkDeviceMemory colourMemory, depthMemory;
    VkImageView colourView, depthView;
    image(VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
          VK_IMAGE_ASPECT_COLOR_BIT, colourImage, colourMemory, colourView);
    image(VK_FORMAT_D32_SFLOAT, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT, depthImage,
          depthMemory, depthView);

    VkAttachmentDescription attachments[2] = {};
    attachments[0].format = VK_FORMAT_R8G8B8A8_UNORM, attachments[0].samples = VK_SAMPLE_COUNT_1_BIT;
    attachments[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR, attachments[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    attachments[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    attachments[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[0].finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    attachments[1] = attachments[0];
    attachments[1].format = VK_FORMAT_D32_SFLOAT, attachments[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    VkAttachmentReference colourRef{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkAttachmentReference depthRef{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    VkSubpassDescription subpass{};
    subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    subpass.colorAttachmentCount = 1, subpass.pColorAttachments = &colourRef;
    subpass.pDepthStencilAttachment = &depthRef;
    VkRenderPassCreateInfo rpi{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    rpi.attachmentCount = 2, rpi.pAttachments = attachments, rpi.subpassCount = 1, rpi.pSubpasses = &subpass;
    VkRenderPass renderPass;
    CHECK(vkCreateRenderPass(device, &rpi, nullptr, &renderPass));
    VkImageView views[2] = {colourView, depthView};
    VkFramebufferCreateInfo fbi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fbi.renderPass = renderPass, fbi.attachmentCount = 2, fbi.pAttachments = views;
    fbi.width = uint32_t(W), fbi.height = uint32_t(H), fbi.layers = 1;
    VkFramebuffer framebuffer;
    CHECK(vkCreateFramebuffer(device, &fbi, nullptr, &framebuffer));

    const uint32_t vertexSpirv[] = {
#include "body.vert.h"
    };
    const uint32_t fragmentSpirv[] = {
#include "body.frag.h"
    };
    auto module = [&](const uint32_t* words, size_t bytes) {
      VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      mi.codeSize = bytes, mi.pCode = words;
      VkShaderModule m;
      CHECK(vkCreateShaderModule(device, &mi, nullptr, &m));
      return m;
    };
    VkPipelineShaderStageCreateInfo stages[2] = {{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO},
                                                 {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO}};
    stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT, stages[0].module = module(vertexSpirv, sizeof vertexSpirv);
    stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT, stages[1].module = module(fragmentSpirv, sizeof fragmentSpirv);
    stages[0].pName = stages[1].pName = "main";
    VkVertexInputBindingDescription binding{0, 12, VK_VERTEX_INPUT_RATE_VERTEX};  // Armature's xyz rows
    VkVertexInputAttributeDescription attribute{0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0};
    VkPipelineVertexInputStateCreateInfo vertexInput{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    vertexInput.vertexBindingDescriptionCount = 1, vertexInput.pVertexBindingDescriptions = &binding;
    vertexInput.vertexAttributeDescriptionCount = 1, vertexInput.pVertexAttributeDescriptions = &attribute;
    VkPipelineInputAssemblyStateCreateInfo assembly{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    assembly.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
    VkViewport viewport{0, 0, float(W), float(H), 0, 1};
    VkRect2D scissor{{0, 0}, {uint32_t(W), uint32_t(H)}};
    VkPipelineViewportStateCreateInfo viewportState{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    viewportState.viewportCount = 1, viewportState.pViewports = &viewport;
    viewportState.scissorCount = 1, viewportState.pScissors = &scissor;
    VkPipelineRasterizationStateCreateInfo raster{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    raster.polygonMode = VK_POLYGON_MODE_FILL, raster.cullMode = VK_CULL_MODE_NONE, raster.lineWidth = 1;
    VkPipelineMultisampleStateCreateInfo multisample{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    multisample.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineDepthStencilStateCreateInfo depth{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
    depth.depthTestEnable = VK_TRUE, depth.depthWriteEnable = VK_TRUE, depth.depthCompareOp = VK_COMPARE_OP_LESS;
    VkPipelineColorBlendAttachmentState blendAttachment{};
    blendAttachment.colorWriteMask = 0xf;
    VkPipelineColorBlendStateCreateInfo blend{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    blend.attachmentCount = 1, blend.pAttachments = &blendAttachment;
    VkPushConstantRange pushRange{VK_SHADER_STAGE_VERTEX_BIT, 0, 32};
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.pushConstantRangeCount = 1, pli.pPushConstantRanges = &pushRange;
    VkPipelineLayout layout;
    CHECK(vkCreatePipelineLayout(device, &pli, nullptr, &layout));
    VkGraphicsPipelineCreateInfo gpi{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    gpi.stageCount = 2, gpi.pStages = stages, gpi.pVertexInputState = &vertexInput;
    gpi.pInputAssemblyState = &assembly, gpi.pViewportState = &viewportState, gpi.pRasterizationState = &raster;
    gpi.pMultisampleState = &multisample, gpi.pDepthStencilState = &depth, gpi.pColorBlendState = &blend;
    gpi.layout = layout, gpi.renderPass = renderPass;
    VkPipeline pipeline;
    CHECK(vkCreateGraphicsPipelines(device, VK_NULL_HANDLE, 1, &gpi, nullptr, &pipeline));
    vkDestroyShaderModule(device, stages[0].module, nullptr);
    vkDestroyShaderModule(device, stages[1].module, nullptr);

    // The CPU render's projection: the box's centre in the middle, 0.92 of the tighter side filled.
    const float scale = 0.92f * std::min(float(W) / (hi[0] - lo[0]), float(H) / (hi[1] - lo[1]));
    const float push[8] = {(lo[0] + hi[0]) / 2,
                           (lo[1] + hi[1]) / 2,
                           (lo[2] + hi[2]) / 2,
                           1.01f * (hi[2] - lo[2]),
                           2 * scale / float(W),
                           2 * scale / float(H),
                           0,
                           0};
    submitAndWait([&](VkCommandBuffer cmd) {
      VkClearValue clears[2] = {};
      clears[1].depthStencil = {1.0f, 0};
      VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
      rbi.renderPass = renderPass, rbi.framebuffer = framebuffer, rbi.renderArea = scissor;
      rbi.clearValueCount = 2, rbi.pClearValues = clears;
      vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
      vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, push);
      const VkDeviceSize offset = 0;
      vkCmdBindVertexBuffers(cmd, 0, 1, &vertices.buffer, &offset);
      vkCmdBindIndexBuffer(cmd, indices.buffer, 0, VK_INDEX_TYPE_UINT32);
      vkCmdDrawIndexed(cmd, uint32_t(model.faces.size()), 1, 0, 0, 0);
      vkCmdEndRenderPass(cmd);
      VkBufferImageCopy copy{};
      copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
      copy.imageExtent = {uint32_t(W), uint32_t(H), 1};
      vkCmdCopyImageToBuffer(cmd, colourImage, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback.buffer, 1, &copy);
    });
    std::vector<uint8_t> rgb(size_t(W) * H * 3);
    const uint8_t* rgba = static_cast<const uint8_t*>(readback.mapped);
    for (size_t i = 0; i < size_t(W) * H; ++i) std::memcpy(&rgb[i * 3], &rgba[i * 4], 3);
    if (!stbi_write_png(o.output.c_str(), W, H, 3, rgb.data(), W * 3))
      throw std::runtime_error(o.output + ": cannot write the PNG");
    std::printf("wrote %s (%dx%d): %u vertices skinned by Armature into the host's vertex buffer\n", o.output.c_str(),
                W, H, V);

    vkDestroyPipeline(device, pipeline, nullptr);
    vkDestroyPipelineLayout(device, layout, nullptr);
    vkDestroyFramebuffer(device, framebuffer, nullptr);
    vkDestroyRenderPass(device, renderPass, nullptr);
    for (VkImageView v : views) vkDestroyImageView(device, v, nullptr);
    vkDestroyImage(device, colourImage, nullptr), vkDestroyImage(device, depthImage, nullptr);
    vkFreeMemory(device, colourMemory, nullptr), vkFreeMemory(device, depthMemory, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
  }  // Armature's context, device and buffers go first: it never destroys the host's handles
  vkDestroyDevice(device, nullptr);
  if (messenger)
    reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"))(instance, messenger, nullptr);
  vkDestroyInstance(instance, nullptr);
  if (g_validationMessages) {
    std::fprintf(stderr, "host_renderer: %d validation messages\n", g_validationMessages);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--validation") == 0)
      o.validation = true;
    else if (std::strcmp(argv[i], "--cuda") == 0)
      o.cuda = true;
    else
      positional.emplace_back(argv[i]);
  }
  if (positional.size() < 2 || positional.size() > 3) {
    std::fprintf(stderr, "usage: host_renderer MODEL.npz OUT.png [HEIGHT] [--validation] [--cuda]\n");
    return 2;
  }
  o.model = positional[0], o.output = positional[1];
  if (positional.size() == 3) o.height = std::stoi(positional[2]);
  if (o.height < 16 || o.height > 4096) {
    std::fprintf(stderr, "host_renderer: HEIGHT must be 16 to 4096\n");
    return 2;
  }
  return run(o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "host_renderer: %s\n", e.what());
  return 1;
}
