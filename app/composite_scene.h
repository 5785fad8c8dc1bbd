#pragma once
// Crowds of different kinds side by side — SMPL-X avatars next to a rigged glTF character's crowd — drawn as one
// scene. Each part poses its own crowd with its own stages ("skinning"; "gltf joints", "gltf skinning"), standing to
// the right of the part before it. A "gather" stage then copies every part's positions and joints into the buffers
// the renderer reads, member by member: member i of the composite is member i of every part, so its topology is the
// parts' faces (and skeletons) one after another and the renderer, the skeleton overlay and the compute rasteriser
// take it as they take any crowd. The gather is a dispatch per part and buffer; the parts' own outputs stay where
// their backends wrote them (a CUDA part's in its interop buffers, which Vulkan reads).
#include <memory>
#include <vector>

#include "app/scene.h"
#include "app/visibility.h"

namespace armature::app {

class CompositeScene : public Scene {
 public:
  CompositeScene(vk::Context& ctx, std::vector<std::unique_ptr<Scene>> parts);
  ~CompositeScene() override;

  size_t partCount() const { return m_parts.size(); }
  Scene& part(size_t i) const { return *m_parts.at(i); }

  const std::vector<int32_t>& faces() const override { return m_faces; }
  const std::vector<int32_t>& parents() const override { return m_parents; }
  uint32_t vertexCount() const override { return m_vertexStart.back(); }
  // Every part switches, or none (the error is the first part's that cannot).
  void setBackend(Backend backend) override;
  Backend backend() const override { return m_parts[0]->backend(); }
  std::string backendStatus() const override;  // the parts', one after another
  void setAvatars(uint32_t count) override;    // every part's crowd, placed side by side again
  uint32_t avatars() const override { return m_parts[0]->avatars(); }
  uint32_t maxAvatars() const override;
  // The parts loop their clips on their own: no common length.
  double clipSeconds() const override { return 0; }

  void update(double seconds) override;
  void skin(VkCommandBuffer cmd, vk::GpuTimer* timer) override;
  VkBuffer positions() const override { return m_positions.handle(); }
  VkBuffer joints() const override { return m_joints.handle(); }
  // Vulkan compute's rasteriser over the gathered positions, whatever the parts' backend.
  VisibilityBuffers rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer, const std::array<float, 16>& viewProj,
                              VkExtent2D extent) override;
  void crowdBounds(float lo[3], float hi[3]) const override;
  float floorY() const override;

  // The gathered positions after the last skin() has executed (B × V × 3 floats, V = vertexCount()).
  std::vector<float> readPositions() const;

 private:
  std::string gpuStatus() const override { return {}; }  // backendStatus() is the parts'
  void arrange();  // the parts' crowds side by side, each to the right of the one before
  vk::Context& m_ctx;
  std::vector<std::unique_ptr<Scene>> m_parts;
  std::vector<int32_t> m_faces, m_parents;
  std::vector<uint32_t> m_vertexStart, m_jointStart;  // each part's first vertex (joint) in a member; then the total
  vk::Buffer m_positions, m_joints;                   // maxAvatars() members
  double m_time = 0;
  std::unique_ptr<VisibilityRaster> m_raster;
  FrameStage m_stage{Backend::Vulkan};
};

// The scene itself if it is a T, else its first part that is (a composite's), else null.
template <class T>
T* findScene(Scene* scene) {
  if (auto* t = dynamic_cast<T*>(scene)) return t;
  if (auto* composite = dynamic_cast<CompositeScene*>(scene))
    for (size_t i = 0; i < composite->partCount(); ++i)
      if (auto* t = dynamic_cast<T*>(&composite->part(i))) return t;
  return nullptr;
}

}  // namespace armature::app
