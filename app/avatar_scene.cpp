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

// A GPU backend's side of the frame: the device the avatars' parameters and outputs live on, and how a stage's work
// is issued and timed. Every op is called once for either backend. The CUDA lane's device shares its outputs with
// Vulkan (Sharing::CudaToVulkan: zero-copy, or copied where CUDA drives another GPU than the renderer's).
class AvatarScene::Lane {
 public:
  Lane(vk::Context& ctx, Device& on, Backend runs, const BodyModel& model, uint32_t S, uint32_t E, uint32_t maxAvatars,
       std::string describe)
      : device(on),
        backend(runs),
        status(std::move(describe)),
        pose(floats(size_t(maxAvatars) * model.jointCount * 3)),
        betas(floats(size_t(maxAvatars) * S)),
        expression(floats(size_t(maxAvatars) * E)),
        transl(floats(size_t(maxAvatars) * 3)),
        positions(floats(size_t(maxAvatars) * model.vertexCount * 3)),
        joints(floats(size_t(maxAvatars) * model.jointCount * 3)),
        m_ctx(ctx),
        m_model(model),
        m_shape(S),
        m_expr(E),
        m_maxAvatars(maxAvatars),
        m_stage(runs) {}

  Skinning& skinning() {  // built on first use: the CPU backend draws from the Vulkan lane's outputs only
    // On CUDA a frame shares L2 with the rasteriser and the renderer: a resident blend matrix would push their data
    // out to DRAM and slow the whole frame, so the viewer streams the matrix instead.
    if (!m_skinning)
      m_skinning = std::make_unique<Skinning>(device, backend, m_model, m_shape, m_expr, m_maxAvatars,
                                              SkinningTuning{.l2Residency = false});
    return *m_skinning;
  }
  // The frame's parameters, ordered before the stage's later work.
  void stage(const Exec& exec, const BodyParams& p) {
    for (auto [to, from] :
         {std::pair{&pose, &p.pose}, {&betas, &p.betas}, {&expression, &p.expression}, {&transl, &p.transl}}) {
      const std::vector<float> f(from->begin(), from->end());
      to->upload(exec, f.data(), f.size() * 4);
    }
  }
  Exec begin(VkCommandBuffer cmd, vk::GpuTimer* timer, const char* name) {
    return m_stage.begin(m_ctx, cmd, timer, name);
  }
  // Ends the stage: `outputs` readable by the frame's Vulkan passes; its time where the stage measures it itself.
  std::optional<Span> end(VkCommandBuffer cmd, vk::GpuTimer* timer,
                          std::initializer_list<const DeviceBuffer*> outputs = {}) {
    return m_stage.end(cmd, timer, outputs);
  }
  SkinningForwardArgs skinArgs(uint32_t avatars) const {
    const size_t J3 = size_t(avatars) * m_model.jointCount * 3;
    return {.batch = avatars,
            .pose = pose.view().slice(0, J3),
            .betas = betas.view().slice(0, size_t(avatars) * m_shape),
            .expression = expression.view().slice(0, size_t(avatars) * m_expr),
            .transl = transl.view().slice(0, size_t(avatars) * 3),
            .vertices = positions.view().slice(0, size_t(avatars) * m_model.vertexCount * 3),
            .joints = joints.view().slice(0, J3)};
  }
  DeviceView firstPositions() const { return positions.view().slice(0, size_t(m_model.vertexCount) * 3); }
  // A buffer of at least `count` floats in `buffer`, (re)made when it is smaller.
  DeviceView ensure(DeviceBuffer& buffer, size_t count) {
    if (buffer.count() < count) buffer = floats(count);
    return buffer.view().slice(0, count);
  }

  Device& device;
  const Backend backend;
  const std::string status;
  DeviceBuffer pose, betas, expression, transl, positions, joints;
  DeviceBuffer fieldInputs, texture, volume;
  std::unique_ptr<TextureBaker> baker;  // for the scene's atlas and settings, made on first use
  DeviceBuffer colours;                 // the body-part colours, (V,4)
  std::vector<float> cameras;           // the baker's, as last set
  std::unique_ptr<FieldBuffers> field;  // the field mode's, made on first use

