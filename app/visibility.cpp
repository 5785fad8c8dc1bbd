#include "app/visibility.h"
#include <volk.h>  // the library's own Vulkan function table

#include <algorithm>

#include "app/clip_transform.h"
#include "armature/shaders.h"
#include "shared/render_io.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/interop/interop.h"
#endif

namespace armature::app {

struct VisibilityRaster::Cuda {
#ifdef ARMATURE_HAS_INTEROP
  cuda::DeviceMemory clip, scratch;
  // faces: the crowd's, written by Vulkan (crowd_faces.comp), read by the CUDA rasteriser and the shading passes.
  std::unique_ptr<interop::SharedBuffer> faces, faceIds, barycentrics, bounds;
#endif
};

VisibilityRaster::VisibilityRaster(vk::Context& ctx, std::vector<int32_t> faces, uint32_t vertexCount)
    : m_ctx(ctx), m_faces(std::move(faces)), m_vertexCount(vertexCount) {
  ARM_CHECK(!m_faces.empty() && m_faces.size() % 3 == 0, "VisibilityRaster: faces must be a non-empty (F,3) array");
  m_baseFaces = vk::makeStorageBuffer<int32_t>(m_ctx, m_faces);
}

VisibilityRaster::~VisibilityRaster() = default;

std::array<float, 16> VisibilityRaster::clipMatrix(const std::array<float, 16>& viewProj, VkExtent2D extent) {
  std::array<float, 16> m = viewProj;
  float sx = float(extent.width) / float(std::max(extent.width, 2u) - 1),
        sy = float(extent.height) / float(std::max(extent.height, 2u) - 1);
  for (int col = 0; col < 4; ++col) {  // column-major: row r of column c is m[c * 4 + r]
    m[size_t(col * 4)] *= sx;
    m[size_t(col * 4 + 1)] *= sy;
    m[size_t(col * 4 + 2)] = 2 * m[size_t(col * 4 + 2)] - m[size_t(col * 4 + 3)];  // z' = 2z - w
  }
  return m;
}

void VisibilityRaster::ensure(uint32_t avatars, VkExtent2D extent, bool onCuda, [[maybe_unused]] void* cudaStream) {
  // Face indices and clip positions depend on the avatar count, the image-sized buffers on the extent: a resize
  // must not rebuild a crowd's faces (257 MB for 1,024 avatars). Both live on the backend's side.
  const bool facesFit = avatars <= m_avatars && onCuda == (m_cuda != nullptr);
  if (facesFit && extent.width == m_extent.width && extent.height == m_extent.height) return;
  vkDeviceWaitIdle(m_ctx.device());  // earlier frames may still read the old buffers
  const size_t F = m_faces.size() / 3, V = m_vertexCount;
  if (!facesFit) {
    const size_t faceBytes = size_t(avatars) * F * 12;
    ARM_CHECK(faceBytes <= (size_t(1) << 30),
              "compute raster: %u avatars need %zu MB of face indices (at most 1 GB); use "
              "the hardware rasteriser for crowds this large",
              avatars, faceBytes >> 20);
    m_allFaces = vk::Buffer();
    m_cuda.reset();
    m_clip = vk::Buffer();
    VkBuffer crowd = VK_NULL_HANDLE;  // every avatar's faces, offset to its vertices: one mesh to the rasteriser
    if (onCuda) {
#ifdef ARMATURE_HAS_INTEROP
      m_cuda = std::make_unique<Cuda>();
      m_cuda->faces = std::make_unique<interop::SharedBuffer>(m_ctx, faceBytes);
      m_cuda->clip = cuda::DeviceMemory(size_t(avatars) * V * 16);
      crowd = m_cuda->faces->buffer();
#else
      throw Error("compute raster on CUDA: this build has no CUDA");
#endif
    } else {
      m_allFaces = vk::Buffer(m_ctx, faceBytes, vk::kStorageUsage);
      m_clip = vk::Buffer(m_ctx, size_t(avatars) * V * 16, vk::kStorageUsage);
      crowd = m_allFaces.handle();
    }
    const CrowdFacesPush push{uint32_t(F * 3), uint32_t(V), avatars, 0};
    const auto& program = m_ctx.program(shaders::crowd_faces, CROWD_FACES_BINDINGS, sizeof push);
    m_ctx.submitAndWait([&](VkCommandBuffer cmd) {
      vk::dispatch(cmd, program, vk::groupCount(uint64_t(F) * 3 * avatars, CROWD_FACES_GROUP),
                   {m_baseFaces.view(), {crowd, 0, VK_WHOLE_SIZE}}, push);
      vk::computeBarrier(cmd);  // available to the host too: the staging interop path copies it from there
    });
#ifdef ARMATURE_HAS_INTEROP
    if (onCuda) m_cuda->faces->toCuda(cudaStream);  // staging path: a copy (zero-copy: nothing to do)
#endif
    m_avatars = avatars;
  }
  RasterDesc d{extent.width, extent.height};
  const size_t pixels = d.pixels();
  for (vk::Buffer* b : {&m_scratch, &m_faceIds, &m_barycentrics, &m_bounds}) *b = vk::Buffer();
  m_scratchState.reset();
  if (onCuda) {
#ifdef ARMATURE_HAS_INTEROP
    Cuda& c = *m_cuda;
    c.scratch = cuda::DeviceMemory(rasterScratchBytes(d), cuda::MemoryKind::Compressible);  // the outputs are Vulkan's
    c.faceIds = std::make_unique<interop::SharedBuffer>(m_ctx, pixels * 4);
    c.barycentrics = std::make_unique<interop::SharedBuffer>(m_ctx, pixels * 12);
    c.bounds = std::make_unique<interop::SharedBuffer>(m_ctx, 16);
#endif
  } else {
    m_scratch = vk::Buffer(m_ctx, rasterScratchBytes(d), vk::kStorageUsage);
    m_faceIds = vk::Buffer(m_ctx, pixels * 4, vk::kStorageUsage);
    m_barycentrics = vk::Buffer(m_ctx, pixels * 12, vk::kStorageUsage);
    m_bounds = vk::Buffer(m_ctx, 16, vk::kStorageUsage);
  }
  m_extent = extent;
}

VisibilityBuffers VisibilityRaster::recordVulkan(VkCommandBuffer cmd, VkBuffer positions, uint32_t avatars,
                                                 const std::array<float, 16>& viewProj, VkExtent2D extent) {
  ensure(avatars, extent, false, nullptr);
  // The previous frame's shading (a compute pass or the graphics visibility pass) may still read these buffers.
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr,
                       0, nullptr);
  ClipPush push{};
  auto m = clipMatrix(viewProj, extent);
  std::copy(m.begin(), m.end(), push.viewProj);
  push.count = avatars * m_vertexCount;
  push.width = extent.width, push.height = extent.height;
  vkCmdFillBuffer(cmd, m_bounds.handle(), 0, 8, ~0u);  // min x, y
  vkCmdFillBuffer(cmd, m_bounds.handle(), 8, 8, 0u);   // max x, y
  vk::computeBarrier(cmd);
  const auto& transform = m_ctx.program(shaders::clip_transform, CLIP_TRANSFORM_BINDINGS, sizeof push);
  vk::dispatch(cmd, transform, vk::groupCount(push.count, CLIP_BOUNDS_GROUP, CLIP_BOUNDS_GROUPS),
               {{positions, 0, VK_WHOLE_SIZE}, m_clip.view(), m_bounds.view()}, push);
  vk::computeBarrier(cmd);
  rasterize(Exec::vulkan(m_ctx, cmd), {.desc = m_scratchState.next(RasterDesc{extent.width, extent.height}),
                                       .vertexCount = push.count,
                                       .faceCount = uint32_t(avatars * (m_faces.size() / 3)),
                                       .positions = DeviceView::of(m_clip, ElementType::Float32),
                                       .faces = DeviceView::of(m_allFaces, ElementType::Int32),
                                       .scratch = DeviceView::of(m_scratch, ElementType::Byte),
                                       .findices = DeviceView::of(m_faceIds, ElementType::Int32),
                                       .barycentrics = DeviceView::of(m_barycentrics, ElementType::Float32)});
  return {m_allFaces.handle(), m_faceIds.handle(), m_barycentrics.handle(), m_bounds.handle()};
}

