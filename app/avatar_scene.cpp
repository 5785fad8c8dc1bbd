#include "app/avatar_scene.h"
#include <volk.h>  // the library's own Vulkan function table

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "app/box.h"
#include "app/poses.h"
#include "armature/cuda/runtime.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/gaussian_pose.h"
#include "armature/ops/joint_propagation.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/interop/interop.h"
#endif

namespace armature::app {

// A GPU backend's side of the frame: where the avatars' parameters and outputs live, and how a stage's work is
// issued and timed. The skinning and the rasteriser are then called once for either lane.
class AvatarScene::Lane {
 public:
  virtual ~Lane() = default;
  // The frame's parameters into the lane's parameter memory, before the skinning stage.
  virtual void stage(const BodyParams& params) = 0;
  // Starts stage `name` (the profiler's): where its work goes.
  virtual Exec begin(VkCommandBuffer cmd, vk::GpuTimer* timer, const char* name) = 0;
  // What a stage wrote that the frame's Vulkan passes read.
  enum class Outputs { None, Skinned /* positions() and joints() */, Texture, Field /* output(…) */ };
  // Ends the stage: its outputs readable by the frame's Vulkan passes; its time when the lane measures it itself.
  virtual std::optional<Span> end(VkCommandBuffer cmd, vk::GpuTimer* timer, Outputs outputs) = 0;
  virtual SkinningForwardArgs skinArgs(uint32_t avatars) const = 0;
  virtual VisibilityBuffers rasterize(VisibilityRaster& raster, const Exec& exec, uint32_t avatars,
                                      const std::array<float, 16>& viewProj, VkExtent2D extent) = 0;
  virtual VkBuffer positions() const = 0;
  virtual VkBuffer joints() const = 0;
  virtual std::string status() const = 0;
  virtual Skinning& skinning() = 0;  // built on first use

