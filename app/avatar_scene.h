#pragma once
// The viewer's avatars: parameters for one posed avatar or a crowd, skinned each frame by the chosen backend into
// a buffer the renderer draws from (CUDA: a shared buffer through interop; Vulkan: its compute path; CPU: the
// double reference, uploaded).
#include <memory>
#include <string>

#include "app/profiler.h"
#include "app/visibility.h"
#include "armature/backend.h"
#include "armature/body/body_model.h"
#include "armature/body/motion.h"
#include "armature/device.h"
#include "armature/ops/skinning.h"
#include "armature/vk/timer.h"

namespace armature::app {

class AvatarScene {
 public:
  AvatarScene(vk::Context& ctx, BodyModel model, uint32_t maxAvatars, uint32_t shapeComponents = 10,
              uint32_t exprComponents = 10);
  ~AvatarScene();

  const BodyModel& model() const { return m_model; }
  // Switches the skinning backend; throws armature::Error with the reason when it cannot run here.
  void setBackend(Backend backend);
  Backend backend() const { return m_backend; }
  std::string backendStatus() const;  // e.g. "cuda, interop: zero-copy (…)"
  void setAvatars(uint32_t count);    // 1 … maxAvatars, laid out on a grid, each with its own shape and phase
  uint32_t avatars() const { return m_avatars; }
  uint32_t maxAvatars() const { return m_maxAvatars; }

  // The pose the user edits (avatar 0; the crowd follows it with its own shapes and animation phases).
  BodyParams& base() { return m_base; }
  // Copies a pose (e.g. a preset) into base(), keeping base()'s component counts.
  void applyPose(const BodyParams& p);
  // Active shape and expression components (1 … what the model has); rebuilds the skinning tables.
  void setComponentCounts(uint32_t shapeComponents, uint32_t exprComponents);
  uint32_t shapeComponents() const { return m_shape; }
  uint32_t exprComponents() const { return m_expr; }
  bool animate = false;  // a looping walk cycle on top of the base pose (without a motion)
  // A motion the avatars play instead of the base pose (y-up; looped), each at its own phase: avatar i starts at
  // the fraction i·0.618… of the clip (the golden ratio's), so no two neighbours move alike. The base pose's
  // translation and the crowd's grid are added to the motion's translation relative to its first frame.
  void setMotion(Motion motion);
  void clearMotion();  // back to the base pose (or the walk loop when animating)
  const Motion* motion() const { return m_motion.frames ? &m_motion : nullptr; }
  double motionSeconds() const;  // the clip's length
  // Poses every avatar for time `seconds` (the walk cycle's phase, or the motion's time).
  void update(double seconds);

  // Skins every avatar into positions(). Vulkan records into `cmd` (inside a "skinning" timer zone); CPU and
  // CUDA do their work now and time it themselves (ownTimes()).
  void skin(VkCommandBuffer cmd, vk::GpuTimer* timer);
  VkBuffer positions() const;
  VkBuffer joints() const;  // B × J × 3 posed joint positions, from the same backend as positions()
  // The skinned positions of every avatar after the last skin() has executed (Vulkan and CPU backends).
  std::vector<float> readPositions() const;
  // The compute-raster mode, after skin(): every avatar through the project's rasteriser into a visibility
  // buffer for Renderer — CUDA's for the CUDA backend (runs now, timed in ownTimes()), Vulkan compute's for the
  // others (recorded into `cmd` in a "raster" timer zone). `viewProj`: the camera's, as Renderer draws with.
  VisibilityBuffers rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer, const std::array<float, 16>& viewProj,
                              VkExtent2D extent);
  // The stages the last skin() and rasterize() timed themselves, as profiler spans: CUDA's at their device times
  // on the CUDA stream's track, the CPU backend's skinning as a host stage. (Vulkan's are timer zones.)
  const std::vector<Span>& ownTimes() const { return m_ownTimes; }
  // The axis-aligned box of avatar 0 at rest, and that box moved to every avatar's place (the crowd's box), for
  // framing the camera; the floor height.
  void bounds(float lo[3], float hi[3]) const;
  void crowdBounds(float lo[3], float hi[3]) const;
  float floorY() const { return m_floorY; }
  // The parameters of every avatar as the backends see them (for tests).
  const BodyParams& params() const { return m_params; }

  // The Vulkan lane's host-visible parameter and output buffers (the CPU reference writes the outputs too).
  struct HostBuffers {
    vk::Buffer pose, betas, expression, transl, positions, joints;
  };
  class Lane;  // a GPU backend's side of the frame (avatar_scene.cpp)

 private:
  Lane& lane() const;
  vk::Context& m_ctx;
  BodyModel m_model;
  Device m_vkDevice;  // the Vulkan backend's
  uint32_t m_maxAvatars, m_avatars = 1, m_shape, m_expr;
  Backend m_backend = Backend::Vulkan;
  BodyParams m_base, m_params;
  double m_time = 0;
  std::vector<Span> m_ownTimes;
  std::unique_ptr<VisibilityRaster> m_raster;  // built on first use of the compute-raster mode
  float m_floorY = -1;
  HostBuffers m_host;
  Motion m_motion;  // no frames: none
  std::unique_ptr<Lane> m_vulkanLane, m_cudaLane;
};

// Turns the camera to `view` and frames every avatar (a crowd from higher up, so the rows behind show).
void frameAvatars(Camera& camera, const AvatarScene& scene, CameraView view);

}  // namespace armature::app
