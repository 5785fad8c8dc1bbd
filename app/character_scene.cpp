#include "app/character_scene.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "app/box.h"
#include "armature/ops/joint_propagation.h"
#include "armature/ops/linear_blend_skinning.h"
#include "armature/vk/context.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/interop/interop.h"
#endif

namespace armature::app {

namespace {
constexpr uint32_t kCpuMaxAvatars = 64;  // the double reference, on the host, every frame

std::vector<float> toFloats(const std::vector<double>& v) { return {v.begin(), v.end()}; }
}  // namespace

// A device's copy of the character (its forest, influences, inverse binds and bind pose) and the work buffers of
// a crowd of up to `maxAvatars`; records the two stages.
struct CharacterScene::Rig {
  Rig(Device& device, const GltfCharacter& c, const JointForest& tree, uint32_t maxAvatars)
      : forest(device, tree),
        weights(device, c.jointCount(), c.influences, std::vector<uint32_t>(c.joints.begin(), c.joints.end()),
                c.weights),
        inverseBind(device.upload(toFloats(c.inverseBind))),
        rest(device.upload(c.vertices)),
        globals(device.allocate(ElementType::Float32, size_t(maxAvatars) * c.jointCount() * 12)),
        skinning(device.allocate(ElementType::Float32, size_t(maxAvatars) * c.jointCount() * 12)),
        scratch(device.allocate(ElementType::Float32, forest.scratchFloats(maxAvatars))) {}

  // Locals (B,J,12) → globals, skinning matrices and joint positions (B,J,3).
  void propagate(const Exec& exec, uint32_t avatars, DeviceView locals, DeviceView jointPositions) const {
    JointPropagationArgs a;
    a.forest = &forest, a.batch = avatars, a.kind = LocalTransform::Affine, a.affine = locals;
    a.inverseBind = inverseBind, a.globals = globals, a.skinning = skinning, a.positions = jointPositions;
    a.scratch = scratch;
    propagateJoints(exec, a);
  }
  void skin(const Exec& exec, uint32_t avatars, DeviceView positions) const {
    linearBlendSkinning(
        exec, {.weights = &weights, .batch = avatars, .rest = rest, .skinning = skinning, .positions = positions});
  }

  DeviceJointForest forest;
  DeviceSkinWeights weights;
  DeviceBuffer inverseBind, rest, globals, skinning, scratch;
};

// A backend's side of the frame: where the locals go and the outputs live, and how the stages are issued and timed.
class CharacterScene::Lane {
 public:
  virtual ~Lane() = default;
  virtual void skin(const std::vector<double>& locals, uint32_t avatars, VkCommandBuffer cmd, vk::GpuTimer* timer,
                    std::vector<Span>& spans) = 0;
  virtual VisibilityBuffers rasterize(VisibilityRaster& raster, uint32_t avatars, VkCommandBuffer cmd,
                                      vk::GpuTimer* timer, const std::array<float, 16>& viewProj, VkExtent2D extent,
                                      std::vector<Span>& spans) = 0;
  virtual VkBuffer positions() const = 0;
  virtual VkBuffer joints() const = 0;
  virtual std::string status() const = 0;
};

namespace {

// Vulkan: records into the frame's command buffer; the locals are host-visible (written each frame), the outputs
// device-local (a crowd's vertices are far too many to write across the bus every frame).
class VulkanLane : public CharacterScene::Lane {
 public:
  VulkanLane(vk::Context& ctx, const GltfCharacter& c, const JointForest& forest, uint32_t maxAvatars)
      : m_device(&ctx, Sharing::VulkanOnly),
        m_rig(m_device, c, forest, maxAvatars),
        m_locals(ctx, std::max<size_t>(size_t(maxAvatars) * c.jointCount() * 12, 1) * 4, vk::kStorageUsage,
                 vk::MemoryKind::HostVisible),
        m_positions(m_device.allocate(ElementType::Float32, size_t(maxAvatars) * c.vertexCount() * 3)),
        m_joints(m_device.allocate(ElementType::Float32, size_t(maxAvatars) * c.jointCount() * 3)) {}