VisibilityBuffers VisibilityRaster::runCuda(const float* positions, uint32_t avatars,
                                            const std::array<float, 16>& viewProj, VkExtent2D extent, void* stream) {
#ifdef ARMATURE_HAS_INTEROP
  ensure(avatars, extent, true, stream);
  Cuda& c = *m_cuda;
  auto m = clipMatrix(viewProj, extent);
  uint32_t count = avatars * m_vertexCount;
  transformToClip(positions, count, m.data(), c.clip.as<float>(), extent.width, extent.height,
                  static_cast<uint32_t*>(c.bounds->cudaPointer()), stream);
  const RasterDesc d = m_scratchState.next(RasterDesc{extent.width, extent.height});
  const uint32_t faceCount = uint32_t(avatars * (m_faces.size() / 3));
  rasterize(Exec::cuda(stream),
            {.desc = d,
             .vertexCount = count,
             .faceCount = faceCount,
             .positions = DeviceView::ofCuda(c.clip.data(), ElementType::Float32, size_t(count) * 4),
             .faces = DeviceView::ofCuda(c.faces->cudaPointer(), ElementType::Int32, size_t(faceCount) * 3),
             .scratch = DeviceView::ofCuda(c.scratch.data(), ElementType::Byte, rasterScratchBytes(d)),
             .findices = DeviceView::ofCuda(c.faceIds->cudaPointer(), ElementType::Int32, d.pixels()),
             .barycentrics = DeviceView::ofCuda(c.barycentrics->cudaPointer(), ElementType::Float32, d.pixels() * 3)});
  c.faceIds->toVulkan(stream);
  c.barycentrics->toVulkan(stream);
  c.bounds->toVulkan(stream);
  return {c.faces->buffer(), c.faceIds->buffer(), c.barycentrics->buffer(), c.bounds->buffer()};
#else
  (void)positions, (void)avatars, (void)viewProj, (void)extent, (void)stream;
  throw Error("compute raster on CUDA: this build has no CUDA");
#endif
}

VisibilityBuffers VisibilityRaster::record(const Exec& exec, DeviceView positions, uint32_t avatars,
                                           const std::array<float, 16>& viewProj, VkExtent2D extent) {
  ARM_CHECK(positions.offset == 0, "the rasteriser's positions start a buffer");
  if (exec.backend() == Backend::Cuda)
    return runCuda(positions.cuda<const float>(), avatars, viewProj, extent, exec.stream());
  return recordVulkan(exec.commandBuffer(), positions.vkBuffer, avatars, viewProj, extent);
}

}  // namespace armature::app
