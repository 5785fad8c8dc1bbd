// The three executables as a new user runs them: every bad value is refused before any work starts, with exit
// code 2 (usage) or 1 (failure) and a message naming the option and what is allowed — never a crash, a hang or a
// silent success. And armature-bench's ops run end to end (--iters 2) under the Vulkan validation layer.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "armature/body/npz.h"
#include "armature/device.h"
#include "support/body_fixtures.h"
#include "support/pickle_writer.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;       // exit code; 128 + signal when killed
  std::string output;  // stdout and stderr
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The executables sit beside this test binary (build/bin, or the GPU bundle's bin/).
const std::string& binDir() {
  static std::string dir = fs::read_symlink("/proc/self/exe").parent_path().string();
  return dir;
}

// Runs bin/<exe> with `args` under a time limit (a hang fails the test instead of blocking it).
Result run(const std::string& exe, const std::vector<std::string>& args, const std::string& env = "",
           int timeoutS = 120) {
  std::string cmd = env;
  cmd.append(" timeout -k 5 ").append(std::to_string(timeoutS)).append(" ").append(quote(binDir() + "/" + exe));
  for (const auto& a : args) cmd.append(" ").append(quote(a));
  cmd += " 2>&1 </dev/null";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The default avatar: ARMATURE_DEFAULT_MODEL, else where the build and the GPU bundle put it (bin/../assets).
const std::string& modelPath() {
  static std::string p = [] {
    const char* env = std::getenv("ARMATURE_DEFAULT_MODEL");
    return env ? std::string(env) : binDir() + "/../assets/armature_default_smplx.npz";
  }();
  return p;
}

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("armature_cli_" + std::to_string(::getpid()));
  fs::path fifo = dir / "fifo.npz", garbage = dir / "garbage.npz", motion = dir / "motion.npz";
  Scratch() {
    fs::create_directories(dir);
    ::mkfifo(fifo.c_str(), 0600);
    std::ofstream(garbage) << "this is not a zip archive";
    // An AMASS SMPL+H sequence: 5 frames at 30 fps.
    std::vector<double> poses(5 * 156);
    for (size_t i = 0; i < poses.size(); ++i) poses[i] = 0.3 * std::sin(0.7 * double(i));
    armature::writeNpz(motion.string(), {{"poses", {{5, 156}, armature::NpyType::F64, poses}},
                                         {"trans", {{5, 3}, armature::NpyType::F64, std::vector<double>(15, 0.1)}},
                                         {"mocap_framerate", {{}, armature::NpyType::F64, {30.0}}}});
  }
  ~Scratch() { fs::remove_all(dir); }
};
const Scratch& scratch() {
  static Scratch s;
  return s;
}

struct BadInput {
  std::string exe;
  std::vector<std::string> args;
  int code;             // expected exit code
  std::string message;  // pieces the output must contain in this order, separated by ".*"
};
std::ostream& operator<<(std::ostream& os, const BadInput& b) {
  os << b.exe;
  for (auto& a : b.args) os << " " << a;
  return os;
}

// Placeholders replaced when the case runs: @MODEL@, @DIR@, @FIFO@, @GARBAGE@, @MOTION@.
std::string expand(const std::string& s) {
  const std::pair<std::string, std::string> keys[] = {{"@MODEL@", modelPath()},
                                                      {"@DIR@", scratch().dir.string()},
                                                      {"@FIFO@", scratch().fifo.string()},
                                                      {"@GARBAGE@", scratch().garbage.string()},
                                                      {"@MOTION@", scratch().motion.string()}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    bool matched = false;
    for (const auto& [key, value] : keys)
      if (s.compare(i, key.size(), key) == 0) {
        out.append(value);
        i += key.size();
        matched = true;
        break;
      }
    if (!matched) out.push_back(s[i++]);
  }
  return out;
}

// `pattern`'s pieces between ".*" occur in `text` in order (std::regex trips GCC 12's warnings under sanitizers).
bool containsInOrder(const std::string& text, const std::string& pattern) {
  size_t at = 0, begin = 0;
  while (true) {
    size_t end = pattern.find(".*", begin);
    std::string piece = pattern.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    at = text.find(piece, at);
    if (at == std::string::npos) return false;
    at += piece.size();
    if (end == std::string::npos) return true;
    begin = end + 2;
  }
}

class CliRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliRejects, WithExitCodeAndMessage) {
  const BadInput& b = GetParam();
  std::vector<std::string> args;
  for (const auto& a : b.args) args.push_back(expand(a));
  Result r = run(b.exe, args, "", 60);
  EXPECT_EQ(r.code, b.code) << r.output;
  EXPECT_TRUE(containsInOrder(r.output, b.message)) << "expected '" << b.message << "' in:\n" << r.output;
  EXPECT_EQ(r.output.find("Segmentation"), std::string::npos);
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos);
}