  void skin(const std::vector<double>& locals, uint32_t avatars, VkCommandBuffer cmd, vk::GpuTimer* timer,
            std::vector<Span>&) override {
    const std::vector<float> f = toFloats(locals);
    std::memcpy(m_locals.mapped(), f.data(), f.size() * 4);
    m_rig.propagate(m_stage.begin(*m_device.vulkan(), cmd, timer, "gltf joints"), avatars,
                    DeviceView::of(m_locals, ElementType::Float32), m_joints);
    m_stage.end(cmd, timer);
    m_rig.skin(m_stage.begin(*m_device.vulkan(), cmd, timer, "gltf skinning"), avatars, m_positions);
    m_stage.end(cmd, timer);
  }
  // The CPU backend's outputs, into the buffers the renderer reads (uploaded now).
  void put(const std::vector<double>& positions, const std::vector<double>& joints) {
    const std::vector<float> p = toFloats(positions), j = toFloats(joints);
    m_positions.upload(p.data(), p.size() * 4);
    m_joints.upload(j.data(), j.size() * 4);
  }
  std::vector<float> readPositions(size_t floats) const { return m_positions.download<float>(floats); }
  VisibilityBuffers rasterize(VisibilityRaster& raster, uint32_t avatars, VkCommandBuffer cmd, vk::GpuTimer* timer,
                              const std::array<float, 16>& viewProj, VkExtent2D extent, std::vector<Span>&) override {
    m_stage.begin(*m_device.vulkan(), cmd, timer, "gltf raster");
    VisibilityBuffers out = raster.recordVulkan(cmd, m_positions.vulkanBuffer(), avatars, viewProj, extent);
    m_stage.end(cmd, timer);
    return out;
  }
  VkBuffer positions() const override { return m_positions.vulkanBuffer(); }
  VkBuffer joints() const override { return m_joints.vulkanBuffer(); }
  std::string status() const override { return "compute on " + m_device.vulkan()->info().name; }

 private:
  Device m_device;
  CharacterScene::Rig m_rig;
  vk::Buffer m_locals;
  DeviceBuffer m_positions, m_joints;
  VulkanStage m_stage;
};

#ifdef ARMATURE_HAS_INTEROP
// CUDA: its own device memory for the tables and the locals, the outputs shared with Vulkan through interop.
class CudaLane : public CharacterScene::Lane {
 public:
  CudaLane(vk::Context& ctx, const GltfCharacter& c, const JointForest& forest, uint32_t maxAvatars)
      : m_rig(m_device, c, forest, maxAvatars),
        m_jointCount(c.jointCount()),
        m_vertexCount(c.vertexCount()),
        m_locals(std::max<size_t>(size_t(maxAvatars) * c.jointCount() * 12, 1) * 4),
        m_positions(ctx, std::max<size_t>(size_t(maxAvatars) * c.vertexCount() * 3, 1) * 4),
        m_joints(ctx, std::max<size_t>(size_t(maxAvatars) * c.jointCount() * 3, 1) * 4),
        m_status("interop: " + interop::describe(interop::probe(ctx))) {}

