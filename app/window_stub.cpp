// Window mode (GLFW + swapchain + Dear ImGui) is not built yet: say so and point at headless mode.
#include <cstdio>

#include "app/viewer.h"

namespace armature::app {
HeadlessUiFactory headlessUiFactory() { return nullptr; }

int runWindow(const ViewerOptions&) {
  std::fprintf(stderr, "armature-viewer: the window mode is not available in this build yet; use --headless\n");
  return 2;
}
}  // namespace armature::app
