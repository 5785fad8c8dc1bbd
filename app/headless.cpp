#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/avatar_scene.h"
#include "app/character_scene.h"
#include "app/composite_scene.h"
#include "app/pose_drag.h"
#include "app/poses.h"
#include "app/profiler.h"
#include "app/recorder.h"
#include "app/renderer.h"
#include "app/viewer.h"
#include "armature/body/synth.h"
#include "armature/file_checks.h"
#include "armature/device.h"

namespace armature::app {

void configureScene(Scene& scene, const ViewerOptions& o) {
  scene.animate = o.animate;
  auto* body = dynamic_cast<AvatarScene*>(&scene);
  ARM_CHECK(!o.bake || body, "--bake: the baked texture is a body model's, alone (not a glTF character's)");
  ARM_CHECK(o.field.empty() || body,
            "--field: the field follows a body model's joints, alone (not a glTF character's)");
  if (auto* composite = dynamic_cast<CompositeScene*>(&scene)) {
    // The options go to the parts that take them: the pose and motion to body models, the clip to glTF characters
    // (a body model ignores it; a glTF character refuses a motion).
    ARM_CHECK(o.motion.empty() || findScene<AvatarScene>(&scene), "--motion: no body model to play it");
    for (size_t p = 0; p < composite->partCount(); ++p) {
      ViewerOptions partOptions = o;
      if (!dynamic_cast<AvatarScene*>(&composite->part(p))) partOptions.motion.clear();
      configureScene(composite->part(p), partOptions);
    }
    return;
  }
  if (body) {
    body->applyPose(posePreset(body->model(), o.pose));
    if (o.bake) body->setBake(AvatarScene::BakeSettings{o.bake, o.bakeViews, o.bake});
    if (!o.field.empty())
      body->setField(loadBodyField(o.field, body->model()),
                     FieldSettings{.resolution = o.fieldResolution, .density = o.fieldDensity});
    if (!o.motion.empty()) {
      body->setMotion(loadMotion(o.motion, body->model()));
      std::fprintf(stderr, "%s: %s\n", o.motion.c_str(), body->motion()->description.c_str());
    }
    return;
  }
  auto& character = dynamic_cast<CharacterScene&>(scene);
  ARM_CHECK(o.motion.empty(), "--motion: a glTF character plays its own animation (--clip picks one)");
  character.setClip(o.clip);
  std::fprintf(stderr, "%s: %u joints, %u vertices, %u influences; %zu clip(s)\n", character.character().source.c_str(),
               character.jointCount(), character.vertexCount(), character.character().influences,
               character.character().clips.size());
}

CameraView parseCameraView(const std::string& name) {
  if (name == "front") return CameraView::Front;
  if (name == "side") return CameraView::Side;
  if (name == "top") return CameraView::Top;
  ARM_CHECK(name == "all", "camera view '%s': expected front, side, top or all", name.c_str());
  return CameraView::Current;
}

int runHeadless(const ViewerOptions& o, HeadlessUiFactory uiFactory) {
  ARM_CHECK(o.frames >= 1, "--frames must be >= 1");
  if (!o.screenshot.empty()) checkWritableFile(o.screenshot, "--screenshot");  // before any frame is rendered
  vk::ContextOptions contextOptions;
  if (o.ui) contextOptions.instanceExtensions.push_back("VK_KHR_surface");  // Dear ImGui's backend loads its functions
  vk::Context ctx(contextOptions);
  std::unique_ptr<Scene> scene =
      openScene(ctx, o.model.empty() ? defaultModelPath() : o.model, std::max(o.avatars, 1u), o.beside);
  configureScene(*scene, o);
  scene->setBackend(chooseBackend(o.backend));
  scene->setAvatars(o.avatars);

  Renderer renderer(ctx, OffscreenTarget::kColorFormat, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, scene->faces(),
                    scene->parents());
  OffscreenTarget target(ctx, renderer, {o.width, o.height});
  if (o.ui && !uiFactory) throw Error("--ui: this build has no Dear ImGui (scripts/install-deps.sh installs it)");
  std::unique_ptr<HeadlessUi> ui = o.ui ? uiFactory(ctx, OffscreenTarget::kColorFormat) : nullptr;
  Camera camera;
  frameAvatars(camera, *scene, parseCameraView(o.view));
  DrawSettings draw;
  draw.vertexCount = scene->vertexCount();
  draw.avatars = o.avatars;
  draw.floorY = scene->floorY();
  draw.wireframe = o.wireframe;
  draw.ground = o.ground;
  draw.skeleton = o.skeleton;
  draw.jointCount = scene->jointCount();

  ARM_CHECK(o.raster == "hardware" || o.raster == "compute", "--raster must be hardware or compute, got '%s'",
            o.raster.c_str());
  const float aspect = float(o.width) / float(o.height);
  auto writePng = [&](const std::string& file, const std::vector<uint8_t>& px) {
    if (!stbi_write_png(file.c_str(), int(o.width), int(o.height), 4, px.data(), int(o.width) * 4))
      throw Error(file + ": cannot write PNG");
  };
  std::unique_ptr<VideoRecorder> recorder;
  if (!o.record.empty()) {
    recorder = std::make_unique<VideoRecorder>(o.record, o.width, o.height, 60);
    std::printf("recording: %s\n", recorder->description().c_str());
  }
  const std::array<float, 16> viewProj = camera.viewProj(aspect);  // the camera stays where it was framed
  warmUp(ctx, *scene, o.raster == "compute" ? &viewProj : nullptr, target.extent());
  // A scripted drag: avatar 0's joint follows a circle through where it stands, 8% of the image high.
  std::unique_ptr<PoseDrag> drag;
  std::array<float, 2> dragStart{};
  if (!o.drag.empty()) {
    auto* body = dynamic_cast<AvatarScene*>(scene.get());
    ARM_CHECK(body, "--drag: the joint of a body model (not of a glTF character)");
    ARM_CHECK(!o.animate && o.motion.empty(), "--drag poses the base pose, which --animate and --motion replace");
    const std::vector<std::string>& names = body->model().jointNames;
    const auto it = std::find(names.begin(), names.end(), o.drag);
    ARM_CHECK(it != names.end(), "--drag: the model has no joint '%s' (armature model info lists them)",
              o.drag.c_str());
    const uint32_t joint = uint32_t(it - names.begin());
    drag = std::make_unique<PoseDrag>(*body);
    const ViewRay view{viewProj, float(o.width), float(o.height)};
    const auto at = drag->pixelOf(view, joint);
    ARM_CHECK(at.has_value(), "--drag: joint '%s' is behind the camera", o.drag.c_str());
    dragStart = *at;
    drag->select(joint);
    drag->begin(view);
  }
  vk::GpuTimer timer(ctx, 2, 16);
  Profiler profiler;
  if (!o.profile.empty()) profiler.streamTrace(o.profile);
  for (int f = 0; f < o.frames; ++f) {
    const int64_t t0 = steadyNowNs();
    double uiCpuMs = 0;
    int64_t uiStartNs = 0;
    std::optional<Span> ik;
    if (drag) {
      const float angle = float(f) * 0.05f, radius = 0.08f * float(o.height);
      drag->move(dragStart[0] + radius * (std::cos(angle) - 1.0f), dragStart[1] + radius * std::sin(angle));
      drag->step(o.ikIterations);
      ik = drag->lastStep();
    }
    scene->update(f / 60.0);
    const bool shoot = o.screenshotEvery > 0 && f % o.screenshotEvery == 0;
    ctx.submitAndWait([&](VkCommandBuffer cmd) {
      timer.beginFrame(cmd, uint64_t(f));
      scene->skin(cmd, &timer);
      if (o.raster == "compute") draw.visibility = scene->rasterize(cmd, &timer, viewProj, target.extent());
      draw.joints = scene->joints();
      draw.texture = scene->texture();
      draw.field = scene->volume();
      std::function<UiLayer(VkCommandBuffer)> layer;
      std::function<void(VkCommandBuffer)> drawUi;
      if (ui) {  // the overlay: built every frame; as a layer it is re-rendered only when it changed (4 Hz)
        uiStartNs = steadyNowNs();
        ui->build(profiler, uint64_t(f), o.avatars, target.extent());
        uiCpuMs = double(steadyNowNs() - uiStartNs) * 1e-6;
        layer = [&](VkCommandBuffer c) { return ui->layer(c, target.extent()); };
        drawUi = [&](VkCommandBuffer c) { ui->draw(c); };
      }
      recordFrame(renderer, timer, cmd, target.frameTarget(), camera, scene->positions(), draw, layer, drawUi);
      if (f == o.frames - 1 || shoot || recorder) target.recordReadback(cmd);
    });
    if (shoot) writePng(numberedPath(o.screenshot, uint64_t(f)), target.pixels());
    if (recorder) recorder->add(target.pixels());
    FrameRecord rec;
    rec.startHostNs = t0;
    if (ui) rec.add({"ui (cpu)", uiCpuMs, uiStartNs, Track::Cpu});
    if (ik) rec.add(*ik);
    for (const Span& s : scene->ownTimes()) rec.add(s);
    for (Span& s : vulkanSpans(timer.waitFrame(uint64_t(f)))) rec.add(std::move(s));
    rec.cpuMs = double(steadyNowNs() - t0) * 1e-6;
    profiler.add(std::move(rec));
    if (o.afterFrame) o.afterFrame(uint64_t(f));
  }
  if (!o.screenshot.empty()) {
    writePng(o.screenshot, target.pixels());
    std::printf("screenshot: %s (%ux%u)\n", o.screenshot.c_str(), o.width, o.height);
  }
  if (!o.profile.empty()) {
    profiler.finishTrace();
    std::string csv = std::filesystem::path(o.profile).replace_extension(".csv").string();
    profiler.writeCsv(csv);
    std::printf("profile: %s (Chrome trace, opens in Perfetto) and %s\n", o.profile.c_str(), csv.c_str());
  }
  std::printf("device: %s; skinning: %s; raster: %s%s; %u avatar(s), %d frames at %ux%u\n", ctx.info().name.c_str(),
              scene->backendStatus().c_str(), o.raster.c_str(), ui ? "; overlay drawn" : "", o.avatars, o.frames,
              o.width, o.height);
  std::printf("%-18s %9s %9s %9s %9s\n", "stage (ms)", "last", "mean", "p99", "max");
  for (auto& [name, s] : profiler.stats())
    std::printf("%-18s %9.4f %9.4f %9.4f %9.4f\n", name.c_str(), s.last, s.mean, s.p99, s.max);
  return 0;
}

}  // namespace armature::app
