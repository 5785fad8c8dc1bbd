#pragma once
// Draws skinned avatars straight from a position buffer (B × V × 3 floats) with a key light, hemisphere ambient,
// a ground grid and an optional wireframe overlay. The viewer's window and headless modes both use it.
#include <array>
#include <functional>
#include <vector>

#include "armature/shaders.h"
#include "armature/vk/buffer.h"
#include "armature/vk/image.h"
#include "armature/vk/timer.h"

namespace armature::app {

struct Camera {
  float yaw = 0.4f, pitch = 0.12f;  // radians: orbit around the target
  float distance = 3.2f;            // metres
  float target[3] = {0, -0.1f, 0};
  float fovY = 0.75f;                                  // radians
  std::array<float, 16> viewProj(float aspect) const;  // column-major, Vulkan clip space
  std::array<float, 3> eye() const;
  // Frames a box so it fills most of the view.
  void frame(const float lo[3], const float hi[3]);
};

// Where the camera looks from: the avatars' front (+z), their left side (+x), above, or the current direction.
enum class CameraView { Front, Side, Top, Current };

// The compute rasteriser's output for one frame (app/visibility.h): drawn instead of the hardware-rasterised mesh.
struct VisibilityBuffers {
  VkBuffer faces = VK_NULL_HANDLE;         // every avatar's faces, vertex ids offset into the position buffer
  VkBuffer faceIds = VK_NULL_HANDLE;       // H × W int32: face + 1, 0 = background
  VkBuffer barycentrics = VK_NULL_HANDLE;  // H × W × 3 floats
  VkBuffer bounds = VK_NULL_HANDLE;  // 4 uints: the pixel rectangle the avatars can cover (minX, minY, maxX, maxY)
};

// The UI as a layer: one premultiplied 8-bit RGBA pixel (in the target format's byte order) per pixel of the frame,
// rows top first, valid inside `area`. Rendered only when the UI changes (app/imgui_layer.h) and composited over
// a compute-shaded frame by the same compute pass, so such a frame needs no render pass for its UI. (A frame with
// a render pass takes the UI as draws inside it: Renderer::record's `inPass`.)
struct UiLayer {
  VkBuffer pixels = VK_NULL_HANDLE;
  VkRect2D area{};
};

// A texture the avatars are drawn with (the baked-texture mode), shared by every avatar of the crowd.
struct SurfaceTexture {
  VkBuffer uvs = VK_NULL_HANDLE;     // (F,3,2) floats: corner k of face f at (u, v) in [0, 1], v down
  VkBuffer texels = VK_NULL_HANDLE;  // size² × 4 floats: colour premultiplied by coverage (TextureBaker's output)
  uint32_t size = 0;                 // texels per side
  explicit operator bool() const { return texels != VK_NULL_HANDLE; }
};

// A scalar field sampled at the centres of size³ cells over a box (x fastest), drawn ray-marched with
// emission–absorption: absorption `density` per metre at value 1, colour from a heat scale of the value.
struct FieldVolume {
  VkBuffer values = VK_NULL_HANDLE;  // size³ floats
  uint32_t size = 0;
  float lo[3] = {}, hi[3] = {};  // the box, world space
  float density = 8;
  explicit operator bool() const { return values != VK_NULL_HANDLE; }
};

struct DrawSettings {
  uint32_t vertexCount = 0;  // per avatar
  uint32_t avatars = 1;
  float floorY = -1.0f;
  bool wireframe = false;
  bool ground = true;
  bool skeleton = false;             // bones and joint markers, drawn over the surface
  uint32_t jointCount = 0;           // per avatar, in the joints buffer
  VkBuffer joints = VK_NULL_HANDLE;  // B × J × 3 floats: posed joint positions
  float clear[3] = {0.11f, 0.12f, 0.14f};
  VisibilityBuffers visibility;  // set: shade these instead of drawing the mesh (the compute-raster mode)
  SurfaceTexture texture;        // set: the surface's colour, lit (else the plain skin colour)
  FieldVolume field;             // set: ray-marched over the avatars, in a GPU zone "field march" (recordFrame)
  UiLayer ui;                    // set: composited over a compute-shaded frame without a render pass
};

// Where a frame goes: the framebuffer (colour + depth of `extent`) and its colour image. With `image` set (and
// TRANSFER_DST usage), the compute-raster mode may shade the frame in a compute pass and copy it in.
struct FrameTarget {
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VkExtent2D extent{};
  VkImage image = VK_NULL_HANDLE;
};

class Renderer {
 public:
  // `finalLayout`: the color attachment's layout after the pass (present source, or transfer source for read-back).
  // `parents` (J, -1 for roots) gives the skeleton's bones.
  Renderer(vk::Context& ctx, VkFormat colorFormat, VkImageLayout finalLayout, const std::vector<int32_t>& faces,
           const std::vector<int32_t>& parents = {});
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  VkRenderPass renderPass() const { return m_renderPass; }
  // What a frame pass does with its attachments' contents when it begins.
  enum class PassStart {
    Clear,      // clears colour and depth
    LoadColor,  // loads the colour from COLOR_ATTACHMENT_OPTIMAL; no depth until a draw writes it
    DrawnOver,  // neither: the first draw writes every pixel's colour and depth (the background)
  };
  // A pass like the frame's (colour `colorFormat` + kDepthFormat, the same subpass and dependency, so pipelines
  // work across them), starting as `start` says, the colour left in `finalLayout`.
  static VkRenderPass createFramePass(vk::Context& ctx, VkFormat colorFormat, VkImageLayout finalLayout,
                                      PassStart start);
  // A framebuffer of `color` and a kDepthFormat `depth` view for such a pass.
  static VkFramebuffer createFramebuffer(vk::Context& ctx, VkRenderPass pass, VkImageView color, VkImageView depth,
                                         VkExtent2D extent);
  static constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;
  bool wireframeSupported() const { return m_lines != VK_NULL_HANDLE; }
  // How a textured surface is drawn by the hardware rasteriser: indexed, each fragment finding its (u, v) through
  // gl_PrimitiveID (where the GPU has the geometryShader feature: the default there), or as every face's corners
  // with their (u, v). Asking for indexed where the feature is missing throws armature::Error.
  bool texturedIndexed() const { return m_texturedIndexed; }
  void setTexturedIndexed(bool indexed);
  // Records the frame into `target`; afterwards the colour image is in the constructor's final layout.
  // With a visibility buffer, no wireframe, no texture and a target image, the frame is shaded by one compute pass
  // (shade_frame.comp, which also composites settings.ui) and copied into the image; a render pass that loads it
  // follows only for the skeleton. Otherwise the graphics pipeline draws the visibility pass or the mesh over a
  // background: where the image takes copies, shaded by that compute pass (the clear colour and the ground) with
  // the depth (background.frag's) drawn only over the pixels the avatars can cover; else drawn by
  // background.frag over every pixel. A full-screen raster pass is most of a frame on GPUs with few graphics units
  // (H100, H200), so the compute background halves such a frame. `inPass` records extra drawing (the UI) last in
  // the render pass, when there is one.
  // With settings.field, the field is ray-marched (a compute pass first, then `nextZone`, if given, is called with
  // "draw": recordFrame times the march as its own zone) and blended over the frame last, before `inPass`.
  void record(VkCommandBuffer cmd, const FrameTarget& target, const Camera& camera, VkBuffer positions,
              const DrawSettings& settings, const std::function<void(VkCommandBuffer)>& inPass = {},
              const std::function<void(VkCommandBuffer, const char*)>& nextZone = {});
  // Whether record() opens a render pass (else the UI must come as settings.ui).
  bool hasRenderPass(const FrameTarget& target, const DrawSettings& settings) const;