  // The baked-texture and field modes' side: where their ops run, avatar 0's skinned positions (V × 3 floats), the
  // per-frame inputs of the field's joints (in the lane's parameter memory), and the buffers the renderer reads (the
  // texture, the field's volume: `floats` of them, made on first use).
  virtual Backend backend() const = 0;
  virtual Device& device() = 0;
  virtual DeviceView firstPositions() const = 0;
  virtual DeviceView fieldInputs(const std::vector<float>& values) = 0;
  virtual DeviceView output(Outputs which, size_t floats) = 0;  // Texture or Field
  virtual VkBuffer outputBuffer(Outputs which) const = 0;
  std::unique_ptr<TextureBaker> baker;  // for the scene's atlas and settings, made on first use
  DeviceBuffer colours;                 // the body-part colours, (V,4)
  std::vector<float> cameras;           // the baker's, as last set
  std::unique_ptr<FieldBuffers> field;  // the field mode's, made on first use
};

// The field mode's device buffers on a lane: the field at rest, the skeleton's tables, the posed field and its grid,
// and the volume's points (cell centres in grid coordinates: (i + ½, j + ½, k + ½), x fastest).
struct AvatarScene::FieldBuffers {
  FieldBuffers(Device& device, const BodyField& field, const JointForest& skeleton, uint32_t perSide)
      : forest(device, skeleton),
        joints(device.upload(field.joints)),
        means(device.upload(field.means)),
        cholesky(device.upload(field.cholesky)),
        weights(device.upload(field.weights)),
        globals(device.allocate(ElementType::Float32, size_t(skeleton.size()) * 12)),
        skinning(device.allocate(ElementType::Float32, size_t(skeleton.size()) * 12)),
        scratch(device.allocate(ElementType::Float32, std::max<size_t>(forest.scratchFloats(1), 1))),
        posedMeans(device.allocate(ElementType::Float32, field.means.size())),
        posedCholesky(device.allocate(ElementType::Float32, field.cholesky.size())),
        grid(device.allocate(ElementType::UInt32, gaussianGridWords(perSide * perSide * perSide, field.size()))),
        resolution(perSide) {
    const uint32_t R = perSide;
    std::vector<float> centres;
    centres.reserve(size_t(R) * R * R * 3);
    for (uint32_t k = 0; k < R; ++k)
      for (uint32_t j = 0; j < R; ++j)
        for (uint32_t i = 0; i < R; ++i) centres.insert(centres.end(), {i + 0.5f, j + 0.5f, k + 0.5f});
    points = device.upload(centres);
  }
  // The posed field over the volume's points.
  GaussianFieldInputs posed(uint32_t gaussians) const {
    return {GaussianShape::Anisotropic,
            resolution * resolution * resolution,
            gaussians,
            1,
            points,
            posedMeans,
            posedCholesky,
            weights};
  }
  DeviceJointForest forest;
  DeviceBuffer joints, means, cholesky, weights, globals, skinning, scratch, posedMeans, posedCholesky, grid, points;
  uint32_t resolution;
};

namespace {
constexpr uint32_t kCpuMaxAvatars = 16;  // the double reference takes ~20 ms per avatar
template <typename T>
void put(vk::Buffer& b, const std::vector<T>& v) {
  std::vector<float> f(v.begin(), v.end());
  b.upload(f.data(), f.size() * 4);  // a copy into device memory, or straight into a host-visible buffer
}
DeviceView f32(const vk::Buffer& b) { return DeviceView::of(b, ElementType::Float32); }
// Parameters are host-visible (written every frame, and small); outputs stay in device memory, where the skinning
// writes them and the renderer reads them (a crowd's vertices are far too many to cross the bus every frame).
vk::Buffer floatBuffer(vk::Context& ctx, size_t floats, vk::MemoryKind kind, VkBufferUsageFlags extraUsage = 0) {
  return vk::Buffer(ctx, std::max<size_t>(floats, 1) * 4, vk::kStorageUsage | extraUsage, kind);
}

// Vulkan: records into the frame's command buffer, inside timer zones, over the scene's buffers.
class VulkanLane : public AvatarScene::Lane {
 public:
  VulkanLane(Device& device, const BodyModel& model, uint32_t S, uint32_t E, uint32_t maxAvatars,
             AvatarScene::LaneBuffers& buffers)
      : m_device(device), m_model(model), m_shape(S), m_expr(E), m_maxAvatars(maxAvatars), m_buffers(buffers) {}
  Skinning& skinning() override {
    if (!m_skinning)
      m_skinning = std::make_unique<Skinning>(m_device, Backend::Vulkan, m_model, m_shape, m_expr, m_maxAvatars);
    return *m_skinning;
  }
  void stage(const BodyParams& p) override {
    put(m_buffers.pose, p.pose);
    put(m_buffers.betas, p.betas);
    put(m_buffers.expression, p.expression);
    put(m_buffers.transl, p.transl);
  }
  Exec begin(VkCommandBuffer cmd, vk::GpuTimer* timer, const char* name) override {
    return m_stage.begin(*m_device.vulkan(), cmd, timer, name);
  }
  std::optional<Span> end(VkCommandBuffer cmd, vk::GpuTimer* timer, Outputs) override {
    m_stage.end(cmd, timer);
    return std::nullopt;
  }
  SkinningForwardArgs skinArgs(uint32_t avatars) const override {
    return {avatars,
            f32(m_buffers.pose),
            f32(m_buffers.betas),
            f32(m_buffers.expression),
            f32(m_buffers.transl),
            f32(m_buffers.positions),
            f32(m_buffers.joints)};
  }
  VisibilityBuffers rasterize(VisibilityRaster& raster, const Exec& exec, uint32_t avatars,
                              const std::array<float, 16>& viewProj, VkExtent2D extent) override {
    return raster.recordVulkan(exec.commandBuffer(), m_buffers.positions.handle(), avatars, viewProj, extent);
  }
  VkBuffer positions() const override { return m_buffers.positions.handle(); }
  VkBuffer joints() const override { return m_buffers.joints.handle(); }
  std::string status() const override { return "compute on " + m_device.vulkan()->info().name; }
  Backend backend() const override { return Backend::Vulkan; }
  Device& device() override { return m_device; }
  DeviceView firstPositions() const override {
    return DeviceView::of(m_buffers.positions, ElementType::Float32, size_t(m_model.vertexCount) * 3);
  }
  DeviceView fieldInputs(const std::vector<float>& values) override {
    if (m_fieldInputs.size() < values.size() * 4)
      m_fieldInputs = floatBuffer(*m_device.vulkan(), values.size(), vk::MemoryKind::HostVisible);
    m_fieldInputs.upload(values.data(), values.size() * 4);
    return DeviceView::of(m_fieldInputs, ElementType::Float32, values.size());
  }
  DeviceView output(Outputs which, size_t floats) override {
    DeviceBuffer& b = m_outputs[which == Outputs::Field];
    if (b.count() != floats) b = m_device.allocate(ElementType::Float32, floats);
    return b;
  }
  VkBuffer outputBuffer(Outputs which) const override { return m_outputs[which == Outputs::Field].vulkanBuffer(); }

