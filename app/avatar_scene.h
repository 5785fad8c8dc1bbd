#pragma once
// The viewer's avatars: parameters for one posed avatar or a crowd, skinned each frame by the chosen backend into
// a buffer the renderer draws from (CUDA: a shared buffer through interop; Vulkan: its compute path; CPU: the
// double reference, uploaded).
#include <memory>
#include <optional>
#include <string>

#include "app/body_field.h"
#include "app/scene.h"
#include "app/visibility.h"
#include "armature/backend.h"
#include "armature/body/body_model.h"
#include "armature/body/motion.h"
#include "armature/device.h"
#include "armature/ops/skinning.h"
#include "armature/ops/texture_bake.h"
#include "armature/vk/timer.h"

namespace armature::app {

// How AvatarScene's field mode evaluates and draws its field.
struct FieldSettings {
  uint32_t resolution = 64;  // volume points per side: 4 … 256
  float epsilon = 1e-3f;     // the culled field's cut (gaussian_field.h)
  float density = 8;         // the transfer function's absorption per metre at field value 1
};

class AvatarScene : public Scene {
 public:
  AvatarScene(vk::Context& ctx, BodyModel model, uint32_t maxAvatars, uint32_t shapeComponents = 10,
              uint32_t exprComponents = 10);
  ~AvatarScene();

  const BodyModel& model() const { return m_model; }
  vk::Context& context() const { return m_ctx; }
  const std::vector<int32_t>& faces() const override { return m_model.faces; }
  const std::vector<int32_t>& parents() const override { return m_model.parents; }
  uint32_t vertexCount() const override { return m_model.vertexCount; }
  void setBackend(Backend backend) override;
  Backend backend() const override { return m_backend; }
  void setAvatars(uint32_t count) override;  // each with its own shape and phase
  uint32_t avatars() const override { return m_avatars; }
  uint32_t maxAvatars() const override { return m_maxAvatars; }

  // The pose the user edits (avatar 0; the crowd follows it with its own shapes and animation phases).
  BodyParams& base() { return m_base; }
  // Copies a pose (e.g. a preset) into base(), keeping base()'s component counts.
  void applyPose(const BodyParams& p);
  // Active shape and expression components (1 … what the model has); rebuilds the skinning tables.
  void setComponentCounts(uint32_t shapeComponents, uint32_t exprComponents);
  uint32_t shapeComponents() const { return m_shape; }
  uint32_t exprComponents() const { return m_expr; }
  // animate: a looping walk cycle on top of the base pose (without a motion).
  // A motion the avatars play instead of the base pose (y-up; looped), each at its own phase: avatar i starts at
  // the fraction i·0.618… of the clip (the golden ratio's), so no two neighbours move alike. The base pose's
  // translation and the crowd's grid are added to the motion's translation relative to its first frame.
  void setMotion(Motion motion);
  void clearMotion();  // back to the base pose (or the walk loop when animating)
  const Motion* motion() const { return m_motion.frames ? &m_motion : nullptr; }
  double clipSeconds() const override;  // the motion's length
  // Poses every avatar for time `seconds` (the walk cycle's phase, or the motion's time).
  void update(double seconds) override;

  // The baked-texture mode. Each skin() then also bakes avatar 0, painted by body part (bodyPartColours), from
  // `views` cameras around it (bakeRingCameras, views of viewSize²) into a texture of textureSize² over a UV atlas
  // of the rest shape (armature/ops/texture_bake.h), in stages "bake views", "bake samples" and "bake aggregate";
  // the whole crowd is drawn with it (texture()). The CPU backend bakes on Vulkan, from the positions it uploads.
  struct BakeSettings {
    uint32_t textureSize = 1024, views = 8, viewSize = 1024;
  };
  void setBake(std::optional<BakeSettings> settings);  // nullopt: off
  const std::optional<BakeSettings>& bake() const { return m_bake; }
  const UvAtlas* atlas() const { return m_atlas.get(); }
  SurfaceTexture texture() const override;

