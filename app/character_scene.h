#pragma once
// A crowd of one rigged glTF character in the viewer. Each frame every member's clip is sampled on the host (each
// at its own phase), then two GPU stages pose it: "joints" (joint propagation: locals → globals, skinning matrices
// and joint positions) and "skinning" (linear blend skinning of the bind-pose mesh). CUDA's outputs are buffers
// shared with Vulkan through interop; the CPU backend is the double reference.
#include <memory>

#include "app/scene.h"
#include "app/visibility.h"
#include "armature/body/gltf_character.h"
#include "armature/ops/joint_forest.h"

namespace armature::app {

class CharacterScene : public Scene {
 public:
  CharacterScene(vk::Context& ctx, GltfCharacter character, uint32_t maxAvatars);
  ~CharacterScene() override;

  const GltfCharacter& character() const { return m_character; }
  const std::vector<int32_t>& faces() const override { return m_faces; }
  const std::vector<int32_t>& parents() const override { return m_character.parents; }
  uint32_t vertexCount() const override { return m_character.vertexCount(); }
  void setBackend(Backend backend) override;
  Backend backend() const override { return m_backend; }
  void setAvatars(uint32_t count) override;
  uint32_t avatars() const override { return m_avatars; }
  uint32_t maxAvatars() const override { return m_maxAvatars; }
  // Which of the file's clips plays (throws past the last); the first by default.
  void setClip(uint32_t clip);
  double clipSeconds() const override;

  // Member i plays the clip from crowdPhase(i) when animating, else holds the clip's first frame; members stand at
  // crowdPlace, spaced by the character's size.
  void update(double seconds) override;
  void skin(VkCommandBuffer cmd, vk::GpuTimer* timer) override;
  VkBuffer positions() const override;
  VkBuffer joints() const override;
  VisibilityBuffers rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer, const std::array<float, 16>& viewProj,
                              VkExtent2D extent) override;
  void crowdBounds(float lo[3], float hi[3]) const override;
  float floorY() const override { return m_restLo[1]; }

  // The locals of every member as the backends get them, (B,J,12) (for tests), and what the last skin() wrote
  // (after it has executed).
  const std::vector<double>& locals() const { return m_locals; }
  std::vector<float> readPositions() const;

  struct Rig;  // a device's copy of the character and its work buffers (character_scene.cpp)
  class Lane;

 private:
  std::string gpuStatus() const override;
  Lane& lane() const;
  vk::Context& m_ctx;
  GltfCharacter m_character;
  JointForest m_forest;
  std::vector<int32_t> m_faces;
  uint32_t m_maxAvatars, m_avatars = 1, m_clip = 0;
  Backend m_backend = Backend::Vulkan;
  double m_time = 0, m_spacing = 1;
  float m_restLo[3], m_restHi[3];  // member 0's box at the clip's start
  std::vector<double> m_locals;    // (B,J,12)
  std::unique_ptr<VisibilityRaster> m_raster;
  Device m_vkDevice;                     // the Vulkan lane's
  std::unique_ptr<Device> m_cudaDevice;  // the CUDA lane's, made on first use; outlives the lanes
  std::unique_ptr<Lane> m_vulkanLane, m_cudaLane;
};

}  // namespace armature::app
