#include "app/avatar_scene.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "app/poses.h"
#include "armature/cuda/runtime.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/interop/interop.h"
#endif

namespace armature::app {

struct AvatarScene::CudaPath {
#ifdef ARMATURE_HAS_INTEROP
  Device device{nullptr};  // CUDA's own; the outputs are shared with Vulkan through interop
  cuda::Stream stream;
  std::unique_ptr<Skinning> skin;
  cuda::DeviceMemory pose, betas, expression, transl;
  std::vector<float> staging[4];  // float parameters for the stream-ordered uploads, reused every frame
  cuda::EventTimer timer, rasterTimer;
  std::unique_ptr<interop::SharedBuffer> positions, joints;  // drawn by Vulkan straight from CUDA's output
  std::string status;
#endif
};

namespace {
constexpr uint32_t kCpuMaxAvatars = 16;  // the double reference takes ~20 ms per avatar
template <typename T>
void put(vk::Buffer& b, const std::vector<T>& v) {
  std::vector<float> f(v.begin(), v.end());
  if (!f.empty()) std::memcpy(b.mapped(), f.data(), f.size() * 4);
}
}  // namespace

AvatarScene::AvatarScene(vk::Context& ctx, BodyModel model, uint32_t maxAvatars, uint32_t S, uint32_t E)
    : m_ctx(ctx),
      m_model(std::move(model)),
      m_vkDevice(&ctx, Sharing::VulkanOnly),
      m_maxAvatars(maxAvatars),
      m_shape(std::min(S, m_model.shapeCount)),
      m_expr(std::min(E, m_model.exprCount)) {
  ARM_CHECK(maxAvatars >= 1, "AvatarScene: maxAvatars must be >= 1");
  m_base = BodyParams::zeros(m_model, 1, m_shape, m_expr);
  size_t V3 = size_t(m_model.vertexCount) * 3, J = m_model.jointCount, B = maxAvatars;
  auto host = [&](size_t floats) {
    return vk::Buffer(ctx, std::max<size_t>(floats, 1) * 4, vk::kStorageUsage, vk::MemoryKind::HostVisible);
  };
  m_pose = host(B * J * 3);
  m_transl = host(B * 3);
  // Host-visible: the CPU backend writes it directly; the Vulkan backend's writes are tiny.
  m_joints = vk::Buffer(ctx, B * J * 12, vk::kStorageUsage, vk::MemoryKind::HostVisible);
  m_positions =
      vk::Buffer(ctx, B * V3 * 4, vk::kStorageUsage | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT, vk::MemoryKind::HostVisible);
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
  auto host = [&](size_t floats) {
    return vk::Buffer(m_ctx, std::max<size_t>(floats, 1) * 4, vk::kStorageUsage, vk::MemoryKind::HostVisible);
  };
  m_betas = host(size_t(m_maxAvatars) * S);
  m_expression = host(size_t(m_maxAvatars) * E);
  m_vkSkin.reset();  // built on first use by the Vulkan backend
  bool hadCuda = m_cuda != nullptr;
  m_cuda.reset();
  if (hadCuda) setBackend(Backend::Cuda);
  update(m_time);
}

void AvatarScene::bounds(float lo[3], float hi[3]) const {
  for (int k = 0; k < 3; ++k) lo[k] = 1e9f, hi[k] = -1e9f;
  for (size_t v = 0; v < m_model.vertexCount; ++v)
    for (int k = 0; k < 3; ++k) {
      float x = float(m_model.vTemplate[v * 3 + size_t(k)]);
      lo[k] = std::min(lo[k], x), hi[k] = std::max(hi[k], x);
    }
}

void AvatarScene::setBackend(Backend b) {
  if (b == Backend::Vulkan && !m_vkSkin)
    m_vkSkin = std::make_unique<Skinning>(m_vkDevice, Backend::Vulkan, m_model, m_shape, m_expr, m_maxAvatars);
  if (b == Backend::Cpu && m_avatars > kCpuMaxAvatars)
    throw Error("the CPU reference skins at most " + std::to_string(kCpuMaxAvatars) + " avatars per frame");
  if (b == Backend::Cuda) {
#ifdef ARMATURE_HAS_INTEROP
    if (auto why = cuda::unavailableReason()) throw Error("CUDA backend unavailable: " + *why);
    if (!m_cuda) {
      auto c = std::make_unique<CudaPath>();
      size_t V3 = size_t(m_model.vertexCount) * 3, J = m_model.jointCount, B = m_maxAvatars;
      // A frame shares L2 with the rasteriser and the renderer: a resident blend matrix would push their data out
      // to DRAM and slow the whole frame, so the viewer streams the matrix instead.
      c->skin = std::make_unique<Skinning>(c->device, Backend::Cuda, m_model, m_shape, m_expr, m_maxAvatars,
                                           SkinningTuning{.l2Residency = false});
      c->pose = cuda::DeviceMemory(B * J * 12);
      c->betas = cuda::DeviceMemory(std::max<size_t>(B * m_shape, 1) * 4);
      c->expression = cuda::DeviceMemory(std::max<size_t>(B * m_expr, 1) * 4);
      c->transl = cuda::DeviceMemory(B * 12);
      c->positions = std::make_unique<interop::SharedBuffer>(m_ctx, B * V3 * 4);
      c->joints = std::make_unique<interop::SharedBuffer>(m_ctx, B * J * 12);
      c->status = interop::describe(interop::probe(m_ctx));
      m_cuda = std::move(c);
    }
#else
    throw Error("CUDA backend unavailable: this build has no CUDA (ARMATURE_CUDA=OFF)");
#endif
  }
  m_backend = b;
}

std::string AvatarScene::backendStatus() const {
  std::string s = backendName(m_backend);
#ifdef ARMATURE_HAS_INTEROP
  if (m_backend == Backend::Cuda && m_cuda) s += ", interop: " + m_cuda->status;
#endif
  if (m_backend == Backend::Vulkan) s += " compute on " + m_ctx.info().name;
  if (m_backend == Backend::Cpu) s += " reference (double)";
  return s;
}

void AvatarScene::setAvatars(uint32_t count) {
  ARM_CHECK(count >= 1 && count <= m_maxAvatars, "avatars must be in [1, %u], got %u", m_maxAvatars, count);
  ARM_CHECK(m_backend != Backend::Cpu || count <= kCpuMaxAvatars, "the CPU reference skins at most %u avatars",
            kCpuMaxAvatars);
  m_avatars = count;
  update(m_time);
}

void AvatarScene::update(double seconds) {
  m_time = seconds;
  uint32_t B = m_avatars, J = m_model.jointCount;
  m_params = BodyParams::zeros(m_model, B, m_shape, m_expr);
  uint32_t columns = uint32_t(std::ceil(std::sqrt(double(B))));
  for (uint32_t i = 0; i < B; ++i) {
    std::copy(m_base.pose.begin(), m_base.pose.end(), m_params.pose.begin() + long(i) * J * 3);
    if (animate) walkCycle(m_model, seconds * 1.2 + i * 0.37, m_params.pose.data() + size_t(i) * J * 3);
    for (uint32_t k = 0; k < m_shape; ++k) {
      // Crowd members get their own shape: a fixed pseudo-random offset per avatar.
      double jitter = i == 0 ? 0.0 : std::sin(12.9898 * (i + 1) + 78.233 * (k + 1)) * (k < 3 ? 1.5 : 0.8);
      m_params.betas[i * m_shape + k] = m_base.betas[k] + jitter;
    }
    for (uint32_t k = 0; k < m_expr; ++k) m_params.expression[i * m_expr + k] = m_base.expression[k];
    double x = (double(i % columns) - (columns - 1) / 2.0) * 1.1, z = -(double(i / columns)) * 1.1;
    m_params.transl[i * 3] = m_base.transl[0] + x;
    m_params.transl[i * 3 + 1] = m_base.transl[1];
    m_params.transl[i * 3 + 2] = m_base.transl[2] + z;
  }
}

VkBuffer AvatarScene::positions() const {
#ifdef ARMATURE_HAS_INTEROP
  if (m_backend == Backend::Cuda) return m_cuda->positions->buffer();
#endif
  return m_positions.handle();
}

VkBuffer AvatarScene::joints() const {
#ifdef ARMATURE_HAS_INTEROP
  if (m_backend == Backend::Cuda) return m_cuda->joints->buffer();
#endif
  return m_joints.handle();
}

std::vector<float> AvatarScene::readPositions() const {
  ARM_CHECK(m_backend != Backend::Cuda, "readPositions: the CUDA backend's positions live in the shared buffer");
  return m_positions.download<float>(size_t(m_avatars) * m_model.vertexCount * 3);
}

void AvatarScene::skin(VkCommandBuffer cmd, vk::GpuTimer* timer) {
  uint32_t B = m_avatars;
  m_ownTimes.clear();
  const int64_t t0 = steadyNowNs();
  if (m_backend == Backend::Vulkan) {
    put(m_pose, m_params.pose);
    put(m_betas, m_params.betas);
    put(m_expression, m_params.expression);
    put(m_transl, m_params.transl);
    if (!m_vkSkin) setBackend(Backend::Vulkan);
    uint32_t zone = timer ? timer->beginZone(cmd, "skinning") : 0;
    const auto f32 = [](const vk::Buffer& b) { return DeviceView::of(b, ElementType::Float32); };
    m_vkSkin->forward(Exec::vulkan(m_ctx, cmd), {B, f32(m_pose), f32(m_betas), f32(m_expression), f32(m_transl),
                                                 f32(m_positions), f32(m_joints)});
    if (timer) timer->endZone(cmd, zone);
    vk::computeBarrier(cmd);
    return;
  }
  if (m_backend == Backend::Cpu) {
    BodyOutput out = bodyForwardRef(m_model, m_params);
    put(m_positions, out.vertices);
    put(m_joints, out.joints);
  }
#ifdef ARMATURE_HAS_INTEROP
  if (m_backend == Backend::Cuda) {
    auto& c = *m_cuda;
    // Stream-ordered uploads: the frame's one host wait is the stream sync below, which also keeps the staging
    // vectors alive long enough.
    const std::vector<double>* params[4] = {&m_params.pose, &m_params.betas, &m_params.expression, &m_params.transl};
    cuda::DeviceMemory* targets[4] = {&c.pose, &c.betas, &c.expression, &c.transl};
    for (int i = 0; i < 4; ++i) {
      c.staging[i].assign(params[i]->begin(), params[i]->end());
      targets[i]->uploadAsync(c.staging[i].data(), c.staging[i].size() * 4, c.stream);
    }
    c.timer.start(c.stream);
    const auto f32 = [](void* p, size_t floats) { return DeviceView::ofCuda(p, ElementType::Float32, floats); };
    const size_t J3 = size_t(B) * m_model.jointCount * 3;
    c.skin->forward(
        Exec::cuda(c.stream.handle()),
        {B, f32(c.pose.data(), J3), f32(c.betas.data(), size_t(B) * m_shape),
         f32(c.expression.data(), size_t(B) * m_expr), f32(c.transl.data(), size_t(B) * 3),
         f32(c.positions->cudaPointer(), size_t(B) * m_model.vertexCount * 3), f32(c.joints->cudaPointer(), J3)});
    c.timer.stop(c.stream);
    c.positions->toVulkan(c.stream);
    c.joints->toVulkan(c.stream);
    // Headless/simple path: the host waits for CUDA before the draw is submitted (FrameRing avoids this).
    c.stream.synchronize();
    m_ownTimes.push_back({"skinning (cuda)", c.timer.milliseconds(), c.timer.startHostNs(), Track::CudaStream});
    return;
  }
#endif
  m_ownTimes.push_back({"skinning (cpu)", double(steadyNowNs() - t0) * 1e-6, t0, Track::Cpu});
}

VisibilityBuffers AvatarScene::rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer,
                                         const std::array<float, 16>& viewProj, VkExtent2D extent) {
  if (!m_raster) m_raster = std::make_unique<VisibilityRaster>(m_ctx, m_model.faces, m_model.vertexCount);
#ifdef ARMATURE_HAS_INTEROP
  if (m_backend == Backend::Cuda) {
    auto& c = *m_cuda;
    c.rasterTimer.start(c.stream);
    VisibilityBuffers out =
        m_raster->runCuda(static_cast<const float*>(c.positions->cudaPointer()), m_avatars, viewProj, extent, c.stream);
    c.rasterTimer.stop(c.stream);
    c.stream.synchronize();
    m_ownTimes.push_back(
        {"raster (cuda)", c.rasterTimer.milliseconds(), c.rasterTimer.startHostNs(), Track::CudaStream});
    return out;
  }
#endif
  return m_raster->recordVulkan(cmd, positions(), m_avatars, viewProj, extent, timer);
}

}  // namespace armature::app
