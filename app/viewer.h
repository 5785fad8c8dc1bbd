#pragma once
// armature-viewer: options and the two ways to run it.
#include <cstdint>
#include <string>

namespace armature::app {

struct ViewerOptions {
  bool headless = false;
  int frames = 60;                 // headless: frames to render
  std::string screenshot;          // headless: PNG of the last frame
  std::string profile;             // Chrome trace JSON (+ a .csv summary beside it)
  std::string backend = "auto";    // auto | cuda | vulkan | cpu
  std::string pose = "a-pose";
  std::string model;               // .npz; default: the generated default avatar
  uint32_t avatars = 1;
  uint32_t width = 1280, height = 720;
  bool animate = false;
  bool wireframe = false;
  bool ground = true;
  bool skeleton = false;
  std::string raster = "hardware";  // hardware | compute (the visibility-buffer path; app/visibility.h)
  std::string guiTest;             // window: scripted smoke test writing screenshots into this folder
};

int runHeadless(const ViewerOptions& options);
int runWindow(const ViewerOptions& options);

// The model a viewer or tool opens when none is named: ARMATURE_DEFAULT_MODEL, else the build's generated avatar.
std::string defaultModelPath();

}  // namespace armature::app
