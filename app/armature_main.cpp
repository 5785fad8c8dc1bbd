// `armature`: the command-line tool. `armature info` is what a user runs first when something does not work.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"

int main(int argc, char** argv) {
  CLI::App cli{"Armature: differentiable avatar and geometry operations on the GPU"};
  cli.require_subcommand(1);
  auto* info = cli.add_subcommand("info", "Vulkan and CUDA devices, versions and capabilities");
  auto* model = cli.add_subcommand("model", "Body model files (SMPL, SMPL+H, SMPL-X .npz)");
  model->require_subcommand(1);
  std::string modelPath, outPath;
  uint64_t seed = 0;
  auto* modelInfo = model->add_subcommand("info", "Dimensions, joint names and optional parts of a model file");
  modelInfo->add_option("file", modelPath, "model .npz")->required();
  auto* synth = model->add_subcommand("synth", "Write the synthetic default avatar (SMPL-X layout)");
  synth->add_option("-o,--output", outPath, "output .npz")->required();
  synth->add_option("--seed", seed, "generator seed (deterministic)");
  auto* render = model->add_subcommand("render", "Pose a model with the CPU reference and draw it into a PNG");
  std::vector<std::string> poses = {"a-pose"};
  int height = 720;
  double yaw = 0;
  render->add_option("file", modelPath, "model .npz")->required();
  render->add_option("-o,--output", outPath, "output .png")->required();
  render->add_option("--poses", poses, "pose presets, drawn side by side");
  render->add_option("--height", height, "image height in pixels");
  render->add_option("--yaw", yaw, "view rotation about the vertical axis, degrees");
  CLI11_PARSE(cli, argc, argv);
  try {
    if (*info) return armature::app::runInfo();
    if (*modelInfo) return armature::app::runModelInfo(modelPath);
    if (*synth) return armature::app::runModelSynth(outPath, seed);
    if (*render) return armature::app::runModelRender(modelPath, outPath, poses, height, yaw);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "armature: %s\n", e.what());
    return 1;
  }
  return 0;
}