const std::string kRender[] = {"model", "render", "@MODEL@", "-o", "@DIR@/out.png"};
std::vector<std::string> render(std::vector<std::string> extra) {
  std::vector<std::string> a(std::begin(kRender), std::end(kRender));
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

const BadInput kBadInputs[] = {
    // armature
    {"armature", {}, 2, "subcommand"},
    {"armature", {"bogus"}, 2, "subcommand is required"},
    {"armature", render({"--height", "1"}), 2, "--height: Value 1 not in range 16 to 4096"},
    {"armature", render({"--height", "0"}), 2, "--height"},
    {"armature", render({"--height", "-5"}), 2, "--height"},
    {"armature", render({"--height", "100000"}), 2, "--height"},
    {"armature", render({"--height", "2000000000"}), 2, "--height"},
    {"armature", render({"--height", "99999999999999999999"}), 2, "--height"},
    {"armature", render({"--height", "tall"}), 2, "--height"},
    {"armature", render({"--height", "4096", "--poses", "walk", "walk", "walk", "walk", "walk", "walk"}), 2,
     "wider than 16384"},
    {"armature", render({"--poses"}), 2, "--poses"},
    {"armature", render({"--poses", "dance"}), 2, "--poses: dance not in"},
    {"armature", render({"--yaw", "nan"}), 2, "--yaw: 'nan' is outside [-3600, 3600]"},
    {"armature", render({"--yaw", "inf"}), 2, "--yaw"},
    {"armature", render({"--yaw", "1e9"}), 2, "--yaw"},
    {"armature", render({"--yaw", "12deg"}), 2, "--yaw: '12deg' is not a number"},
    {"armature",
     {"model", "render", "@MODEL@", "-o", "/nonexistent/dir/out.png"},
     2,
     "--output: .*folder '/nonexistent/dir' does not exist"},
    {"armature", {"model", "render", "@MODEL@", "-o", "@DIR@"}, 2, "--output: .*is a directory"},
    {"armature", {"model", "render", "/nonexistent.npz", "-o", "@DIR@/x.png"}, 2, "no such file"},
    {"armature", {"pose", "@MODEL@", "-o", "@DIR@/x.obj"}, 2, "--motion is required"},
    {"armature-viewer", {"--headless", "--motion", "@GARBAGE@"}, 1, "garbage.npz.*not a readable"},
    {"armature-viewer", {"--headless", "--screenshot-every", "5"}, 2, "--screenshot-every requires --screenshot"},
    {"armature-viewer",
     {"--headless", "--screenshot", "@DIR@/s.png", "--screenshot-every", "0"},
     2,
     "--screenshot-every"},
    {"armature-viewer", {"--headless", "--motion", "@MODEL@"}, 1, "not a motion file"},
    {"armature", {"pose", "@MODEL@", "--motion", "@GARBAGE@", "-o", "@DIR@/x.obj"}, 1, "garbage.npz.*not a readable"},
    {"armature", {"pose", "@MODEL@", "--motion", "@MODEL@", "-o", "@DIR@/x.obj"}, 1, "not a motion file"},
    {"armature", {"pose", "@MODEL@", "--motion", "@MOTION@", "-o", "@DIR@/x.txt"}, 1, "must end in .obj or .ply"},
    {"armature",
     {"pose", "@MODEL@", "--motion", "@MOTION@", "-o", "@DIR@/x.obj", "--frames", "4:2"},
     2,
     "--frames.*is empty"},
    {"armature",
     {"pose", "@MODEL@", "--motion", "@MOTION@", "-o", "@DIR@/x.obj", "--frames", "2-4"},
     2,
     "--frames.*not a frame range"},
    {"armature",
     {"pose", "@MODEL@", "--motion", "@MOTION@", "-o", "@DIR@/x.obj", "--frames", "9:"},
     1,
     "select nothing of its 5"},
    {"armature", {"pose", "@MODEL@", "--motion", "@MOTION@", "-o", "@DIR@/x.obj", "--fps", "nan"}, 2, "--fps"},
    {"armature",
     {"pose", "@MODEL@", "--motion", "@MOTION@", "-o", "@DIR@/x.obj", "--backend", "metal"},
     2,
     "--backend"},
    {"armature", {"model", "info", "/nonexistent.npz"}, 2, "'/nonexistent.npz': no such file"},
    {"armature", {"model", "info", "@FIFO@"}, 2, "is a FIFO, not a regular file"},
    {"armature", {"model", "info", "/dev/zero"}, 2, "'/dev/zero' is a character device, not a regular file"},
    {"armature", {"model", "info", "@DIR@"}, 2, "is a directory, not a regular file"},
    {"armature", {"model", "info", "@GARBAGE@"}, 1, "not a readable .npz"},
    {"armature", {"model", "info"}, 2, "file is required"},
    {"armature", {"model", "synth", "-o", "/nonexistent/x.npz"}, 2, "--output"},
    {"armature", {"model", "synth", "-o", "@DIR@/x.npz", "--seed", "-1"}, 2, "--seed: '-1' is not a decimal integer"},
    {"armature", {"model", "synth", "-o", "@DIR@/x.npz", "--seed", "abc"}, 2, "--seed"},
    // armature-viewer
    {"armature-viewer", {"--headless", "--size", "4294967297x2"}, 2, "--size: .*4294967297 is outside [1, 16384]"},
    {"armature-viewer", {"--headless", "--size", "64x48junk"}, 2, "--size: .*'48junk' is not a decimal integer"},
    {"armature-viewer", {"--headless", "--size", "0x10"}, 2, "--size"},
    {"armature-viewer", {"--headless", "--size", "-1x5"}, 2, "--size"},
    {"armature-viewer", {"--headless", "--size", "64"}, 2, "--size: '64' is not WxH"},
    {"armature-viewer", {"--headless", "--size", "x"}, 2, "--size"},
    {"armature-viewer", {"--headless", "--frames", "0"}, 2, "--frames"},
    {"armature-viewer", {"--headless", "--frames", "-1"}, 2, "--frames"},
    {"armature-viewer", {"--headless", "--frames", "many"}, 2, "--frames"},
    {"armature-viewer", {"--headless", "--avatars", "0"}, 2, "--avatars"},
    {"armature-viewer", {"--headless", "--avatars", "5000"}, 2, "--avatars"},
    {"armature-viewer", {"--headless", "--backend", "metal"}, 2, "--backend: metal not in"},
    {"armature-viewer", {"--headless", "--pose", "dance"}, 2, "--pose: dance not in"},
    {"armature-viewer", {"--headless", "--raster", "magic"}, 2, "--raster"},
    {"armature-viewer", {"--headless", "--screenshot", "/nonexistent/a.png"}, 2, "--screenshot: .*does not exist"},
    {"armature-viewer", {"--headless", "--profile", "/nonexistent/p.json"}, 2, "--profile: .*does not exist"},
    {"armature-viewer", {"--headless", "--profile", "@DIR@"}, 2, "--profile: .*is a directory"},
    {"armature-viewer", {"--headless", "--model", "/dev/zero"}, 2, "--model: .*character device"},
    {"armature-viewer", {"--headless", "--model", "@FIFO@"}, 2, "--model: .*FIFO"},
    {"armature-viewer", {"--headless", "--model", "@GARBAGE@", "--frames", "1"}, 1, "not a readable .npz"},
    {"armature-viewer", {"--gui-test", "/nonexistent"}, 2, "--gui-test: .*no such directory"},
    {"armature-viewer", {"--no-such-flag"}, 2, "no-such-flag"},
    {"armature-viewer", {"--headless", "--bake", "256"}, 2, "--bake: Value 256 not in range"},
    {"armature", {"bake", "--size", "256"}, 2, "--size: Value 256 not in range"},
    {"armature", {"motion", "synth", "walk", "--seconds", "0", "-o", "@DIR@/w.npz"}, 2, "--seconds"},
    // armature-bench
    {"armature-bench", {}, 2, "subcommand"},
    {"armature-bench", {"axpy", "--backend", "vulkan", "--iters", "0"}, 2, "--iters: Value 0 not in range"},
    {"armature-bench", {"axpy", "--backend", "vulkan", "--iters", "-1"}, 2, "--iters"},
    {"armature-bench", {"axpy", "--backend", "vulkan", "--iters", "lots"}, 2, "--iters"},
    {"armature-bench", {"axpy", "--backend", "cpu"}, 2, "--backend: cpu not in"},
    {"armature-bench", {"axpy", "--json", "/nonexistent/x.json"}, 2, "--json: .*does not exist"},
    {"armature-bench", {"skinning", "--batch", "-1"}, 2, "--batch: .*'-1' is not a decimal integer"},
    {"armature-bench", {"skinning", "--batch", ""}, 2, "--batch"},
    {"armature-bench", {"skinning", "--batch", "1,,2"}, 2, "--batch"},
    {"armature-bench", {"skinning", "--batch", "0"}, 2, "--batch: .*outside [1, 65536]"},
    {"armature-bench", {"skinning", "--batch", "99999999999"}, 2, "--batch"},
    {"armature-bench", {"skinning", "--objects", "0"}, 2, "--objects"},
    {"armature-bench", {"skinning", "--model", "/dev/zero"}, 2, "--model"},
    {"armature-bench", {"raster", "--scenes", "xyz"}, 2, "--scenes: scenes are letters of abc"},
    {"armature-bench", {"raster", "--scenes", ""}, 2, "--scenes"},
    {"armature-bench", {"pipeline", "--views", "0"}, 2, "--views"},
    {"armature-bench", {"hierarchy", "--sizes", "5"}, 2, "--sizes"},
    {"armature-bench", {"axpy", "--peak-flops", "0"}, 2, "--peak-flops"},
    {"armature-bench", {"axpy", "--peak-bandwidth", "nan"}, 2, "--peak-bandwidth"},
};
INSTANTIATE_TEST_SUITE_P(All, CliRejects, ::testing::ValuesIn(kBadInputs));

// A motion through the default avatar: an OBJ per frame and the joints, from the CPU reference; the Vulkan backend's
// meshes agree with it to within float skinning's error (1e-4 m on a body of ~1.7 m).
// The sample motion the docs use: made by the project, read back by `armature pose`; a walk moves forward, its
// joints change frame to frame, and it loops (its last frame is one step short of its first's pose).
TEST(Cli, MotionSynthWritesAWalkPoseReads) {
  const fs::path dir = scratch().dir / "synth";
  fs::create_directories(dir);
  const fs::path walk = dir / "walk.npz";
  Result synth = run("armature", {"motion", "synth", "walk", "--model", modelPath(), "--seconds", "1", "--fps", "20",
                                  "-o", walk.string()});
  ASSERT_EQ(synth.code, 0) << synth.output;
  EXPECT_NE(synth.output.find("20 frames at 20 fps"), std::string::npos) << synth.output;
  Result joints = run("armature", {"pose", modelPath(), "--motion", walk.string(), "--backend", "cpu", "-o",
                                   (dir / "joints.npy").string()});
  ASSERT_EQ(joints.code, 0) << joints.output;
  EXPECT_NE(joints.output.find("smplx parameters, 20 frames at 20 fps"), std::string::npos) << joints.output;
  std::ifstream f(dir / "joints.npy", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const armature::NpyArray a = armature::parseNpy(bytes.data(), bytes.size(), "joints.npy");
  ASSERT_EQ(a.shape, (std::vector<size_t>{20, 55, 3}));
  const auto joint = [&](size_t t, size_t j, size_t k) { return a.values[(t * 55 + j) * 3 + k]; };
  EXPECT_NEAR(joint(19, 0, 2) - joint(0, 0, 2), 1.1 * 19 / 20, 1e-6) << "the pelvis walks forward at 1.1 m/s";
  EXPECT_GT(std::abs(joint(5, 4, 2) - joint(15, 4, 2)), 0.05) << "the left knee swings";
  Result bad = run("armature", {"motion", "synth", "dance", "-o", walk.string()});
  EXPECT_EQ(bad.code, 2) << bad.output;
}

TEST(Cli, PoseWritesMeshesAndJoints) {
  const fs::path dir = scratch().dir / "pose";
  fs::create_directories(dir);
  Result cpu = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", "cpu",
                                "--frames", "1:4", "-o", (dir / "cpu.obj").string()});
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("AMASS SMPL+H sequence, 5 frames at 30 fps, mapped to SMPL-X"), std::string::npos)
      << cpu.output;
  auto vertices = [](const fs::path& obj) {
    std::vector<double> v;
    std::ifstream f(obj);
    for (std::string line; std::getline(f, line);)
      if (line.rfind("v ", 0) == 0) {
        double x, y, z;
        std::sscanf(line.c_str(), "v %lf %lf %lf", &x, &y, &z);
        v.insert(v.end(), {x, y, z});
      }
    return v;
  };
  for (const char* frame : {"cpu_00001.obj", "cpu_00002.obj", "cpu_00003.obj"})
    EXPECT_EQ(vertices(dir / frame).size(), 10475u * 3) << frame;
  EXPECT_FALSE(fs::exists(dir / "cpu_00000.obj"));
  EXPECT_NE(vertices(dir / "cpu_00001.obj"), vertices(dir / "cpu_00002.obj")) << "the motion moves";
  Result joints = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", "cpu", "-o",
                                   (dir / "joints.npy").string()});
  ASSERT_EQ(joints.code, 0) << joints.output;
  std::ifstream f(dir / "joints.npy", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const armature::NpyArray a = armature::parseNpy(bytes.data(), bytes.size(), "joints.npy");
  EXPECT_EQ(a.shape, (std::vector<size_t>{5, 55, 3}));
  // One frame as binary PLY: the header, then 12 bytes a vertex and 13 a face.
  Result ply = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", "cpu",
                                "--frames", "2:3", "-o", (dir / "one.ply").string()});
  ASSERT_EQ(ply.code, 0) << ply.output;
  std::ifstream plyFile(dir / "one.ply", std::ios::binary);
  std::string header;
  for (std::string line; std::getline(plyFile, line) && line != "end_header";) header += line + "\n";
  EXPECT_EQ(header.rfind("ply\nformat binary_little_endian 1.0\n", 0), 0u) << header;
  EXPECT_NE(header.find("element vertex 10475\n"), std::string::npos) << header;
  EXPECT_NE(header.find("element face 20908\n"), std::string::npos) << header;
  EXPECT_EQ(fs::file_size(dir / "one.ply"), header.size() + 11 + 10475u * 12 + 20908u * 13);
  {  // Vulkan runs everywhere the tests do (lavapipe in CI)
    Result gpu = run("armature",
                     {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", "vulkan", "--frames",
                      "1:2", "-o", (dir / "vk.obj").string()},
                     "ARMATURE_VALIDATION=1");
    ASSERT_EQ(gpu.code, 0) << gpu.output;
    EXPECT_EQ(gpu.output.find("vulkan validation"), std::string::npos) << gpu.output;
    const std::vector<double> want = vertices(dir / "cpu_00001.obj"), got = vertices(dir / "vk.obj");
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    EXPECT_LT(worst, 1e-4);
  }
}

