// armature-viewer: pose an avatar live (window) or render frames to PNG with a GPU profile (--headless).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/viewer.h"
#include "armature/error.h"

int main(int argc, char** argv) {
  armature::app::ViewerOptions o;
  CLI::App cli{"armature-viewer: live avatar posing with GPU profiling"};
  std::string size;
  cli.add_flag("--headless", o.headless, "render offscreen, no window system");
  cli.add_option("--frames", o.frames, "headless: frames to render");
  cli.add_option("--screenshot", o.screenshot, "headless: write the last frame as PNG");
  cli.add_option("--profile", o.profile, "write the frame profile (Chrome trace JSON + CSV summary)");
  cli.add_option("--backend", o.backend, "skinning backend: auto | cuda | vulkan | cpu");
  cli.add_option("--pose", o.pose, "pose preset: t-pose a-pose walk wave sit fist shape");
  cli.add_option("--model", o.model, "model .npz (default: the generated default avatar)");
  cli.add_option("--avatars", o.avatars, "crowd size (1 … 4096)")->check(CLI::Range(1u, 4096u));
  cli.add_option("--size", size, "image or window size, WxH");
  cli.add_flag("--animate", o.animate, "loop a walk cycle");
  cli.add_flag("--wireframe", o.wireframe, "draw triangle edges");
  cli.add_flag("!--no-ground", o.ground, "do not draw the ground grid");
  cli.add_flag("--skeleton", o.skeleton, "draw bones and joint markers");
  cli.add_option("--raster", o.raster, "how the avatars are rasterised: hardware (graphics pipeline) | compute "
                 "(the project's rasteriser: CUDA for the CUDA backend, else Vulkan compute)")
      ->check(CLI::IsMember({"hardware", "compute"}));
  cli.add_flag("--ui", o.ui, "headless: draw the GPU frame-time overlay into the frames (its cost is the \"ui\" stage)");
  cli.add_option("--gui-test", o.guiTest, "window smoke test: screenshots before/after moving a slider, into DIR");
  CLI11_PARSE(cli, argc, argv);
  try {
    if (!size.empty()) {
      unsigned w = 0, h = 0;
      if (std::sscanf(size.c_str(), "%ux%u", &w, &h) != 2 || !w || !h || w > 16384 || h > 16384)
        throw armature::Error("--size must be WxH with positive sizes up to 16384, got '" + size + "'");
      o.width = w, o.height = h;
    }
    return o.headless ? armature::app::runHeadless(o, armature::app::headlessUiFactory()) : armature::app::runWindow(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "armature-viewer: %s\n", e.what());
    return 1;
  }
}
