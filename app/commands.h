#pragma once
#include <cstdint>
#include <string>
#include <vector>
// Subcommands of the `armature` command-line tool.
namespace armature::app {
int runInfo();
int runModelInfo(const std::string& path);
int runModelSynth(const std::string& out, uint64_t seed);
// A motion the project makes itself (`kind`: "walk"), written as smplx parameters for `model` (empty: the default
// avatar): `seconds` of it at `fps`.
int runMotionSynth(const std::string& kind, const std::string& model, const std::string& out, double seconds,
                   double fps);
struct PoseOptions {
  std::string model, motion, output, backend = "auto";
  uint32_t firstFrame = 0, endFrame = UINT32_MAX;  // frames [first, end) of the (resampled) motion
  double fps = 0;                                  // 0: the motion's own rate
  uint32_t influences = 4;                         // joints per vertex in a .glb
};
int runPose(const PoseOptions& options);
struct GltfOptions {
  std::string file, output, backend = "auto";
  uint32_t clip = 0, frames = 0;  // frames 0: the whole clip
  double fps = 30;
};
int runGltf(const GltfOptions& options);
struct FitFieldOptions {
  std::string model, output, backend = "auto";
  std::string target = "occupancy";  // occupancy | distance (the avatar's); or a volume file instead
  std::string volume;
  uint32_t gaussians = 20, iterations = 500, samples = 4096, logEvery = 50;
  double lr = 0.01;
  uint64_t seed = 0;
};
int runFitField(const FitFieldOptions& options);
struct BakeOptions {
  std::string model, pose = "a-pose", output = "baked.png", viewsPng, preview, backend = "auto";
  uint32_t size = 1024, views = 8, viewSize = 1024, timingRuns = 20;
};
int runBake(const BakeOptions& options);
int runModelRender(const std::string& model, const std::string& out, const std::vector<std::string>& poses, int height,
                   double yawDegrees);
}  // namespace armature::app
