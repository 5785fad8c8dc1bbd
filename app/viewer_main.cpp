// armature-viewer: pose an avatar live (window) or render frames to PNG with a GPU profile (--headless).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/cli.h"
#include "app/poses.h"
#include "app/viewer.h"
#include "armature/error.h"

int main(int argc, char** argv) {
  namespace cli = armature::cli;
  armature::app::ViewerOptions o;
  CLI::App app{"armature-viewer: live avatar posing with GPU profiling"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  std::string size;
  constexpr uint32_t kMaxSide = 16384;
  app.add_flag("--headless", o.headless, "render offscreen, no window system");
  app.add_option("--frames", o.frames, "headless: frames to render")->check(CLI::Range(1, 100'000'000));
  auto* screenshot =
      app.add_option("--screenshot", o.screenshot, "headless: write the last frame as PNG")->check(cli::writableFile());
  app.add_option("--screenshot-every", o.screenshotEvery,
                 "headless: also write frames 0, N, 2N, ... as OUT_00000.png, ... beside --screenshot OUT")
      ->check(CLI::Range(1, 100'000'000))
      ->needs(screenshot);
  app.add_option("--record", o.record,
                 "headless: every frame into a video at 60 fps through ffmpeg when installed (.mp4, .mkv, ...), else "
                 "numbered PNGs beside the path")
      ->check(cli::writableFile());
  app.add_option("--profile", o.profile,
                 "write the frame profile (Chrome trace JSON, streamed while running, + a "
                 "CSV summary beside it)")
      ->check(cli::writableFile());
  app.add_option("--backend", o.backend, "skinning backend")->check(CLI::IsMember({"auto", "cuda", "vulkan", "cpu"}));
  app.add_option("--pose", o.pose, "pose preset (body models)")->check(CLI::IsMember(armature::app::posePresetNames()));
  app.add_option("--model", o.model,
                 "body model .npz or .pkl, or a rigged glTF character .glb/.gltf (default: the generated avatar)")
      ->check(cli::regularFile());
  app.add_option("--beside", o.beside,
                 "also show this model's crowd to the right of --model's, e.g. a rigged .glb beside the SMPL-X "
                 "avatars (repeatable; --avatars, --backend and the profile apply to every crowd)")
      ->check(cli::regularFile());
  app.add_option("--clip", o.clip, "a glTF character's animation to play (0 = the first)");
  app.add_option("--avatars", o.avatars, "crowd size (1 … 4096)")->check(CLI::Range(1u, 4096u));
  app.add_option("--size", size, "image or window size, WxH")->check(cli::sizeWxH(kMaxSide));
  app.add_flag("--animate", o.animate, "loop a walk cycle");
  app.add_option("--motion", o.motion, "play a motion: AMASS sequence .npz, or smplx parameters .npz or .pkl")
      ->check(cli::regularFile());
  app.add_flag("--wireframe", o.wireframe, "draw triangle edges");
  app.add_flag("!--no-ground", o.ground, "do not draw the ground grid");
  app.add_flag("--skeleton", o.skeleton, "draw bones and joint markers");
  app.add_option("--bake", o.bake,
                 "bake the avatar every frame, painted by body part, from --bake-views views of NxN into an NxN "
                 "texture over a generated UV atlas, and draw the crowd with it")
      ->check(CLI::Range(512u, 8192u));  // the default avatar's atlas needs 512 (armature bake --size)
  app.add_option("--bake-views", o.bakeViews, "--bake: cameras around the avatar")->check(CLI::Range(1u, 64u));
  app.add_option("--field", o.field,
                 "a Gaussian field (armature fit-field's .npz) attached to the avatar's joints, posed, evaluated "
                 "and ray-marched every frame")
      ->check(cli::regularFile());
  app.add_option("--field-density", o.fieldDensity, "--field: absorption per metre at field value 1")
      ->check(CLI::Range(0.0f, 1000.0f));
  app.add_option("--field-resolution", o.fieldResolution, "--field: the volume's points per side")
      ->check(CLI::Range(4u, 256u));
  app.add_option("--raster", o.raster,
                 "how the avatars are rasterised: hardware (graphics pipeline) | compute "
                 "(the project's rasteriser: CUDA for the CUDA backend, else Vulkan compute)")
      ->check(CLI::IsMember({"hardware", "compute"}));
  app.add_option("--view", o.view, "headless camera: front, side, top or all (every avatar; the default)")
      ->check(CLI::IsMember({"front", "side", "top", "all"}));
  app.add_flag("--ui", o.ui,
               "headless: draw the GPU frame-time overlay into the frames (its cost is the \"ui\" stage)");
  app.add_option("--drag", o.drag,
                 "headless: drag this joint (a name, e.g. right_wrist) around a circle in the image while inverse "
                 "kinematics poses the body, as Ctrl + drag does in the window (its cost is the \"ik\" stage)");
  app.add_option("--ik-iterations", o.ikIterations, "--drag: IK steps per frame")->check(CLI::Range(1u, 64u));
  app.add_option("--gui-test", o.guiTest, "window smoke test: screenshots before/after moving a slider, into DIR")
      ->check(cli::writableDirectory());
  if (auto code = cli::parse(app, argc, argv)) return *code;
  if (!size.empty()) std::tie(o.width, o.height) = cli::parseSize(size, kMaxSide);
  try {
    return o.headless ? armature::app::runHeadless(o, armature::app::headlessUiFactory()) : armature::app::runWindow(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "armature-viewer: %s\n", e.what());
    return cli::kFailure;
  }
}
