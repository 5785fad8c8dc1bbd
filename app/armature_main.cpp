// `armature`: the command-line tool. `armature info` is what a user runs first when something does not work.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"

int main(int argc, char** argv) {
  CLI::App cli{"Armature: differentiable avatar and geometry operations on the GPU"};
  cli.require_subcommand(1);
  auto* info = cli.add_subcommand("info", "Vulkan and CUDA devices, versions and capabilities");
  CLI11_PARSE(cli, argc, argv);
  try {
    if (*info) return armature::app::runInfo();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "armature: %s\n", e.what());
    return 1;
  }
  return 0;
}