  // The upload is stream-ordered; the stages' host waits keep the staging vector alive long enough.
  void skin(const std::vector<double>& locals, uint32_t avatars, VkCommandBuffer, vk::GpuTimer*,
            std::vector<Span>& spans) override {
    m_staging = toFloats(locals);
    m_locals.uploadAsync(m_staging.data(), m_staging.size() * 4, m_stage.stream());
    const size_t BJ = size_t(avatars) * m_jointCount;
    m_rig.propagate(m_stage.begin("gltf joints"), avatars, cudaView(m_locals.data(), BJ * 12),
                    cudaView(m_joints.cudaPointer(), BJ * 3));
    spans.push_back(m_stage.end());
    m_rig.skin(m_stage.begin("gltf skinning"), avatars,
               cudaView(m_positions.cudaPointer(), size_t(avatars) * m_vertexCount * 3));
    spans.push_back(m_stage.end({&m_positions, &m_joints}));
  }
  VisibilityBuffers rasterize(VisibilityRaster& raster, uint32_t avatars, VkCommandBuffer, vk::GpuTimer*,
                              const std::array<float, 16>& viewProj, VkExtent2D extent,
                              std::vector<Span>& spans) override {
    m_stage.begin("gltf raster");
    VisibilityBuffers out = raster.runCuda(static_cast<const float*>(m_positions.cudaPointer()), avatars, viewProj,
                                           extent, m_stage.stream());
    spans.push_back(m_stage.end());
    return out;
  }
  VkBuffer positions() const override { return m_positions.buffer(); }
  VkBuffer joints() const override { return m_joints.buffer(); }
  std::string status() const override { return m_status; }

