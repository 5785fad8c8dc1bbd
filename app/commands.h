#pragma once
#include <cstdint>
#include <string>
#include <vector>
// Subcommands of the `armature` command-line tool.
namespace armature::app {
int runInfo();
int runModelInfo(const std::string& path);
int runModelSynth(const std::string& out, uint64_t seed);
int runModelRender(const std::string& model, const std::string& out, const std::vector<std::string>& poses, int height,
                   double yawDegrees);
}  // namespace armature::app
