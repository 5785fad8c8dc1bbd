#pragma once
// What the viewer draws: a crowd of posed meshes of one topology — SMPL-X avatars (app/avatar_scene.h), a rigged
// glTF character (app/character_scene.h), or crowds of both side by side (app/composite_scene.h) — posed each frame
// by the chosen backend into buffers the renderer reads. The window and headless modes drive every kind through this
// interface; the stage helpers below are how the kinds issue and time their GPU work.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/profiler.h"
#include "app/renderer.h"
#include "armature/backend.h"
#include "armature/cuda/runtime.h"
#include "armature/device.h"
#include "armature/vk/timer.h"

namespace armature::app {

class Scene {
 public:
  virtual ~Scene() = default;
  virtual const std::vector<int32_t>& faces() const = 0;    // (F,3), one member of the crowd's
  virtual const std::vector<int32_t>& parents() const = 0;  // (J), −1 for roots: the skeleton drawn
  virtual uint32_t vertexCount() const = 0;                 // per member
  uint32_t jointCount() const { return uint32_t(parents().size()); }

  // Switches the backend; throws armature::Error with the reason when it cannot run here.
  virtual void setBackend(Backend backend) = 0;
  virtual Backend backend() const = 0;
  virtual std::string backendStatus() const;    // e.g. "cuda, interop: zero-copy (…)"
  virtual void setAvatars(uint32_t count) = 0;  // 1 … maxAvatars, on a grid, each at its own animation phase
  // Where the crowd's grid starts (x, z; the first member's place), for crowds side by side; from the next update().
  void setCrowdOrigin(double x, double z) { m_crowdOrigin = {x, z}; }
  virtual uint32_t avatars() const = 0;
  virtual uint32_t maxAvatars() const = 0;
  bool animate = false;
  // The looping clip's length in seconds (a motion's, a glTF animation's), 0 without one.
  virtual double clipSeconds() const = 0;

  // Poses every member for time `seconds`.
  virtual void update(double seconds) = 0;
  // Poses and skins every member into positions() and joints(). Vulkan records into `cmd` inside timer zones;
  // CPU and CUDA do their work now and time it themselves (ownTimes()).
  virtual void skin(VkCommandBuffer cmd, vk::GpuTimer* timer) = 0;
  virtual VkBuffer positions() const = 0;  // B × V × 3 floats
  virtual VkBuffer joints() const = 0;     // B × J × 3 floats: posed joint positions
  // The compute-raster mode, after skin(): the crowd through the project's rasteriser into a visibility buffer
  // (CUDA's for the CUDA backend, run now; Vulkan compute's otherwise, recorded into `cmd`).
  virtual VisibilityBuffers rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer, const std::array<float, 16>& viewProj,
                                      VkExtent2D extent) = 0;
  // The texture the crowd is drawn with, or none (the plain skin colour): see AvatarScene::setBake.
  virtual SurfaceTexture texture() const { return {}; }
  // The field the renderer ray-marches, or none: see AvatarScene::setField.
  virtual FieldVolume volume() const { return {}; }
  // The stages the last skin() and rasterize() timed themselves, as profiler spans.
  const std::vector<Span>& ownTimes() const { return m_ownTimes; }
  // The box of the whole crowd, for framing the camera; the floor height.
  virtual void crowdBounds(float lo[3], float hi[3]) const = 0;
  virtual float floorY() const = 0;

 protected:
  virtual std::string gpuStatus() const = 0;  // the GPU backend's side: where it runs, how it shares its outputs
  // Where member i of `count` stands: crowdPlace(), moved to the crowd's origin.
  std::array<double, 2> place(uint32_t i, uint32_t count, double spacing) const;
  std::vector<Span> m_ownTimes;

 private:
  std::array<double, 2> m_crowdOrigin{0, 0};
};

// Where member i of a crowd of `count` stands: (x, z) on a square grid `spacing` apart, centred on x = 0, its rows
// going back from z = 0.
std::array<double, 2> crowdPlace(uint32_t i, uint32_t count, double spacing);
// Where member i starts in a looping clip, as a fraction of it: i·0.618… (the golden ratio's), so that no two
// neighbours move alike.
double crowdPhase(uint32_t i);

// The CPU reference's outputs (doubles) into the float buffers the renderer draws from: a synchronous upload.
void uploadFloats(DeviceBuffer& buffer, const std::vector<double>& values);

// Turns the camera to `view` and frames every member (a crowd from higher up, so the rows behind show).
void frameAvatars(Camera& camera, const Scene& scene, CameraView view);

// Opens what `path` holds: a rigged glTF character (.glb, .gltf) or a body model (.npz, .pkl; empty: the generated
// default avatar), for a crowd of up to `maxAvatars`. With `beside`, those files' crowds stand to its right, all
// drawn as one scene (a CompositeScene).
std::unique_ptr<Scene> openScene(vk::Context& ctx, const std::string& path, uint32_t maxAvatars,
                                 const std::vector<std::string>& beside = {});

// One untimed frame of the scene's GPU work at load (skinning, and the compute rasteriser when `viewProj` is given),
// waited for: what is slow the first time (CUDA modules loaded on first launch, buffers sized for the crowd,
// pipelines) then happens before the first frame, which is timed like the rest.
void warmUp(vk::Context& ctx, Scene& scene, const std::array<float, 16>* viewProj, VkExtent2D extent);

// A stage of a frame's GPU work on one backend. Vulkan: recorded into the frame's command buffer inside a timer
// zone, followed by a compute barrier. CUDA: enqueued on the stage's own stream and timed by events; end() hands the
// outputs to Vulkan and waits for the stream (the viewer's simple frame; interop::FrameRing is the protocol that
// avoids the wait).
class FrameStage {
 public:
  explicit FrameStage(Backend backend);
  ~FrameStage();
  FrameStage(const FrameStage&) = delete;
  FrameStage& operator=(const FrameStage&) = delete;
  Backend backend() const { return m_backend; }
  Exec begin(vk::Context& ctx, VkCommandBuffer cmd, vk::GpuTimer* timer, const char* name);
  // CUDA's stage time, as a span; Vulkan's is the timer's zone.
  std::optional<Span> end(VkCommandBuffer cmd, vk::GpuTimer* timer,
                          std::initializer_list<const DeviceBuffer*> toVulkan = {});

 private:
  Backend m_backend;
  uint32_t m_zone = 0;
  struct Cuda;  // stream, event timer, the stage's name
  std::unique_ptr<Cuda> m_cuda;
};

}  // namespace armature::app