 private:
  Device& m_device;
  DeviceBuffer m_outputs[2];  // the texture, the field's volume
  vk::Buffer m_fieldInputs;
  const BodyModel& m_model;
  uint32_t m_shape, m_expr, m_maxAvatars;
  std::unique_ptr<Skinning> m_skinning;
  AvatarScene::LaneBuffers& m_buffers;  // the scene's: it replaces betas and expression in place
  VulkanStage m_stage;
};

#ifdef ARMATURE_HAS_INTEROP
// CUDA: its own stream, its own parameter memory, and outputs shared with Vulkan through interop (zero-copy where
// both drive one GPU, staged otherwise).
class CudaLane : public AvatarScene::Lane {
 public:
  CudaLane(vk::Context& ctx, const BodyModel& model, uint32_t S, uint32_t E, uint32_t maxAvatars)
      : m_ctx(ctx), m_vertexCount(model.vertexCount), m_jointCount(model.jointCount), m_shape(S), m_expr(E) {
    const size_t V3 = size_t(model.vertexCount) * 3, J = model.jointCount, B = maxAvatars;
    // A frame shares L2 with the rasteriser and the renderer: a resident blend matrix would push their data out
    // to DRAM and slow the whole frame, so the viewer streams the matrix instead.
    m_skinning = std::make_unique<Skinning>(m_device, Backend::Cuda, model, S, E, maxAvatars,
                                            SkinningTuning{.l2Residency = false});
    m_params[0] = cuda::DeviceMemory(B * J * 12);
    m_params[1] = cuda::DeviceMemory(std::max<size_t>(B * S, 1) * 4);
    m_params[2] = cuda::DeviceMemory(std::max<size_t>(B * E, 1) * 4);
    m_params[3] = cuda::DeviceMemory(B * 12);
    m_positions = std::make_unique<interop::SharedBuffer>(ctx, B * V3 * 4);
    m_joints = std::make_unique<interop::SharedBuffer>(ctx, B * J * 12);
    m_status = "interop: " + interop::describe(interop::probe(ctx));
  }
  // Stream-ordered uploads: the stage's host wait keeps the staging vectors alive long enough.
  void stage(const BodyParams& p) override {
    const std::vector<double>* params[4] = {&p.pose, &p.betas, &p.expression, &p.transl};
    for (int i = 0; i < 4; ++i) {
      m_staging[i].assign(params[i]->begin(), params[i]->end());
      m_params[i].uploadAsync(m_staging[i].data(), m_staging[i].size() * 4, m_stage.stream());
    }
  }
  Exec begin(VkCommandBuffer, vk::GpuTimer*, const char* name) override { return m_stage.begin(name); }
  std::optional<Span> end(VkCommandBuffer, vk::GpuTimer*, Outputs outputs) override {
    if (outputs == Outputs::Skinned) return m_stage.end({m_positions.get(), m_joints.get()});
    if (outputs == Outputs::Texture || outputs == Outputs::Field)
      return m_stage.end({m_outputs[outputs == Outputs::Field].get()});
    return m_stage.end();
  }
  SkinningForwardArgs skinArgs(uint32_t avatars) const override {
    const auto view = [](void* p, size_t floats) { return DeviceView::ofCuda(p, ElementType::Float32, floats); };
    const size_t J3 = size_t(avatars) * m_jointCount * 3;
    return {avatars,
            view(m_params[0].data(), J3),
            view(m_params[1].data(), size_t(avatars) * m_shape),
            view(m_params[2].data(), size_t(avatars) * m_expr),
            view(m_params[3].data(), size_t(avatars) * 3),
            view(m_positions->cudaPointer(), size_t(avatars) * m_vertexCount * 3),
            view(m_joints->cudaPointer(), J3)};
  }
  VisibilityBuffers rasterize(VisibilityRaster& raster, const Exec&, uint32_t avatars,
                              const std::array<float, 16>& viewProj, VkExtent2D extent) override {
    return raster.runCuda(static_cast<const float*>(m_positions->cudaPointer()), avatars, viewProj, extent,
                          m_stage.stream());
  }
  VkBuffer positions() const override { return m_positions->buffer(); }
  VkBuffer joints() const override { return m_joints->buffer(); }
  std::string status() const override { return m_status; }
  Skinning& skinning() override { return *m_skinning; }
  Backend backend() const override { return Backend::Cuda; }
  Device& device() override { return m_device; }
  DeviceView firstPositions() const override {
    return DeviceView::ofCuda(m_positions->cudaPointer(), ElementType::Float32, size_t(m_vertexCount) * 3);
  }
  DeviceView fieldInputs(const std::vector<float>& values) override {
    if (m_fieldInputs.bytes() < values.size() * 4) m_fieldInputs = cuda::DeviceMemory(values.size() * 4);
    m_fieldStaging = values;
    m_fieldInputs.uploadAsync(m_fieldStaging.data(), values.size() * 4, m_stage.stream());
    return DeviceView::ofCuda(m_fieldInputs.data(), ElementType::Float32, values.size());
  }
  DeviceView output(Outputs which, size_t floats) override {
    std::unique_ptr<interop::SharedBuffer>& b = m_outputs[which == Outputs::Field];
    if (!b || b->size() != floats * 4) b = std::make_unique<interop::SharedBuffer>(m_ctx, floats * 4);
    return DeviceView::ofCuda(b->cudaPointer(), ElementType::Float32, floats);
  }
  VkBuffer outputBuffer(Outputs which) const override {
    const auto& b = m_outputs[which == Outputs::Field];
    return b ? b->buffer() : VK_NULL_HANDLE;
  }