// The same frame skinned by CUDA agrees with the CPU reference's to within float skinning's error.
TEST(Cli, PoseOnCudaMatchesTheReference) {
  if (auto why = armature::cudaUnavailable()) GTEST_SKIP() << "CUDA: " << *why;
  const fs::path dir = scratch().dir / "pose_cuda";
  fs::create_directories(dir);
  for (const char* backend : {"cpu", "cuda"}) {
    Result r = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", backend,
                                "--frames", "3:4", "-o", (dir / (std::string(backend) + ".csv")).string()});
    ASSERT_EQ(r.code, 0) << r.output;
  }
  auto values = [](const fs::path& csv) {
    std::vector<double> v;
    std::ifstream f(csv);
    std::string line;
    std::getline(f, line);  // the header
    for (unsigned frame, joint; std::getline(f, line);) {
      double x, y, z;
      std::sscanf(line.c_str(), "%u,%u,%lf,%lf,%lf", &frame, &joint, &x, &y, &z);
      v.insert(v.end(), {x, y, z});
    }
    return v;
  };
  const std::vector<double> want = values(dir / "cpu.csv"), got = values(dir / "cuda.csv");
  ASSERT_EQ(want.size(), 55u * 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "value " << i;
  Result glb = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", "cuda", "-o",
                                (dir / "cuda.glb").string()});
  ASSERT_EQ(glb.code, 0) << glb.output;
  EXPECT_NE(glb.output.find("vertex error against cuda skinning: max "), std::string::npos) << glb.output;
}