 private:
  static DeviceView cudaView(void* p, size_t floats) { return DeviceView::ofCuda(p, ElementType::Float32, floats); }
  Device m_device{nullptr};  // CUDA's own
  CharacterScene::Rig m_rig;
  uint32_t m_jointCount, m_vertexCount;
  CudaStage m_stage;
  cuda::DeviceMemory m_locals;
  std::vector<float> m_staging;
  interop::SharedBuffer m_positions, m_joints;
  std::string m_status;
};
#endif

}  // namespace

CharacterScene::CharacterScene(vk::Context& ctx, GltfCharacter character, uint32_t maxAvatars)
    : m_ctx(ctx),
      m_character(std::move(character)),
      m_forest(m_character.parents),
      m_faces(m_character.indices.begin(), m_character.indices.end()),
      m_maxAvatars(maxAvatars) {
  ARM_CHECK(maxAvatars >= 1, "CharacterScene: maxAvatars must be >= 1");
  // The box of one member at the clip's start sets the grid's spacing and the floor.
  boxOf(poseGltfCharacterRef(m_character, m_forest, sampleGltfLocals(m_character, 0, 0), 1).vertices, m_restLo,
        m_restHi);
  m_spacing = 1.25 * std::max({double(m_restHi[0] - m_restLo[0]), double(m_restHi[2] - m_restLo[2]), 1e-3});
  m_vulkanLane = std::make_unique<VulkanLane>(ctx, m_character, m_forest, maxAvatars);
  update(0);
}

CharacterScene::~CharacterScene() = default;

void CharacterScene::setBackend(Backend b) {
  if (b == Backend::Cpu && m_avatars > kCpuMaxAvatars)
    throw Error("the CPU reference poses at most " + std::to_string(kCpuMaxAvatars) + " characters per frame");
  if (b == Backend::Cuda) {
#ifdef ARMATURE_HAS_INTEROP
    if (auto why = cuda::unavailableReason()) throw Error("CUDA backend unavailable: " + *why);
    if (!m_cudaLane) m_cudaLane = std::make_unique<CudaLane>(m_ctx, m_character, m_forest, m_maxAvatars);
#else
    throw Error("CUDA backend unavailable: this build has no CUDA (ARMATURE_CUDA=OFF)");
#endif
  }
  m_backend = b;
}

std::string CharacterScene::gpuStatus() const { return lane().status(); }

void CharacterScene::setAvatars(uint32_t count) {
  ARM_CHECK(count >= 1 && count <= m_maxAvatars, "avatars must be in [1, %u], got %u", m_maxAvatars, count);
  ARM_CHECK(m_backend != Backend::Cpu || count <= kCpuMaxAvatars, "the CPU reference poses at most %u characters",
            kCpuMaxAvatars);
  m_avatars = count;
  update(m_time);
}

void CharacterScene::setClip(uint32_t clip) {
  ARM_CHECK(clip == 0 || clip < m_character.clips.size(), "%s: clip %u of %zu", m_character.source.c_str(), clip,
            m_character.clips.size());
  m_clip = clip;
  update(m_time);
}

double CharacterScene::clipSeconds() const {
  return m_character.clips.empty() ? 0.0 : m_character.clips[m_clip].seconds;
}

void CharacterScene::update(double seconds) {
  m_time = seconds;
  const uint32_t B = m_avatars, J = m_character.jointCount();
  const double length = clipSeconds();
  const bool playing = animate && length > 0;
  const std::vector<double> still = playing ? std::vector<double>{} : sampleGltfLocals(m_character, m_clip, 0);
  std::vector<double> sampled;
  m_locals.resize(size_t(B) * J * 12);
  for (uint32_t i = 0; i < B; ++i) {
    if (playing)
      sampled =
          sampleGltfLocals(m_character, m_clip, std::fmod(std::max(seconds, 0.0) + crowdPhase(i) * length, length));
    const std::vector<double>& l = playing ? sampled : still;
    double* out = &m_locals[size_t(i) * J * 12];
    std::copy(l.begin(), l.end(), out);
    const auto [x, z] = place(i, B, m_spacing);
    for (uint32_t j = 0; j < J; ++j)  // the grid moves the roots, in the world's axes
      if (m_character.parents[j] < 0) out[j * 12 + 3] += x, out[j * 12 + 11] += z;
  }
}

CharacterScene::Lane& CharacterScene::lane() const { return m_backend == Backend::Cuda ? *m_cudaLane : *m_vulkanLane; }

VkBuffer CharacterScene::positions() const { return lane().positions(); }
VkBuffer CharacterScene::joints() const { return lane().joints(); }

void CharacterScene::skin(VkCommandBuffer cmd, vk::GpuTimer* timer) {
  m_ownTimes.clear();
  if (m_backend == Backend::Cpu) {
    const int64_t t0 = steadyNowNs();
    const GltfPoseRef posed = poseGltfCharacterRef(m_character, m_forest, m_locals, m_avatars);
    static_cast<VulkanLane&>(*m_vulkanLane).put(posed.vertices, posed.joints);
    m_ownTimes.push_back({"gltf joints + skinning (cpu)", double(steadyNowNs() - t0) * 1e-6, t0, Track::Cpu});
    return;
  }
  lane().skin(m_locals, m_avatars, cmd, timer, m_ownTimes);
}

std::vector<float> CharacterScene::readPositions() const {
  ARM_CHECK(m_backend != Backend::Cuda, "readPositions: the CUDA backend's positions live in the shared buffer");
  return static_cast<const VulkanLane&>(*m_vulkanLane).readPositions(size_t(m_avatars) * vertexCount() * 3);
}

VisibilityBuffers CharacterScene::rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer,
                                            const std::array<float, 16>& viewProj, VkExtent2D extent) {
  if (!m_raster) m_raster = std::make_unique<VisibilityRaster>(m_ctx, m_faces, vertexCount());
  return lane().rasterize(*m_raster, m_avatars, cmd, timer, viewProj, extent, m_ownTimes);
}

void CharacterScene::crowdBounds(float lo[3], float hi[3]) const {
  lo[1] = m_restLo[1], hi[1] = m_restHi[1];
  lo[0] = lo[2] = 1e30f, hi[0] = hi[2] = -1e30f;  // every member is at its own place, member 0 too
  for (uint32_t i = 0; i < m_avatars; ++i) {
    const auto [x, z] = place(i, m_avatars, m_spacing);
    lo[0] = std::min(lo[0], m_restLo[0] + float(x)), hi[0] = std::max(hi[0], m_restHi[0] + float(x));
    lo[2] = std::min(lo[2], m_restLo[2] + float(z)), hi[2] = std::max(hi[2], m_restHi[2] + float(z));
  }
}

}  // namespace armature::app