 private:
  DeviceBuffer floats(size_t count) { return device.allocate(ElementType::Float32, count); }
  vk::Context& m_ctx;
  const BodyModel& m_model;
  uint32_t m_shape, m_expr, m_maxAvatars;
  std::unique_ptr<Skinning> m_skinning;
  FrameStage m_stage;
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
  // The skinning tables follow the component counts: the lanes are rebuilt (CUDA's at once, as it was in use).
  const bool hadCuda = m_cudaLane != nullptr;
  m_cudaLane.reset();
  m_vulkanLane = std::make_unique<Lane>(m_ctx, m_vkDevice, Backend::Vulkan, m_model, S, E, m_maxAvatars,
                                        "compute on " + m_ctx.info().name);
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
    if (!m_cudaDevice) m_cudaDevice = std::make_unique<Device>(&m_ctx, Sharing::CudaToVulkan);
    m_cudaDevice->require(Backend::Cuda);
    if (!m_cudaLane)
      m_cudaLane = std::make_unique<Lane>(m_ctx, *m_cudaDevice, Backend::Cuda, m_model, m_shape, m_expr, m_maxAvatars,
                                          "interop: " + interop::describe(interop::probe(m_ctx)));
#else
    throw Error("CUDA backend unavailable: this build has no CUDA (ARMATURE_CUDA=OFF)");
#endif
  }
  if (b != Backend::Cpu) lane(b).skinning();  // the tables now: a failure is this call's
  m_backend = b;
}

std::string AvatarScene::gpuStatus() const { return lane().status; }

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

BodyParams AvatarScene::shown() const {
  BodyParams p = BodyParams::zeros(m_model, 1, m_shape, m_expr);
  std::copy_n(m_params.pose.begin(), p.pose.size(), p.pose.begin());
  std::copy_n(m_params.betas.begin(), m_shape, p.betas.begin());  // avatar 0 has no crowd jitter
  std::copy_n(m_params.expression.begin(), m_expr, p.expression.begin());
  const auto [x, z] = place(0, m_avatars, 1.1);
  p.transl = {m_params.transl[0] - x, m_params.transl[1], m_params.transl[2] - z};
  return p;
}

VkBuffer AvatarScene::positions() const { return lane().positions.vulkanBuffer(); }

VkBuffer AvatarScene::joints() const { return lane().joints.vulkanBuffer(); }

// The backend's lane; the CPU reference writes the Vulkan lane's output buffers, so its frames use that lane.
AvatarScene::Lane& AvatarScene::lane(std::optional<Backend> backend) const {
  return backend.value_or(m_backend) == Backend::Cuda ? *m_cudaLane : *m_vulkanLane;
}

std::vector<float> AvatarScene::readPositions() const {
  return lane().positions.download<float>(size_t(m_avatars) * m_model.vertexCount * 3);
}