// A model in its .pkl release layout: listed (the strings marked unread) and posed, as its .npz would be.
TEST(Cli, PickledModelsAreListedAndPosed) {
  std::mt19937_64 rng(4);
  const armature::BodyModel model = armature::test::randomBodyModel(60, 55, 10, 10, rng);
  const fs::path pkl = scratch().dir / "released.pkl";
  const std::vector<uint8_t> bytes = armature::test::pickleBodyModel(model, 2);
  std::ofstream(pkl, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  Result info = run("armature", {"model", "info", pkl.string()});
  ASSERT_EQ(info.code, 0) << info.output;
  EXPECT_NE(info.output.find("SMPL-X model"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("bs_style"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("str    () *"), std::string::npos) << info.output;
  Result pose = run("armature", {"pose", pkl.string(), "--motion", scratch().motion.string(), "--backend", "cpu",
                                 "--frames", "0:1", "-o", (scratch().dir / "from_pkl.obj").string()});
  EXPECT_EQ(pose.code, 0) << pose.output;
  EXPECT_TRUE(fs::exists(scratch().dir / "from_pkl.obj"));
}

// The motion as a skinned, animated glTF on each backend: the binary glTF header, the file's own length, and the
// vertex error against that backend's skinning reported (pose correctives are what glTF skinning lacks: millimetres,
// not metres).
TEST(Cli, PoseWritesAnAnimatedGlb) {
  const fs::path dir = scratch().dir / "glb";
  fs::create_directories(dir);
  for (const char* backend : {"cpu", "vulkan"}) {
    const fs::path out = dir / (std::string(backend) + ".glb");
    Result r = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", backend,
                                "--influences", "8", "-o", out.string()});
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("glb: 55 joints, 8 influences per vertex"), std::string::npos) << r.output;
    double maxMm = -1, meanMm = -1;
    const size_t at = r.output.find("skinning: max ");
    ASSERT_NE(at, std::string::npos) << r.output;
    ASSERT_EQ(std::sscanf(r.output.c_str() + at, "skinning: max %lf mm, mean %lf mm", &maxMm, &meanMm), 2) << r.output;
    EXPECT_GT(maxMm, 0.0);
    EXPECT_LT(maxMm, 100.0) << "the export should differ from our skinning by the correctives only";
    EXPECT_LE(meanMm, maxMm);
    std::ifstream f(out, std::ios::binary);
    uint32_t header[3] = {};
    f.read(reinterpret_cast<char*>(header), sizeof header);
    EXPECT_EQ(header[0], 0x46546C67u);  // "glTF"
    EXPECT_EQ(header[1], 2u);
    EXPECT_EQ(header[2], fs::file_size(out));
  }
}

