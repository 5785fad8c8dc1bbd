#pragma once
// armature-viewer: options and the two ways to run it.
#include "app/poses.h"  // defaultModelPath
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/renderer.h"

namespace armature::app {

struct ViewerOptions {
  bool headless = false;
  int frames = 60;               // headless: frames to render
  std::string screenshot;        // headless: PNG of the last frame
  int screenshotEvery = 0;       // headless: also frames 0, N, 2N, … as OUT_00000.png, … (OUT: screenshot)
  std::string record;            // headless: every frame into a video (ffmpeg) or numbered PNGs (app/recorder.h)
  std::string profile;           // Chrome trace JSON (+ a .csv summary beside it)
  std::string backend = "auto";  // auto | cuda | vulkan | cpu
  std::string pose = "a-pose";
  std::string model;  // .npz or .pkl body model, or a rigged .glb/.gltf; default: the generated default avatar
  std::vector<std::string> beside;  // more models whose crowds stand to the right of --model's, drawn with it
  uint32_t clip = 0;                // a glTF character's animation to play
  uint32_t avatars = 1;
  uint32_t width = 1280, height = 720;
  bool animate = false;
  std::string motion;  // AMASS or smplx parameters .npz the avatars play (looped, each at its own phase)
  bool wireframe = false;
  bool ground = true;
  bool skeleton = false;
  uint32_t bake = 0;  // a body model's baked-texture mode: texels per side (0: off), from bakeViews views as large
  uint32_t bakeViews = 8;
  std::string field;                // a body model's field mode: a fitted field (fit-field's .npz) on avatar 0's joints
  float fieldDensity = 8;           // its transfer function: absorption per metre at value 1
  uint32_t fieldResolution = 64;    // its volume's points per side
  std::string raster = "hardware";  // hardware | compute (the visibility-buffer path; app/visibility.h)
  std::string view = "all";         // headless camera: front | side | top | all (every avatar, from the default angle)
  bool ui = false;                  // headless: draw the GPU frame-time overlay (Dear ImGui) into every frame
  std::string drag;                 // headless: drag this joint of avatar 0 in a circle, posing by IK every frame
  uint32_t ikIterations = 8;        // IK steps per frame of a drag
  std::string guiTest;              // window: scripted smoke test writing screenshots into this folder
  std::function<void(uint64_t frame)> afterFrame;  // headless: called after each frame (soak tests)
};

// "front", "side", "top" or "all" (CameraView::Current: the default direction); throws for anything else.
CameraView parseCameraView(const std::string& name);

class Profiler;
class Scene;

// Applies the options that say how a scene moves: a body model's pose preset and motion, a glTF character's clip,
// and animation. Throws armature::Error for an option the scene's kind cannot take (a motion for a glTF character).
void configureScene(Scene& scene, const ViewerOptions& options);

// The UI headless mode draws with --ui. Dear ImGui lives in armature-viewer, not in the core library, so the
// executable hands headless mode a factory (null in a build without it).
class HeadlessUi {
 public:
  virtual ~HeadlessUi() = default;
  // Builds this frame's UI (the GPU frame-time overlay) from the profile so far.
  virtual void build(const Profiler& profiler, uint64_t frame, uint32_t avatars, VkExtent2D extent) = 0;
  // The UI as a cached layer (records its refresh if the UI changed), or as draws inside the frame's render pass.
  virtual UiLayer layer(VkCommandBuffer cmd, VkExtent2D extent) = 0;
  virtual void draw(VkCommandBuffer cmd) = 0;
};
using HeadlessUiFactory = std::unique_ptr<HeadlessUi> (*)(vk::Context& ctx, VkFormat colorFormat);
HeadlessUiFactory headlessUiFactory();  // null when this build has no Dear ImGui

int runHeadless(const ViewerOptions& options, HeadlessUiFactory ui = nullptr);
int runWindow(const ViewerOptions& options);

}  // namespace armature::app