 private:
  // Whether a compute pass can shade into the target: its image takes copies of 8-bit RGBA or BGRA.
  bool copiesInto(const FrameTarget& target) const;
  // Whether the frame is shaded by the compute pass (the compute-raster mode, no wireframe or texture, a copyable
  // target).
  bool computeShaded(const FrameTarget& target, const DrawSettings& settings) const;
  // The compute background: the buffer of the pixels the avatars (or, with a field, everything) can cover: the
  // compute rasteriser's where it ran, else m_bounds, filled here.
  VkBuffer recordBounds(VkCommandBuffer cmd, const Camera& camera, VkBuffer positions, VkExtent2D extent,
                        const DrawSettings& settings);
  void marchField(VkCommandBuffer cmd, const Camera& camera, VkExtent2D extent, const FieldVolume& field);
  void compositeField(VkCommandBuffer cmd, const Camera& camera, VkExtent2D extent, const FieldVolume& field);
  // What recordComputeFrame shades: the background alone (the graphics pipeline draws the avatars over it), or
  // the whole frame from the visibility buffer, with or without settings.ui composited.
  enum class ComputeShade { Background, Frame, FrameWithUi };
  void recordComputeFrame(VkCommandBuffer cmd, const FrameTarget& target, const Camera& camera, VkBuffer positions,
                          const DrawSettings& settings, ComputeShade shade);
  static void imageBarrier(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to);
  VkPipeline createPipeline(const shaders::SpirvBlob& vert, const shaders::SpirvBlob& frag, VkPolygonMode mode,
                            VkPrimitiveTopology topology, bool depthTest = true,
                            VkPipelineLayout layout = VK_NULL_HANDLE);
  vk::Context& m_ctx;
  VkFormat m_colorFormat;
  VkImageLayout m_finalLayout;
  // PassStart::LoadColor: over a compute-shaded frame (for the skeleton and UI) or background (m_depthInit first).
  VkRenderPass m_loadColorPass = VK_NULL_HANDLE;
  vk::Buffer m_pixels;  // the compute-shaded frame or background, 8-bit RGBA, copied into the image
  vk::Buffer m_bounds;  // the compute background's frames: the pixels the avatars can cover (screen_bounds)
  uint32_t m_indexCount = 0;
  vk::Buffer m_indices;
  VkRenderPass m_renderPass = VK_NULL_HANDLE;  // PassStart::DrawnOver: every frame begins with m_background
  VkPipeline m_background = VK_NULL_HANDLE;
  VkPipeline m_depthInit = VK_NULL_HANDLE;  // the background's depth over m_bounds, no colour
  // The layouts hold the textured variants' bindings too; the plain shaders leave those unbound.
  VkDescriptorSetLayout m_setLayout = VK_NULL_HANDLE;  // MESH_BINDING_*
  VkPipelineLayout m_layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout m_visibilitySetLayout = VK_NULL_HANDLE;  // VISIBILITY_BINDING_*
  VkPipelineLayout m_visibilityLayout = VK_NULL_HANDLE;
  VkPipeline m_visibility = VK_NULL_HANDLE, m_visibilityTextured = VK_NULL_HANDLE;
  VkPipeline m_fill = VK_NULL_HANDLE, m_lines = VK_NULL_HANDLE, m_bones = VK_NULL_HANDLE, m_points = VK_NULL_HANDLE;
  VkPipeline m_texturedCorners = VK_NULL_HANDLE, m_texturedPrimitives = VK_NULL_HANDLE;  // the latter: if supported
  VkDescriptorSetLayout m_fieldSetLayout = VK_NULL_HANDLE;                               // FIELD_MARCH_BINDING_*
  VkPipelineLayout m_fieldLayout = VK_NULL_HANDLE;
  VkPipeline m_fieldComposite = VK_NULL_HANDLE;
  vk::Buffer m_fieldColours;  // the march's half-resolution colours
  bool m_texturedIndexed = false;
  uint32_t m_boneIndexCount = 0;
  vk::Buffer m_boneIndices;  // pairs (joint, parent)
};

// Records the frame between GPU zones "field march" (with a field), "draw" and "ui". Without a UI (null callbacks) only
// "draw". A frame without a render pass takes the UI as a cached layer (`layer` records its refresh when the UI
// changed: "ui"); otherwise the UI is drawn last inside the pass (`drawUi`, timed from there to the end of the pass:
// "ui").
void recordFrame(Renderer& renderer, vk::GpuTimer& timer, VkCommandBuffer cmd, const FrameTarget& target,
                 const Camera& camera, VkBuffer positions, DrawSettings& settings,
                 const std::function<UiLayer(VkCommandBuffer)>& layer = {},
                 const std::function<void(VkCommandBuffer)>& drawUi = {});

// An offscreen color + depth target of one size with a framebuffer, readable as RGBA8 pixels.
class OffscreenTarget {
 public:
  OffscreenTarget(vk::Context& ctx, const Renderer& renderer, VkExtent2D extent);
  ~OffscreenTarget();
  OffscreenTarget(const OffscreenTarget&) = delete;
  OffscreenTarget& operator=(const OffscreenTarget&) = delete;
  static constexpr VkFormat kColorFormat = VK_FORMAT_R8G8B8A8_UNORM;
  VkFramebuffer framebuffer() const { return m_framebuffer; }
  VkExtent2D extent() const { return m_color.extent(); }
  FrameTarget frameTarget() const { return {m_framebuffer, extent(), m_color.handle()}; }
  // Records a copy of the color image into the read-back buffer (after the render pass).
  void recordReadback(VkCommandBuffer cmd);
  // The pixels copied by the last executed recordReadback: width × height × 4 bytes, top row first.
  std::vector<uint8_t> pixels() const;

 private:
  vk::Context& m_ctx;
  vk::Image m_color, m_depth;
  VkFramebuffer m_framebuffer = VK_NULL_HANDLE;
  vk::Buffer m_readback;
};

}  // namespace armature::app