// fit-field on each GPU backend: 20 Gaussians, 300 iterations on 1,024 samples of the default avatar. The loss
// falls (the last progress line's is under 70% of the first's), the held-out IoU beats 0.4 (20 round-started
// Gaussians reach ~0.6 on 2,048 samples), and the field's file holds its four arrays.
TEST(Cli, FitFieldFitsTheAvatarsOccupancy) {
  std::vector<std::string> backends = {"vulkan"};
  if (!armature::cudaUnavailable()) backends.push_back("cuda");
  for (const std::string& backend : backends) {
    const fs::path out = scratch().dir / ("field_" + backend + ".npz");
    Result r = run("armature", {"fit-field", "--model", modelPath(), "--backend", backend, "--gaussians", "20",
                                "--iterations", "300", "--samples", "1024", "--log-every", "100", "-o", out.string()});
    ASSERT_EQ(r.code, 0) << r.output;
    std::vector<double> losses;
    for (size_t at = r.output.find("loss "); at != std::string::npos; at = r.output.find("loss ", at + 1))
      losses.push_back(std::atof(r.output.c_str() + at + 5));
    ASSERT_EQ(losses.size(), 3u) << r.output;
    EXPECT_LT(losses.back(), 0.7 * losses.front()) << r.output;
    const size_t at = r.output.find("held-out samples: ");
    ASSERT_NE(at, std::string::npos) << r.output;
    EXPECT_GT(std::atof(r.output.c_str() + at + 18), 0.4) << r.output;
    const armature::NpzArchive field = armature::readNpz(out.string());
    EXPECT_EQ(field.at("means").shape, (std::vector<size_t>{20, 3}));
    EXPECT_EQ(field.at("cholesky").shape, (std::vector<size_t>{20, 6}));
    EXPECT_EQ(field.at("weights").shape, (std::vector<size_t>{20, 1}));
    EXPECT_EQ(field.at("bounds").shape, (std::vector<size_t>{2, 3}));
  }
  if (armature::cudaUnavailable()) std::printf("[ cuda ] not run: %s\n", armature::cudaUnavailable()->c_str());
  Result bad = run("armature", {"fit-field", "--backend", "cpu"});
  EXPECT_EQ(bad.code, 2) << bad.output;
}

