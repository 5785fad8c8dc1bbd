#include "app/scene.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/avatar_scene.h"
#include "app/character_scene.h"
#include "app/composite_scene.h"
#include "armature/body/synth.h"
#include "armature/file_checks.h"
#include "armature/vk/context.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/interop/interop.h"
#endif

namespace armature::app {

std::array<double, 2> crowdPlace(uint32_t i, uint32_t count, double spacing) {
  const uint32_t columns = uint32_t(std::ceil(std::sqrt(double(count))));
  return {(double(i % columns) - (columns - 1) / 2.0) * spacing, -double(i / columns) * spacing};
}

std::array<double, 2> Scene::place(uint32_t i, uint32_t count, double spacing) const {
  const auto [x, z] = crowdPlace(i, count, spacing);
  return {m_crowdOrigin[0] + x, m_crowdOrigin[1] + z};
}

double crowdPhase(uint32_t i) { return std::fmod(i * 0.6180339887498949, 1.0); }

void frameAvatars(Camera& camera, const Scene& scene, CameraView view) {
  constexpr float kLevel = 0.05f, kCrowdPitch = 0.45f, kQuarterTurn = 1.5707963f;
  if (view == CameraView::Front) camera.yaw = 0, camera.pitch = kLevel;
  if (view == CameraView::Side) camera.yaw = kQuarterTurn, camera.pitch = kLevel;
  if (view == CameraView::Top) camera.yaw = 0, camera.pitch = 1.5f;
  if (view == CameraView::Current && scene.avatars() > 1) camera.pitch = std::max(camera.pitch, kCrowdPitch);
  float lo[3], hi[3];
  scene.crowdBounds(lo, hi);
  camera.frame(lo, hi);
  if (scene.avatars() > 1) camera.distance *= 0.75f;  // the box's depth overstates what the view must hold
}

std::string Scene::backendStatus() const {
  const std::string name = backendName(backend());
  if (backend() == Backend::Cpu) return name + " reference (double)";
  return name + (backend() == Backend::Cuda ? ", " : " ") + gpuStatus();
}

std::unique_ptr<Scene> openScene(vk::Context& ctx, const std::string& path, uint32_t maxAvatars,
                                 const std::vector<std::string>& beside) {
  auto open = [&](const std::string& file) -> std::unique_ptr<Scene> {
    const std::string ext = file.empty() ? "" : lowerExtension(file);
    if (ext == ".glb" || ext == ".gltf") {
      GltfCharacter character = loadGltfCharacter(file);
      for (const std::string& note : character.notes) std::fprintf(stderr, "%s: %s\n", file.c_str(), note.c_str());
      return std::make_unique<CharacterScene>(ctx, std::move(character), maxAvatars);
    }
    return std::make_unique<AvatarScene>(ctx, file.empty() ? synthesizeBodyModel({0}) : loadBodyModel(file),
                                         maxAvatars);
  };
  if (beside.empty()) return open(path);
  std::vector<std::unique_ptr<Scene>> parts;
  parts.push_back(open(path));
  for (const std::string& file : beside) parts.push_back(open(file));
  return std::make_unique<CompositeScene>(ctx, std::move(parts));
}

void warmUp(vk::Context& ctx, Scene& scene, const std::array<float, 16>* viewProj, VkExtent2D extent) {
  scene.update(0);
  ctx.submitAndWait([&](VkCommandBuffer cmd) {
    scene.skin(cmd, nullptr);
    if (viewProj) scene.rasterize(cmd, nullptr, *viewProj, extent);
  });
}

void uploadFloats(DeviceBuffer& buffer, const std::vector<double>& values) {
  const std::vector<float> f(values.begin(), values.end());
  buffer.upload(f.data(), f.size() * 4);
}

struct FrameStage::Cuda {
#ifdef ARMATURE_HAS_INTEROP
  cuda::Stream stream;
  cuda::EventTimer timer;
  std::string name;
#endif
};

FrameStage::FrameStage(Backend backend) : m_backend(backend) {
  ARM_CHECK(backend != Backend::Cpu, "a frame stage runs on a GPU backend");
#ifdef ARMATURE_HAS_INTEROP
  if (backend == Backend::Cuda) m_cuda = std::make_unique<Cuda>();
#else
  ARM_CHECK(backend != Backend::Cuda, "CUDA backend unavailable: this build has no CUDA (ARMATURE_CUDA=OFF)");
#endif
}

FrameStage::~FrameStage() = default;

Exec FrameStage::begin(vk::Context& ctx, VkCommandBuffer cmd, vk::GpuTimer* timer, const char* name) {
#ifdef ARMATURE_HAS_INTEROP
  if (m_cuda) {
    m_cuda->name = name;
    m_cuda->timer.start(m_cuda->stream);
    return Exec::cuda(m_cuda->stream.handle());
  }
#endif
  m_zone = timer ? timer->beginZone(cmd, name) : 0;
  return Exec::vulkan(ctx, cmd);
}

std::optional<Span> FrameStage::end(VkCommandBuffer cmd, vk::GpuTimer* timer,
                                    std::initializer_list<const DeviceBuffer*> toVulkan) {
#ifdef ARMATURE_HAS_INTEROP
  if (m_cuda) {
    Cuda& c = *m_cuda;
    c.timer.stop(c.stream);
    for (const DeviceBuffer* buffer : toVulkan) buffer->toVulkan(Exec::cuda(c.stream.handle()));
    c.stream.synchronize();
    return Span{c.name + " (cuda)", c.timer.milliseconds(), c.timer.startHostNs(), Track::CudaStream};
  }
#endif
  (void)toVulkan;
  if (timer) timer->endZone(cmd, m_zone);
  vk::computeBarrier(cmd);
  return std::nullopt;
}

}  // namespace armature::app
