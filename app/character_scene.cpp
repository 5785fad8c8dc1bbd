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

// A backend's side of the frame: the device the locals and outputs live on, and how the stages are issued and
// timed. The CUDA lane's device shares its outputs with Vulkan (Sharing::CudaToVulkan).
class CharacterScene::Lane {
 public:
  Lane(vk::Context& ctx, Device& device, Backend backend, const GltfCharacter& c, const JointForest& forest,
       uint32_t maxAvatars, std::string describe)
      : status(std::move(describe)),
        positions(device.allocate(ElementType::Float32, size_t(maxAvatars) * c.vertexCount() * 3)),
        joints(device.allocate(ElementType::Float32, size_t(maxAvatars) * c.jointCount() * 3)),
        m_ctx(ctx),
        m_rig(device, c, forest, maxAvatars),
        m_locals(device.allocate(ElementType::Float32, size_t(maxAvatars) * c.jointCount() * 12)),
        m_jointCount(c.jointCount()),
        m_vertexCount(c.vertexCount()),
        m_stage(backend) {}

  void skin(const std::vector<double>& locals, uint32_t avatars, VkCommandBuffer cmd, vk::GpuTimer* timer,
            std::vector<Span>& spans) {
    const size_t BJ = size_t(avatars) * m_jointCount;
    const std::vector<float> f = toFloats(locals);
    const Exec exec = m_stage.begin(m_ctx, cmd, timer, "gltf joints");
    m_locals.upload(exec, f.data(), f.size() * 4);
    m_rig.propagate(exec, avatars, m_locals.view().slice(0, BJ * 12), joints.view().slice(0, BJ * 3));
    if (auto span = m_stage.end(cmd, timer)) spans.push_back(*span);
    m_rig.skin(m_stage.begin(m_ctx, cmd, timer, "gltf skinning"), avatars,
               positions.view().slice(0, size_t(avatars) * m_vertexCount * 3));
    if (auto span = m_stage.end(cmd, timer, {&positions, &joints})) spans.push_back(*span);
  }
  VisibilityBuffers rasterize(VisibilityRaster& raster, uint32_t avatars, VkCommandBuffer cmd, vk::GpuTimer* timer,
                              const std::array<float, 16>& viewProj, VkExtent2D extent, std::vector<Span>& spans) {
    VisibilityBuffers out =
        raster.record(m_stage.begin(m_ctx, cmd, timer, "gltf raster"), positions, avatars, viewProj, extent);
    if (auto span = m_stage.end(cmd, timer)) spans.push_back(*span);
    return out;
  }

  const std::string status;
  DeviceBuffer positions, joints;

 private:
  vk::Context& m_ctx;
  CharacterScene::Rig m_rig;
  DeviceBuffer m_locals;
  uint32_t m_jointCount, m_vertexCount;
  FrameStage m_stage;
};

CharacterScene::CharacterScene(vk::Context& ctx, GltfCharacter character, uint32_t maxAvatars)
    : m_ctx(ctx),
      m_character(std::move(character)),
      m_forest(m_character.parents),
      m_faces(m_character.indices.begin(), m_character.indices.end()),
      m_maxAvatars(maxAvatars),
      m_vkDevice(&ctx, Sharing::VulkanOnly) {
  ARM_CHECK(maxAvatars >= 1, "CharacterScene: maxAvatars must be >= 1");
  // The box of one member at the clip's start sets the grid's spacing and the floor.
  boxOf(poseGltfCharacterRef(m_character, m_forest, sampleGltfLocals(m_character, 0, 0), 1).vertices, m_restLo,
        m_restHi);
  m_spacing = 1.25 * std::max({double(m_restHi[0] - m_restLo[0]), double(m_restHi[2] - m_restLo[2]), 1e-3});
  m_vulkanLane = std::make_unique<Lane>(ctx, m_vkDevice, Backend::Vulkan, m_character, m_forest, maxAvatars,
                                        "compute on " + ctx.info().name);
  update(0);
}

CharacterScene::~CharacterScene() = default;

void CharacterScene::setBackend(Backend b) {
  if (b == Backend::Cpu && m_avatars > kCpuMaxAvatars)
    throw Error("the CPU reference poses at most " + std::to_string(kCpuMaxAvatars) + " characters per frame");
  if (b == Backend::Cuda) {
#ifdef ARMATURE_HAS_INTEROP
    if (auto why = cuda::unavailableReason()) throw Error("CUDA backend unavailable: " + *why);
    if (!m_cudaDevice) m_cudaDevice = std::make_unique<Device>(&m_ctx, Sharing::CudaToVulkan);
    m_cudaDevice->require(Backend::Cuda);
    if (!m_cudaLane)
      m_cudaLane = std::make_unique<Lane>(m_ctx, *m_cudaDevice, Backend::Cuda, m_character, m_forest, m_maxAvatars,
                                          "interop: " + interop::describe(interop::probe(m_ctx)));
#else
    throw Error("CUDA backend unavailable: this build has no CUDA (ARMATURE_CUDA=OFF)");
#endif
  }
  m_backend = b;
}

std::string CharacterScene::gpuStatus() const { return lane().status; }

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

VkBuffer CharacterScene::positions() const { return lane().positions.vulkanBuffer(); }
VkBuffer CharacterScene::joints() const { return lane().joints.vulkanBuffer(); }

void CharacterScene::skin(VkCommandBuffer cmd, vk::GpuTimer* timer) {
  m_ownTimes.clear();
  if (m_backend == Backend::Cpu) {
    const int64_t t0 = steadyNowNs();
    const GltfPoseRef posed = poseGltfCharacterRef(m_character, m_forest, m_locals, m_avatars);
    uploadFloats(m_vulkanLane->positions, posed.vertices);
    uploadFloats(m_vulkanLane->joints, posed.joints);
    m_ownTimes.push_back({"gltf joints + skinning (cpu)", double(steadyNowNs() - t0) * 1e-6, t0, Track::Cpu});
    return;
  }
  lane().skin(m_locals, m_avatars, cmd, timer, m_ownTimes);
}

std::vector<float> CharacterScene::readPositions() const {
  return lane().positions.download<float>(size_t(m_avatars) * vertexCount() * 3);
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