// fit-field's other targets on each GPU backend: the avatar's band-limited signed distance (20 Gaussians reach ~0.5
// on 1,024 samples), and a volume file the test writes: a Gaussian bump 1.5·exp(−½‖D⁻¹(x − c)‖²) off the box's
// centre (c = (0.2, −0.1, 0), D = diag(0.45, 0.3, 0.25)) on a 24³ grid. One Gaussian fits it (IoU ~0.95) and lands
// on c, which a volume read in the wrong order or sampled at the wrong place would miss. Refused: a volume with
// --target, and a volume file of the wrong shape (named in the message).
TEST(Cli, FitFieldFitsADistanceAndAVolume) {
  const fs::path volume = scratch().dir / "bump.npz";
  std::vector<double> values;
  const size_t n = 24;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < n; ++k) {
        auto centre = [&](size_t c) { return (double(c) + 0.5) / double(n) * 2 - 1; };
        const double x = (centre(i) - 0.2) / 0.45, y = (centre(j) + 0.1) / 0.3, z = centre(k) / 0.25;
        values.push_back(1.5 * std::exp(-0.5 * (x * x + y * y + z * z)));
      }
  armature::writeNpz(volume.string(), {{"volume", {{n, n, n}, armature::NpyType::F32, values}},
                                       {"bounds", {{2, 3}, armature::NpyType::F32, {-1, -1, -1, 1, 1, 1}}}});
  auto iouOf = [](const Result& r) {
    const size_t at = r.output.find("held-out samples: ");
    return at == std::string::npos ? -1.0 : std::atof(r.output.c_str() + at + 18);
  };
  std::vector<std::string> backends = {"vulkan"};
  if (!armature::cudaUnavailable()) backends.push_back("cuda");
  for (const std::string& backend : backends) {
    Result r = run("armature", {"fit-field", "--backend", backend, "--model", modelPath(), "--target", "distance",
                                "--gaussians", "20", "--iterations", "300", "--samples", "1024"});
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("to the signed distance (band "), std::string::npos) << r.output;
    EXPECT_GT(iouOf(r), 0.4) << r.output;
    const fs::path out = scratch().dir / ("bump_" + backend + ".npz");
    r = run("armature", {"fit-field", "--backend", backend, "--volume", volume.string(), "--gaussians", "1",
                         "--iterations", "300", "--samples", "1024", "-o", out.string()});
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_GT(iouOf(r), 0.85) << r.output;
    const std::vector<double> mean = armature::readNpz(out.string()).at("means").values;
    ASSERT_EQ(mean.size(), 3u);
    EXPECT_NEAR(mean[0], 0.2, 0.05);
    EXPECT_NEAR(mean[1], -0.1, 0.05);
    EXPECT_NEAR(mean[2], 0.0, 0.05);
  }
  Result both =
      run("armature", {"fit-field", "--backend", "vulkan", "--volume", volume.string(), "--target", "distance"});
  EXPECT_NE(both.code, 0);
  EXPECT_NE(both.output.find("--volume is the target itself"), std::string::npos) << both.output;
  const fs::path flat = scratch().dir / "flat.npz";
  armature::writeNpz(flat.string(), {{"volume", {{4, 4}, armature::NpyType::F32, std::vector<double>(16, 1.0)}},
                                     {"bounds", {{2, 3}, armature::NpyType::F32, {0, 0, 0, 1, 1, 1}}}});
  Result bad = run("armature", {"fit-field", "--backend", "vulkan", "--volume", flat.string()});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.output.find("volume is (4, 4), expected (X,Y,Z)"), std::string::npos) << bad.output;
}

// bake on each GPU backend, small: 4 views of 128² into a 512² atlas of the default avatar. Most of the texels on
// charts are seen (~70%: so few coarse views see little squarely enough, and nothing where an edge crosses the
// bilinear footprint), the texture, the views and the preview are written, and a CPU backend is refused.
TEST(Cli, BakeWritesTheTexture) {
  std::vector<std::string> backends = {"vulkan"};
  if (!armature::cudaUnavailable()) backends.push_back("cuda");
  for (const std::string& backend : backends) {
    const fs::path texture = scratch().dir / ("baked_" + backend + ".png"),
                   views = scratch().dir / ("views_" + backend + ".png"),
                   preview = scratch().dir / ("preview_" + backend + ".png");
    Result r = run("armature", {"bake", "--model", modelPath(), "--backend", backend, "--size", "512", "--views", "4",
                                "--view-size", "128", "--timing-runs", "2", "-o", texture.string(), "--views-png",
                                views.string(), "--preview", preview.string()});
    ASSERT_EQ(r.code, 0) << r.output;
    const size_t at = r.output.find("% of them seen");
    ASSERT_NE(at, std::string::npos) << r.output;
    const size_t start = r.output.rfind(' ', at);
    EXPECT_GT(std::atof(r.output.c_str() + start + 1), 60.0) << r.output;
    for (const fs::path& p : {texture, views, preview}) EXPECT_GT(fs::file_size(p), 1000u) << p;
  }
  if (armature::cudaUnavailable()) std::printf("[ cuda ] not run: %s\n", armature::cudaUnavailable()->c_str());
  Result bad = run("armature", {"bake", "--backend", "cpu"});
  EXPECT_EQ(bad.code, 2) << bad.output;
}