void AvatarScene::skin(VkCommandBuffer cmd, vk::GpuTimer* timer) {
  m_ownTimes.clear();
  if (m_backend == Backend::Cpu) {  // the reference, into the buffers the renderer draws from
    const int64_t t0 = steadyNowNs();
    BodyOutput out = bodyForwardRef(m_model, m_params);
    uploadFloats(m_vulkanLane->positions, out.vertices);
    uploadFloats(m_vulkanLane->joints, out.joints);
    m_ownTimes.push_back({"skinning (cpu)", double(steadyNowNs() - t0) * 1e-6, t0, Track::Cpu});
  } else {
    Lane& gpu = lane();
    const Exec exec = gpu.begin(cmd, timer, "skinning");
    gpu.stage(exec, m_params);
    gpu.skinning().forward(exec, gpu.skinArgs(m_avatars));
    if (auto span = gpu.end(cmd, timer, {&gpu.positions, &gpu.joints})) m_ownTimes.push_back(*span);
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
  return {m_uvs.handle(), lane().texture.vulkanBuffer(), m_bake->textureSize};
}

void AvatarScene::bakeTexture(Lane& gpu, VkCommandBuffer cmd, vk::GpuTimer* timer) {
  if (!gpu.baker) {
    TextureBaker::Settings settings;
    settings.views = m_bake->views, settings.width = settings.height = m_bake->viewSize, settings.channels = 4;
    gpu.baker =
        std::make_unique<TextureBaker>(gpu.device, gpu.backend, *m_atlas, m_model.faces, m_model.vertexCount, settings);
    gpu.colours = gpu.device.upload(bodyPartColours(m_model));
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
  const DeviceView texture = gpu.ensure(gpu.texture, size_t(m_bake->textureSize) * m_bake->textureSize * 4);
  auto stage = [&](const char* name, const DeviceBuffer* output, auto&& work) {
    work(gpu.begin(cmd, timer, name));
    if (auto span = output ? gpu.end(cmd, timer, {output}) : gpu.end(cmd, timer)) m_ownTimes.push_back(*span);
  };
  stage("bake views", nullptr, [&](const Exec& e) { gpu.baker->renderViews(e, positions, gpu.colours); });
  stage("bake samples", nullptr, [&](const Exec& e) { gpu.baker->samples(e, positions); });
  stage("bake aggregate", &gpu.texture, [&](const Exec& e) { gpu.baker->aggregate(e, texture); });
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
  FieldVolume v{lane().volume.vulkanBuffer(), m_fieldSettings.resolution, {}, {}, m_fieldSettings.density};
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
  if (!gpu.field) gpu.field = std::make_unique<FieldBuffers>(gpu.device, field, m_skeleton, R);
  FieldBuffers& f = *gpu.field;
  const size_t bindBinds = bindableFloats(size_t(J) * 12);
  std::vector<float> inputs(bindBinds + size_t(J) * 12);
  std::copy(joints.locals.begin(), joints.locals.end(), inputs.begin());
  std::copy(joints.inverseBinds.begin(), joints.inverseBinds.end(), inputs.begin() + long(bindBinds));
  const DeviceView in = gpu.ensure(gpu.fieldInputs, inputs.size());
  const DeviceView volume = gpu.ensure(gpu.volume, size_t(R) * R * R);
  auto stage = [&](const char* name, const DeviceBuffer* output, auto&& work) {
    work(gpu.begin(cmd, timer, name));
    if (auto span = output ? gpu.end(cmd, timer, {output}) : gpu.end(cmd, timer)) m_ownTimes.push_back(*span);
  };
  stage("field pose", nullptr, [&](const Exec& e) {
    gpu.fieldInputs.upload(e, inputs.data(), inputs.size() * 4);
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
  stage("field grid", nullptr, [&](const Exec& e) {
    buildGaussianGrid(e, {.in = f.posed(N), .epsilon = m_fieldSettings.epsilon, .grid = f.grid});
  });
  stage("field eval", &gpu.volume,
        [&](const Exec& e) { gaussianField(e, {.in = f.posed(N), .field = volume, .grid = f.grid}); });
}

VisibilityBuffers AvatarScene::rasterize(VkCommandBuffer cmd, vk::GpuTimer* timer,
                                         const std::array<float, 16>& viewProj, VkExtent2D extent) {
  if (!m_raster) m_raster = std::make_unique<VisibilityRaster>(m_ctx, m_model.faces, m_model.vertexCount);
  Lane& gpu = lane();
  const Exec exec = gpu.begin(cmd, timer, "raster");
  VisibilityBuffers out = m_raster->record(exec, gpu.positions, m_avatars, viewProj, extent);
  if (auto span = gpu.end(cmd, timer)) m_ownTimes.push_back(*span);
  return out;
}

}  // namespace armature::app