  // The field mode: a Gaussian field attached to avatar 0's joints (app/body_field.h). Each skin() then poses it
  // with avatar 0's joints (joint propagation, then poseGaussians), bins it (buildGaussianGrid) and evaluates it,
  // culled at `epsilon`, over a volume of resolution³ points spanning a box that holds its support, in stages
  // "field pose", "field grid" and "field eval"; the renderer ray-marches that volume (volume()). The CPU backend
  // evaluates on Vulkan.
  void setField(std::optional<BodyField> field, FieldSettings settings = {});  // nullopt: off
  const BodyField* field() const { return m_field ? &*m_field : nullptr; }
  FieldSettings& fieldSettings() { return m_fieldSettings; }  // the density may change any time; the rest: setField
  FieldVolume volume() const override;

  // Skins every avatar into positions() (a "skinning" stage), then bakes (the baked-texture mode).
  void skin(VkCommandBuffer cmd, vk::GpuTimer* timer) override;
  VkBuffer positions() const override;
  VkBuffer joints() const override;
  // The skinned positions of every avatar after the last skin() has executed.
  std::vector<float> readPositions() const;
  VisibilityBuffers rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer, const std::array<float, 16>& viewProj,
                              VkExtent2D extent) override;
  // The axis-aligned box of avatar 0 at rest, and that box moved to every avatar's place (the crowd's box).
  void bounds(float lo[3], float hi[3]) const;
  void crowdBounds(float lo[3], float hi[3]) const override;
  float floorY() const override { return m_floorY; }
  // The parameters of every avatar as the backends see them (for tests).
  const BodyParams& params() const { return m_params; }
  // Avatar 0 as it is drawn (a motion's frame, or the walk loop on the base pose), at the base pose's place rather
  // than its place in the crowd: what "save" writes and the pose controls show while something plays.
  BodyParams shown() const;
  // Whether the avatars show something else than base(): a motion (playing or paused) or the walk loop.
  bool playing() const { return m_motion.frames > 0 || animate; }

  class Lane;  // a GPU backend's side of the frame (avatar_scene.cpp)

 private:
  std::string gpuStatus() const override;
  Lane& lane(std::optional<Backend> backend = std::nullopt) const;  // the scene's backend's by default
  void bakeTexture(Lane& gpu, VkCommandBuffer cmd, vk::GpuTimer* timer);
  void evaluateField(Lane& gpu, VkCommandBuffer cmd, vk::GpuTimer* timer);
  struct FieldBuffers;
  vk::Context& m_ctx;
  BodyModel m_model;
  JointForest m_skeleton;  // the model's parents, analysed (the field mode's joint propagation)
  Device m_vkDevice;       // the Vulkan backend's
  uint32_t m_maxAvatars, m_avatars = 1, m_shape, m_expr;
  Backend m_backend = Backend::Vulkan;
  BodyParams m_base, m_params;
  double m_time = 0;
  std::unique_ptr<VisibilityRaster> m_raster;  // built on first use of the compute-raster mode
  float m_floorY = -1;
  Motion m_motion;  // no frames: none
  std::optional<BakeSettings> m_bake;
  std::unique_ptr<UvAtlas> m_atlas;  // the baked-texture mode's, with its (u, v) for the renderer
  vk::Buffer m_uvs;
  std::optional<BodyField> m_field;
  FieldSettings m_fieldSettings;
  std::vector<double> m_fieldShape, m_fieldRestJoints;  // avatar 0's betas and expression, and their rest joints
  FieldReach m_fieldReach;
  float m_fieldLo[3] = {}, m_fieldHi[3] = {};  // the volume's box in the last skin()
  std::unique_ptr<Device> m_cudaDevice;        // the CUDA lane's, made on first use; outlives the lanes
  std::unique_ptr<Lane> m_vulkanLane, m_cudaLane;
};

}  // namespace armature::app
