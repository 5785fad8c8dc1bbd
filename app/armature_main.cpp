// `armature`: the command-line tool. `armature info` is what a user runs first when something does not work.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <tuple>

#include "app/cli.h"
#include "app/commands.h"
#include "app/poses.h"

int main(int argc, char** argv) {
  namespace cli = armature::cli;
  CLI::App app{"Armature: differentiable avatar and geometry operations on the GPU"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.require_subcommand(1);
  auto* info = app.add_subcommand("info", "Vulkan and CUDA devices, versions and capabilities");
  auto* model = app.add_subcommand("model", "Body model files (SMPL, SMPL+H, SMPL-X, MANO; .npz or .pkl)");
  model->require_subcommand(1);
  std::string modelPath, outPath;
  uint64_t seed = 0;
  auto* modelInfo = model->add_subcommand("info", "Dimensions, joint names and optional parts of a model file");
  modelInfo->add_option("file", modelPath, "model .npz or .pkl")->required()->check(cli::regularFile());
  auto* synth = model->add_subcommand("synth", "Write the synthetic default avatar (SMPL-X layout)");
  synth->add_option("-o,--output", outPath, "output .npz")->required()->check(cli::writableFile());
  synth->add_option("--seed", seed, "generator seed (deterministic)")->check(cli::unsignedInteger());
  auto* motion = app.add_subcommand("motion", "Motions the project makes itself");
  motion->require_subcommand(1);
  auto* motionSynth =
      motion->add_subcommand("synth",
                             "Write a sample motion as smplx parameters (what `armature pose --motion`, "
                             "the viewer's --motion and armature.smplx read)");
  std::string motionKind = "walk", motionModel;
  double motionSeconds = 2, motionFps = 30;
  motionSynth->add_option("kind", motionKind, "the motion: walk")->check(CLI::IsMember({"walk"}));
  motionSynth->add_option("-o,--output", outPath, "output .npz")->required()->check(cli::writableFile());
  motionSynth->add_option("--model", motionModel, "the model it is for, .npz or .pkl (default: the default avatar)")
      ->check(cli::regularFile());
  motionSynth->add_option("--seconds", motionSeconds, "length, rounded to whole strides (one a second)")
      ->check(cli::finiteRange(0.5, 3600));
  motionSynth->add_option("--fps", motionFps, "frame rate")->check(cli::finiteRange(1, 1000));
  auto* render = model->add_subcommand("render", "Pose a model with the CPU reference and draw it into a PNG");
  std::vector<std::string> poses = {"a-pose"};
  int height = 720;
  double yaw = 0;
  constexpr int kMaxWidth = 16384;  // the poses are drawn side by side, each 3/4 of the height wide
  render->add_option("file", modelPath, "model .npz or .pkl")->required()->check(cli::regularFile());
  render->add_option("-o,--output", outPath, "output .png")->required()->check(cli::writableFile());
  render->add_option("--poses", poses, "pose presets, drawn side by side")
      ->expected(1, 16)
      ->check(CLI::IsMember(armature::app::posePresetNames()));
  render->add_option("--height", height, "image height in pixels")->check(CLI::Range(16, 4096));
  render->add_option("--yaw", yaw, "view rotation about the vertical axis, degrees")
      ->check(cli::finiteRange(-3600, 3600));
  auto* pose =
      app.add_subcommand("pose", "A motion (AMASS, smplx parameters) through a model: meshes, glTF or joints out");
  armature::app::PoseOptions poseOptions;
  std::string frames;
  pose->add_option("model", poseOptions.model, "model .npz or .pkl")->required()->check(cli::regularFile());
  pose->add_option("--motion", poseOptions.motion, "AMASS .npz, or smplx parameters .npz or .pkl")
      ->required()
      ->check(cli::regularFile());
  pose->add_option("-o,--output", poseOptions.output,
                   "OUT.obj or OUT.ply (a mesh per frame: OUT_00000.obj, ...; one frame: OUT itself), OUT.glb (the "
                   "shaped avatar as a skinned mesh, the motion its animation), OUT.npy or OUT.csv (every frame's "
                   "joints). Axes: .glb is y-up (glTF's); the others keep the motion's own (AMASS: z-up; smplx "
                   "parameters: the model's, y-up)")
      ->required()
      ->check(cli::writableFile());
  pose->add_option("--frames", frames, "A:B, frames [A, B) (either may be left out)")->check(cli::frameRange());
  pose->add_option("--fps", poseOptions.fps, "resample to this rate first (slerp)")
      ->check(cli::finiteRange(0.001, 10000));
  pose->add_option("--influences", poseOptions.influences, "joints per vertex in a .glb: 4 or 8")
      ->check(CLI::IsMember({4, 8}));
  pose->add_option("--backend", poseOptions.backend, "auto (CUDA where it runs, else Vulkan), cuda, vulkan or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "vulkan", "cpu"}));
  auto* gltf = app.add_subcommand(
      "gltf", "A rigged glTF character's animation through joint propagation and skinning: checked, meshes out");
  armature::app::GltfOptions gltfOptions;
  gltf->add_option("file", gltfOptions.file, "rigged .glb or .gltf")->required()->check(cli::regularFile());
  gltf->add_option("-o,--output", gltfOptions.output, "OUT.obj or OUT.ply: a mesh per frame (numbered)")
      ->check(cli::writableFile());
  gltf->add_option("--clip", gltfOptions.clip, "animation index")->check(cli::unsignedInteger());
  gltf->add_option("--frames", gltfOptions.frames, "frames to sample (default: the whole clip)")
      ->check(CLI::Range(1u, 1u << 20));
  gltf->add_option("--fps", gltfOptions.fps, "sampling rate")->check(CLI::Range(0.001, 10000.0));
  gltf->add_option("--backend", gltfOptions.backend, "auto (CUDA where it runs, else Vulkan), cuda, vulkan or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "vulkan", "cpu"}));
  auto* fit = app.add_subcommand(
      "fit-field",
      "Fit N Gaussians to the avatar's occupancy or signed distance, or a volume, with Adam on the GPU: progress, IoU, "
      "the field out");
  armature::app::FitFieldOptions fitOptions;
  fit->add_option("--model", fitOptions.model, "body model .npz or .pkl (default: the generated avatar)")
      ->check(cli::regularFile());
  fit->add_option("-o,--output", fitOptions.output, "the fitted field, .npz")->check(cli::writableFile());
  fit->add_option("--target", fitOptions.target,
                  "the avatar's occupancy, or its signed distance (as 0.5 - 0.5 clamp(s / band, -1, 1))")
      ->check(CLI::IsMember({"occupancy", "distance"}));
  fit->add_option("--volume", fitOptions.volume,
                  "fit a volume instead: .npz with 'volume' (X,Y,Z) at cell centres and 'bounds' (2,3)")
      ->check(cli::regularFile());
  fit->add_option("--gaussians", fitOptions.gaussians, "how many")->check(CLI::Range(1u, 1u << 20));
  fit->add_option("--iterations", fitOptions.iterations, "Adam steps")->check(CLI::Range(1u, 1u << 24));
  fit->add_option("--samples", fitOptions.samples, "training samples (as many again are held out)")
      ->check(CLI::Range(16u, 1u << 22));
  fit->add_option("--log-every", fitOptions.logEvery, "iterations per progress line")->check(CLI::Range(1u, 1u << 24));
  fit->add_option("--lr", fitOptions.lr, "Adam's learning rate")->check(cli::finiteRange(1e-9, 10));
  fit->add_option("--seed", fitOptions.seed, "samples and initial field");
  fit->add_option("--backend", fitOptions.backend, "auto (CUDA where it runs, else Vulkan), cuda or vulkan")
      ->check(CLI::IsMember({"auto", "cuda", "vulkan"}));
  auto* bake = app.add_subcommand(
      "bake", "Bake K views of the posed avatar into a texture over a generated UV atlas on the GPU: a PNG out");
  armature::app::BakeOptions bakeOptions;
  bake->add_option("--model", bakeOptions.model, "body model .npz or .pkl (default: the generated avatar)")
      ->check(cli::regularFile());
  bake->add_option("--pose", bakeOptions.pose, "pose preset")->check(CLI::IsMember(armature::app::posePresetNames()));
  bake->add_option("-o,--output", bakeOptions.output, "the texture, .png")->check(cli::writableFile());
  // 512 is the least at which the default avatar's 10,694 UV charts each get texels (at 256 none does).
  bake->add_option("--size", bakeOptions.size, "texels per side of the texture")->check(CLI::Range(512u, 8192u));
  bake->add_option("--views", bakeOptions.views, "cameras around the avatar")->check(CLI::Range(1u, 64u));
  bake->add_option("--view-size", bakeOptions.viewSize, "pixels per side of each view")->check(CLI::Range(16u, 8192u));
  bake->add_option("--views-png", bakeOptions.viewsPng, "also write the views side by side, .png")
      ->check(cli::writableFile());
  bake->add_option("--preview", bakeOptions.preview,
                   "also render the avatar with its vertex colours and with the baked texture, .png")
      ->check(cli::writableFile());
  bake->add_option("--timing-runs", bakeOptions.timingRuns, "timed bakes after the first, for the median")
      ->check(CLI::Range(1u, 100000u));
  bake->add_option("--backend", bakeOptions.backend, "auto (CUDA where it runs, else Vulkan), cuda or vulkan")
      ->check(CLI::IsMember({"auto", "cuda", "vulkan"}));
  if (auto code = cli::parse(app, argc, argv)) return *code;
  if (!frames.empty()) std::tie(poseOptions.firstFrame, poseOptions.endFrame) = cli::parseFrameRange(frames);
  if (*render && int64_t(height) * 3 / 4 * int64_t(poses.size()) > kMaxWidth) {
    std::fprintf(stderr, "armature: --height %d with %zu poses makes an image wider than %d pixels\n", height,
                 poses.size(), kMaxWidth);
    return cli::kUsageError;
  }
  try {
    if (*info) return armature::app::runInfo();
    if (*modelInfo) return armature::app::runModelInfo(modelPath);
    if (*synth) return armature::app::runModelSynth(outPath, seed);
    if (*motionSynth) return armature::app::runMotionSynth(motionKind, motionModel, outPath, motionSeconds, motionFps);
    if (*render) return armature::app::runModelRender(modelPath, outPath, poses, height, yaw);
    if (*pose) return armature::app::runPose(poseOptions);
    if (*gltf) return armature::app::runGltf(gltfOptions);
    if (*fit) return armature::app::runFitField(fitOptions);
    if (*bake) return armature::app::runBake(bakeOptions);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "armature: %s\n", e.what());
    return cli::kFailure;
  }
  return 0;
}