 private:
  vk::Context& m_ctx;
  std::unique_ptr<Skinning> m_skinning;
  Device m_device{nullptr};  // CUDA's own; the outputs are shared with Vulkan through interop
  CudaStage m_stage;
  uint32_t m_vertexCount, m_jointCount, m_shape, m_expr;
  cuda::DeviceMemory m_params[4];  // pose, betas, expression, translation
  std::vector<float> m_staging[4], m_fieldStaging;
  cuda::DeviceMemory m_fieldInputs;
  std::string m_status;
  std::unique_ptr<interop::SharedBuffer> m_positions, m_joints, m_outputs[2];  // outputs: the texture, the volume
};
#endif
}  // namespace

AvatarScene::AvatarScene(vk::Context& ctx, BodyModel model, uint32_t maxAvatars, uint32_t S, uint32_t E)
    : m_ctx(ctx),
      m_model(std::move(model)),
      m_skeleton(m_model.parents),
      m_vkDevice(&ctx, Sharing::VulkanOnly),
      m_maxAvatars(maxAvatars),
      m_shape(std::min(S, m_model.shapeCount)),
      m_expr(std::min(E, m_model.exprCount)) {
  ARM_CHECK(maxAvatars >= 1, "AvatarScene: maxAvatars must be >= 1");
  m_base = BodyParams::zeros(m_model, 1, m_shape, m_expr);
  size_t V3 = size_t(m_model.vertexCount) * 3, J = m_model.jointCount, B = maxAvatars;
  m_buffers.pose = floatBuffer(ctx, B * J * 3, vk::MemoryKind::HostVisible);
  m_buffers.transl = floatBuffer(ctx, B * 3, vk::MemoryKind::HostVisible);
  m_buffers.joints = floatBuffer(ctx, B * J * 3, vk::MemoryKind::DeviceLocal);
  m_buffers.positions = floatBuffer(ctx, B * V3, vk::MemoryKind::DeviceLocal, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT);
  setComponentCounts(m_shape, m_expr);
  float lo[3], hi[3];
  bounds(lo, hi);
  m_floorY = lo[1];
  update(0);
}

AvatarScene::~AvatarScene() = default;

void AvatarScene::applyPose(const BodyParams& p) {
  ARM_CHECK(p.pose.size() == m_base.pose.size(), "applyPose: the pose has %zu values, the scene %zu", p.pose.size(),
            m_base.pose.size());
  m_base.pose = p.pose;
  m_base.transl = p.transl;
  std::fill(m_base.betas.begin(), m_base.betas.end(), 0.0);
  std::fill(m_base.expression.begin(), m_base.expression.end(), 0.0);
  for (uint32_t k = 0; k < std::min(p.shapeComponents, m_shape); ++k) m_base.betas[k] = p.betas[k];
  for (uint32_t k = 0; k < std::min(p.exprComponents, m_expr); ++k) m_base.expression[k] = p.expression[k];
  update(m_time);
}

void AvatarScene::setComponentCounts(uint32_t S, uint32_t E) {
  ARM_CHECK(S <= m_model.shapeCount && E <= m_model.exprCount, "the model has %u shape and %u expression components",
            m_model.shapeCount, m_model.exprCount);
  vkDeviceWaitIdle(m_ctx.device());  // the old tables may still be in use
  BodyParams old = m_base;
  m_shape = S, m_expr = E;
  m_base = BodyParams::zeros(m_model, 1, S, E);
  if (!old.pose.empty()) applyPose(old);
  m_buffers.betas = floatBuffer(m_ctx, size_t(m_maxAvatars) * S, vk::MemoryKind::HostVisible);
  m_buffers.expression = floatBuffer(m_ctx, size_t(m_maxAvatars) * E, vk::MemoryKind::HostVisible);
  // The skinning tables follow the component counts: the lanes are rebuilt (CUDA's at once, as it was in use).
  const bool hadCuda = m_cudaLane != nullptr;
  m_cudaLane.reset();
  m_vulkanLane = std::make_unique<VulkanLane>(m_vkDevice, m_model, S, E, m_maxAvatars, m_buffers);
  if (hadCuda) setBackend(Backend::Cuda);
  update(m_time);
}

void AvatarScene::bounds(float lo[3], float hi[3]) const { boxOf(m_model.vTemplate, lo, hi); }

void AvatarScene::crowdBounds(float lo[3], float hi[3]) const {
  float restLo[3], restHi[3];
  bounds(restLo, restHi);
  for (int k = 0; k < 3; ++k) lo[k] = 1e9f, hi[k] = -1e9f;
  for (uint32_t i = 0; i < m_avatars; ++i)
    for (size_t k = 0; k < 3; ++k) {
      const float shift = float(m_params.transl[i * 3 + k] - m_base.transl[k]);
      lo[k] = std::min(lo[k], restLo[k] + shift), hi[k] = std::max(hi[k], restHi[k] + shift);
    }
}

void AvatarScene::setBackend(Backend b) {
  if (b == Backend::Cpu && m_avatars > kCpuMaxAvatars)
    throw Error("the CPU reference skins at most " + std::to_string(kCpuMaxAvatars) + " avatars per frame");
  if (b == Backend::Cuda) {
#ifdef ARMATURE_HAS_INTEROP
    if (auto why = cuda::unavailableReason()) throw Error("CUDA backend unavailable: " + *why);
    if (!m_cudaLane) m_cudaLane = std::make_unique<CudaLane>(m_ctx, m_model, m_shape, m_expr, m_maxAvatars);
#else
    throw Error("CUDA backend unavailable: this build has no CUDA (ARMATURE_CUDA=OFF)");
#endif
  }
  if (b == Backend::Vulkan) m_vulkanLane->skinning();  // the tables now: a failure is this call's
  m_backend = b;
}

std::string AvatarScene::gpuStatus() const { return lane().status(); }

void AvatarScene::setAvatars(uint32_t count) {
  ARM_CHECK(count >= 1 && count <= m_maxAvatars, "avatars must be in [1, %u], got %u", m_maxAvatars, count);
  ARM_CHECK(m_backend != Backend::Cpu || count <= kCpuMaxAvatars, "the CPU reference skins at most %u avatars",
            kCpuMaxAvatars);
  m_avatars = count;
  update(m_time);
}

void AvatarScene::setMotion(Motion motion) {
  ARM_CHECK(motion.jointCount == m_model.jointCount, "setMotion: the motion has %u joints, the model %u",
            motion.jointCount, m_model.jointCount);
  m_motion = yUp(motion);
  update(m_time);
}

void AvatarScene::clearMotion() {
  m_motion = Motion{};
  update(m_time);
}

double AvatarScene::clipSeconds() const { return m_motion.frames ? m_motion.frames / m_motion.fps : 0.0; }

void AvatarScene::update(double seconds) {
  m_time = seconds;
  uint32_t B = m_avatars, J = m_model.jointCount;
  m_params = BodyParams::zeros(m_model, B, m_shape, m_expr);
  for (uint32_t i = 0; i < B; ++i) {
    std::copy(m_base.pose.begin(), m_base.pose.end(), m_params.pose.begin() + long(i) * J * 3);
    double motionOffset[3] = {0, 0, 0};
    if (m_motion.frames) {
      const double phase = crowdPhase(i) * clipSeconds();
      const double at = std::fmod(std::max(seconds, 0.0) + phase, clipSeconds());
      const size_t f = std::min<size_t>(size_t(at * m_motion.fps), m_motion.frames - 1);
      std::copy_n(m_motion.pose.begin() + long(f * J * 3), J * 3, m_params.pose.begin() + long(i) * J * 3);
      for (int c = 0; c < 3; ++c) motionOffset[c] = m_motion.transl[f * 3 + size_t(c)] - m_motion.transl[size_t(c)];
    } else if (animate) {
      walkCycle(m_model, seconds * 1.2 + i * 0.37, m_params.pose.data() + size_t(i) * J * 3);
    }
    for (uint32_t k = 0; k < m_shape; ++k) {
      // Crowd members get their own shape: a fixed pseudo-random offset per avatar.
      double jitter = i == 0 ? 0.0 : std::sin(12.9898 * (i + 1) + 78.233 * (k + 1)) * (k < 3 ? 1.5 : 0.8);
      m_params.betas[i * m_shape + k] = m_base.betas[k] + jitter;
    }
    for (uint32_t k = 0; k < m_expr; ++k) m_params.expression[i * m_expr + k] = m_base.expression[k];
    const auto [x, z] = place(i, B, 1.1);
    m_params.transl[i * 3] = m_base.transl[0] + x + motionOffset[0];
    m_params.transl[i * 3 + 1] = m_base.transl[1] + motionOffset[1];
    m_params.transl[i * 3 + 2] = m_base.transl[2] + z + motionOffset[2];
  }
}

VkBuffer AvatarScene::positions() const { return lane().positions(); }

VkBuffer AvatarScene::joints() const { return lane().joints(); }

// The backend's lane; the CPU reference writes the Vulkan lane's output buffers, so its frames use that lane.
AvatarScene::Lane& AvatarScene::lane() const { return m_backend == Backend::Cuda ? *m_cudaLane : *m_vulkanLane; }

std::vector<float> AvatarScene::readPositions() const {
  ARM_CHECK(m_backend != Backend::Cuda, "readPositions: the CUDA backend's positions live in the shared buffer");
  return m_buffers.positions.download<float>(size_t(m_avatars) * m_model.vertexCount * 3);
}

void AvatarScene::skin(VkCommandBuffer cmd, vk::GpuTimer* timer) {
  m_ownTimes.clear();
  if (m_backend == Backend::Cpu) {  // the reference, into the buffers the renderer draws from
    const int64_t t0 = steadyNowNs();
    BodyOutput out = bodyForwardRef(m_model, m_params);
    put(m_buffers.positions, out.vertices);
    put(m_buffers.joints, out.joints);
    m_ownTimes.push_back({"skinning (cpu)", double(steadyNowNs() - t0) * 1e-6, t0, Track::Cpu});
  } else {
    Lane& gpu = lane();
    gpu.stage(m_params);
    const Exec exec = gpu.begin(cmd, timer, "skinning");
    gpu.skinning().forward(exec, gpu.skinArgs(m_avatars));
    if (auto span = gpu.end(cmd, timer, Lane::Outputs::Skinned)) m_ownTimes.push_back(*span);
  }
  if (m_bake) bakeTexture(lane(), cmd, timer);
  if (m_field) evaluateField(lane(), cmd, timer);
}

void AvatarScene::setBake(std::optional<BakeSettings> settings) {
  std::unique_ptr<UvAtlas> atlas;
  if (settings) {  // checked, and the atlas made, before anything changes: a refused setting leaves the mode as it was
    checkBakeDesc({.texels = settings->textureSize * settings->textureSize,
                   .views = settings->views,
                   .width = settings->viewSize,
                   .height = settings->viewSize,
                   .vertexCount = m_model.vertexCount,
                   .faceCount = m_model.faceCount});
    if (!m_atlas || m_atlas->size != settings->textureSize) {  // the atlas follows the rest shape, not the pose
      const std::vector<float> rest(m_model.vTemplate.begin(), m_model.vTemplate.end());
      atlas = std::make_unique<UvAtlas>(makeUvAtlas(rest, m_model.faces, settings->textureSize));
    }
  }
  vkDeviceWaitIdle(m_ctx.device());  // the old texture and (u, v) may still be drawn
  if (atlas) {
    m_uvs = vk::makeStorageBuffer<float>(m_ctx, atlas->uvs);
    m_atlas = std::move(atlas);
  }
  for (Lane* gpu : {m_vulkanLane.get(), m_cudaLane.get()})
    if (gpu) gpu->baker.reset(), gpu->cameras.clear();
  m_bake = settings;
}

SurfaceTexture AvatarScene::texture() const {
  if (!m_bake) return {};
  return {m_uvs.handle(), lane().outputBuffer(Lane::Outputs::Texture), m_bake->textureSize};
}

void AvatarScene::bakeTexture(Lane& gpu, VkCommandBuffer cmd, vk::GpuTimer* timer) {
  if (!gpu.baker) {
    TextureBaker::Settings settings;
    settings.views = m_bake->views, settings.width = settings.height = m_bake->viewSize, settings.channels = 4;
    gpu.baker = std::make_unique<TextureBaker>(gpu.device(), gpu.backend(), *m_atlas, m_model.faces,
                                               m_model.vertexCount, settings);
    gpu.colours = gpu.device().upload(bodyPartColours(m_model));
  }
  // The cameras frame avatar 0's rest box where it stands (the pose moves limbs, not the box's centre, much).
  float lo[3], hi[3];
  bounds(lo, hi);
  for (size_t k = 0; k < 3; ++k) {
    const float shift = float(m_params.transl[k]);
    lo[k] += shift, hi[k] += shift;
  }
  std::vector<float> cameras = bakeRingCameras(m_bake->views, lo, hi);
  if (cameras != gpu.cameras) gpu.baker->setCameras(cameras), gpu.cameras = std::move(cameras);
  const DeviceView positions = gpu.firstPositions();
  const DeviceView texture = gpu.output(Lane::Outputs::Texture, size_t(m_bake->textureSize) * m_bake->textureSize * 4);
  auto stage = [&](const char* name, Lane::Outputs outputs, auto&& work) {
    work(gpu.begin(cmd, timer, name));
    if (auto span = gpu.end(cmd, timer, outputs)) m_ownTimes.push_back(*span);
  };
  stage("bake views", Lane::Outputs::None, [&](const Exec& e) { gpu.baker->renderViews(e, positions, gpu.colours); });
  stage("bake samples", Lane::Outputs::None, [&](const Exec& e) { gpu.baker->samples(e, positions); });
  stage("bake aggregate", Lane::Outputs::Texture, [&](const Exec& e) { gpu.baker->aggregate(e, texture); });
}

void AvatarScene::setField(std::optional<BodyField> field, FieldSettings settings) {
  if (field) {
    ARM_CHECK(settings.resolution >= 4 && settings.resolution <= 256, "the field's volume: resolution %u, not 4 … 256",
              settings.resolution);
    ARM_CHECK(settings.epsilon > 0 && settings.density >= 0, "the field: epsilon must be > 0 and density >= 0");
    ARM_CHECK(field->size() >= 1 && field->means.size() == size_t(field->size()) * 3 &&
                  field->cholesky.size() == size_t(field->size()) * 6 && field->weights.size() == field->size(),
              "the field: means (N,3), cholesky (N,6), weights (N,1) and joints (N) disagree");
    for (int32_t j : field->joints)
      ARM_CHECK(j >= 0 && uint32_t(j) < m_model.jointCount, "the field: a Gaussian follows joint %d of %u", j,
                m_model.jointCount);
  }
  vkDeviceWaitIdle(m_ctx.device());  // the old volume may still be drawn
  for (Lane* gpu : {m_vulkanLane.get(), m_cudaLane.get()})
    if (gpu) gpu->field.reset();
  m_field = std::move(field);
  m_fieldSettings = settings;
  m_fieldShape.clear();  // the rest joints and reach follow the field
}

FieldVolume AvatarScene::volume() const {
  if (!m_field) return {};
  FieldVolume v{lane().outputBuffer(Lane::Outputs::Field), m_fieldSettings.resolution, {}, {}, m_fieldSettings.density};
  std::copy_n(m_fieldLo, 3, v.lo), std::copy_n(m_fieldHi, 3, v.hi);
  return v;
}

void AvatarScene::evaluateField(Lane& gpu, VkCommandBuffer cmd, vk::GpuTimer* timer) {
  const BodyField& field = *m_field;
  const uint32_t J = m_model.jointCount, N = field.size(), R = m_fieldSettings.resolution;
  // Avatar 0's rest joints follow its shape; the field's reach around each joint follows them.
  std::vector<double> shape(m_params.betas.begin(), m_params.betas.begin() + m_shape);
  shape.insert(shape.end(), m_params.expression.begin(), m_params.expression.begin() + m_expr);
  if (shape != m_fieldShape) {
    m_fieldRestJoints =
        regressJoints(m_model, shapedVertices(m_model, shape.data(), m_shape, shape.data() + m_shape, m_expr));
    m_fieldReach = fieldReach(field, m_fieldRestJoints, m_fieldSettings.epsilon);
    m_fieldShape = std::move(shape);
  }
  const FieldJoints joints =
      fieldJoints(m_model, m_skeleton, m_params.pose.data(), m_fieldRestJoints, m_params.transl.data());
  fieldBox(m_fieldReach, joints.posed, m_fieldLo, m_fieldHi);
  // The field is posed straight into the volume's grid coordinates (cell k's centre at k + ½): the points stay put.
  std::array<float, 12> toGrid{};
  for (int k = 0; k < 3; ++k) {
    const float scale = float(R) / (m_fieldHi[k] - m_fieldLo[k]);
    toGrid[size_t(k) * 5] = scale, toGrid[size_t(k) * 4 + 3] = -m_fieldLo[k] * scale;
  }
  if (!gpu.field) gpu.field = std::make_unique<FieldBuffers>(gpu.device(), field, m_skeleton, R);
  FieldBuffers& f = *gpu.field;
  const size_t bindBinds = bindableFloats(size_t(J) * 12);
  std::vector<float> inputs(bindBinds + size_t(J) * 12);
  std::copy(joints.locals.begin(), joints.locals.end(), inputs.begin());
  std::copy(joints.inverseBinds.begin(), joints.inverseBinds.end(), inputs.begin() + long(bindBinds));
  const DeviceView in = gpu.fieldInputs(inputs);
  const DeviceView volume = gpu.output(Lane::Outputs::Field, size_t(R) * R * R);
  auto stage = [&](const char* name, Lane::Outputs outputs, auto&& work) {
    work(gpu.begin(cmd, timer, name));
    if (auto span = gpu.end(cmd, timer, outputs)) m_ownTimes.push_back(*span);
  };
  stage("field pose", Lane::Outputs::None, [&](const Exec& e) {
    JointPropagationArgs a;
    a.forest = &f.forest, a.kind = LocalTransform::Affine;
    a.affine = in.slice(0, size_t(J) * 12), a.inverseBind = in.slice(bindBinds, size_t(J) * 12);
    a.globals = f.globals, a.skinning = f.skinning, a.scratch = f.scratch;
    propagateJoints(e, a);
    e.barrier();
    poseGaussians(e, {.gaussians = N,
                      .joints = J,
                      .transforms = f.skinning,
                      .gaussianJoints = f.joints,
                      .means = f.means,
                      .cholesky = f.cholesky,
                      .post = toGrid,
                      .posedMeans = f.posedMeans,
                      .posedCholesky = f.posedCholesky});
  });
  stage("field grid", Lane::Outputs::None, [&](const Exec& e) {
    buildGaussianGrid(e, {.in = f.posed(N), .epsilon = m_fieldSettings.epsilon, .grid = f.grid});
  });
  stage("field eval", Lane::Outputs::Field,
        [&](const Exec& e) { gaussianField(e, {.in = f.posed(N), .field = volume, .grid = f.grid}); });
}

VisibilityBuffers AvatarScene::rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer,
                                         const std::array<float, 16>& viewProj, VkExtent2D extent) {
  if (!m_raster) m_raster = std::make_unique<VisibilityRaster>(m_ctx, m_model.faces, m_model.vertexCount);
  Lane& gpu = lane();
  const Exec exec = gpu.begin(cmd, timer, "raster");
  VisibilityBuffers out = gpu.rasterize(*m_raster, exec, m_avatars, viewProj, extent);
  if (auto span = gpu.end(cmd, timer, Lane::Outputs::None)) m_ownTimes.push_back(*span);
  return out;
}

}  // namespace armature::app