// A rigged glTF the suite writes itself (the default avatar and the test motion, 8 influences) played through joint
// propagation and linear blend skinning on each backend: every frame within 1e-5 of the largest coordinate of the
// double reference, a mesh per frame written; a clip past the file's is refused.
TEST(Cli, GltfCharacterPlaysThroughPropagationAndSkinning) {
  const fs::path dir = scratch().dir / "gltf_play";
  fs::create_directories(dir);
  const fs::path glb = dir / "avatar.glb";
  Result made = run("armature", {"pose", modelPath(), "--motion", scratch().motion.string(), "--backend", "cpu",
                                 "--influences", "8", "-o", glb.string()});
  ASSERT_EQ(made.code, 0) << made.output;
  std::vector<std::string> backends = {"vulkan"};
  if (!armature::cudaUnavailable()) backends.push_back("cuda");
  for (const std::string& backend : backends) {
    Result r = run("armature", {"gltf", glb.string(), "--backend", backend, "--fps", "60", "-o",
                                (dir / (backend + ".obj")).string()});
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("55 joints (depth 11), 10475 vertices, 8 influences"), std::string::npos) << r.output;
    const size_t at = r.output.find("largest difference from the double reference ");
    ASSERT_NE(at, std::string::npos) << r.output;
    double worst = -1, relative = -1;
    ASSERT_EQ(
        std::sscanf(r.output.c_str() + at, "largest difference from the double reference %lf (%lf", &worst, &relative),
        2)
        << r.output;
    EXPECT_GE(worst, 0.0);
    EXPECT_LT(relative, 1e-5) << r.output;
    EXPECT_TRUE(fs::exists(dir / (backend + "_00008.obj"))) << r.output;  // the last of 9 frames
  }
  if (armature::cudaUnavailable()) std::printf("[ cuda ] not run: %s\n", armature::cudaUnavailable()->c_str());
  // The viewer's window plays it as a crowd, under a virtual X server with the validation layer on.
  if (std::system("command -v xvfb-run >/dev/null 2>&1") == 0) {
    Result window = run("armature-viewer",
                        {"--model", glb.string(), "--avatars", "4", "--gui-test", dir.string(), "--backend", "vulkan",
                         "--size", "1000x650"},
                        "ARMATURE_VALIDATION=1 xvfb-run -a -s '-screen 0 1280x800x24'", 300);
    EXPECT_EQ(window.code, 0) << window.output;
    EXPECT_NE(window.output.find("gui test (glTF)"), std::string::npos) << window.output;
    EXPECT_EQ(window.output.find("vulkan validation"), std::string::npos) << window.output;
  } else {
    std::printf("[ window ] not run: no xvfb-run (scripts/install-deps.sh installs it)\n");
  }
  Result bad = run("armature", {"gltf", glb.string(), "--clip", "3", "--backend", "cpu"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.output.find("clip 3 of 1"), std::string::npos) << bad.output;
}

// Headless camera presets: a crowd seen from the front, the side and above gives three different images.
TEST(Cli, HeadlessCameraViewsDiffer) {
  std::vector<std::string> images;
  for (const char* view : {"front", "side", "top"}) {
    const fs::path shot = scratch().dir / (std::string("view_") + view + ".png");
    Result r = run("armature-viewer", {"--headless", "--frames", "1", "--size", "64x48", "--backend", "vulkan",
                                       "--avatars", "4", "--view", view, "--screenshot", shot.string()});
    ASSERT_EQ(r.code, 0) << r.output;
    std::ifstream f(shot, std::ios::binary);
    images.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_GT(images.back().size(), 100u);
  }
  EXPECT_NE(images[0], images[1]);
  EXPECT_NE(images[0], images[2]);
  EXPECT_NE(images[1], images[2]);
  EXPECT_EQ(run("armature-viewer", {"--headless", "--view", "diagonal"}).code, 2);
}

// The viewer plays a motion headless: a crowd of three at their own phases, the file's description printed.
TEST(Cli, HeadlessViewerPlaysAMotion) {
  fs::path shot = scratch().dir / "motion.png";
  Result r = run("armature-viewer",
                 {"--headless", "--frames", "3", "--size", "48x32", "--backend", "vulkan", "--avatars", "3", "--motion",
                  scratch().motion.string(), "--screenshot", shot.string()},
                 "ARMATURE_VALIDATION=1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("AMASS SMPL+H sequence, 5 frames at 30 fps, mapped to SMPL-X, turned y-up"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("vulkan validation"), std::string::npos) << r.output;
  EXPECT_GT(fs::file_size(shot), 50u);
  // Every second frame as well, numbered: frames 0 and 2 of 3.
  Result every =
      run("armature-viewer", {"--headless", "--frames", "3", "--size", "48x32", "--backend", "vulkan", "--motion",
                              scratch().motion.string(), "--screenshot", shot.string(), "--screenshot-every", "2"});
  EXPECT_EQ(every.code, 0) << every.output;
  EXPECT_TRUE(fs::exists(scratch().dir / "motion_00000.png"));
  EXPECT_FALSE(fs::exists(scratch().dir / "motion_00001.png"));
  EXPECT_TRUE(fs::exists(scratch().dir / "motion_00002.png"));
}

// A CUDA benchmark without CUDA is a failure with the reason, not a success that measured nothing.
TEST(Cli, CudaBenchmarkWithoutCudaFailsWithTheReason) {
  if (!armature::cudaUnavailable()) GTEST_SKIP() << "CUDA is available here: the smoke runs cover it";
  Result r = run("armature-bench", {"axpy", "--backend", "cuda", "--iters", "2"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("CUDA unavailable"), std::string::npos) << r.output;
  // Without any NVIDIA driver a CUDA build's reason says so (the runtime's own words would ask for a newer driver);
  // a build without CUDA says that instead.
  const bool cudaBuild = armature::cudaUnavailable()->find("this build has no CUDA") == std::string::npos;
  if (cudaBuild && !fs::exists("/proc/driver/nvidia/version")) {
    EXPECT_NE(r.output.find("no NVIDIA driver is installed"), std::string::npos) << r.output;
  }
}

TEST(Cli, HeadlessRunWritesItsOutputs) {
  fs::path shot = scratch().dir / "shot.png", profile = scratch().dir / "profile.json";
  Result r = run("armature-viewer",
                 {"--headless", "--frames", "2", "--size", "48x32", "--backend", "vulkan", "--screenshot",
                  shot.string(), "--profile", profile.string()},
                 "ARMATURE_VALIDATION=1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("vulkan validation"), std::string::npos) << r.output;
  EXPECT_GT(fs::file_size(shot), 50u);
  EXPECT_TRUE(nlohmann::json::parse(std::ifstream(profile)).contains("traceEvents"));
}

// Every benchmark op end to end with two timed calls, under the validation layer: any validation message, a
// non-zero exit or a JSON without rows fails. (A zero-sized query pool from --iters 0 went unnoticed without it.)
struct Smoke {
  std::string name;
  std::vector<std::string> args;
  bool cuda = false;
  bool validation = true;  // off for interop: the layer cannot see CUDA's signals on shared timelines, so it
                           // reports waits on them as errors that are not
};
std::ostream& operator<<(std::ostream& os, const Smoke& s) { return os << s.name; }
class BenchSmoke : public ::testing::TestWithParam<Smoke> {};

TEST_P(BenchSmoke, RunsCleanUnderValidation) {
  const Smoke& s = GetParam();
  if (s.cuda)
    if (auto why = armature::cudaUnavailable()) GTEST_SKIP() << "CUDA: " << *why;
  fs::path json = scratch().dir / ("bench_" + s.name + ".json");
  std::vector<std::string> args = s.args;
  args.insert(args.end(), {"--iters", "2", "--json", json.string()});
  Result r = run("armature-bench", args, s.validation ? "ARMATURE_VALIDATION=1" : "", 900);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("vulkan validation"), std::string::npos) << r.output;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(json));
  ASSERT_FALSE(doc.at("results").empty()) << r.output;
  for (const auto& row : doc["results"]) EXPECT_GT(double(row.at("median_ms")), 0.0) << row.dump();
}

const Smoke kSmokes[] = {
    {"axpy_vulkan", {"axpy", "--backend", "vulkan"}},
    {"skinning_vulkan", {"skinning", "--backend", "vulkan", "--batch", "1,3", "--backward"}},
    {"skinning_cpu", {"skinning", "--backend", "cpu", "--batch", "1"}},
    {"raster_vulkan", {"raster", "--backend", "vulkan", "--scenes", "b"}},
    {"pipeline_vulkan", {"pipeline", "--backend", "vulkan", "--views", "1"}},
    {"hierarchy", {"hierarchy", "--sizes", "64"}},
    {"joint_propagation_vulkan", {"joint_propagation", "--backend", "vulkan", "--workloads", "random100k"}},
    {"axpy_cuda", {"axpy", "--backend", "cuda"}, true},
    {"skinning_cuda", {"skinning", "--backend", "cuda", "--batch", "1,3", "--backward"}, true},
    {"raster_cuda", {"raster", "--backend", "cuda", "--scenes", "b"}, true},
    {"pipeline_cuda", {"pipeline", "--backend", "cuda", "--views", "1"}, true},
    {"joint_propagation_cuda", {"joint_propagation", "--backend", "cuda"}, true},
    {"gaussian_vulkan", {"gaussian", "--backend", "vulkan", "--sizes", "300x200"}},
    {"gaussian_cuda", {"gaussian", "--backend", "cuda", "--sizes", "1000x500"}, true},
    {"interop", {"interop"}, true, false},
};
INSTANTIATE_TEST_SUITE_P(Ops, BenchSmoke, ::testing::ValuesIn(kSmokes),
                         [](const ::testing::TestParamInfo<Smoke>& i) { return i.param.name; });

}  // namespace
