// Crafted files, one per class of docs/readers.md, each built here in code and handed to the command that reads
// it, as a hostile user would: the command must exit 1 or 2 (never a signal), print a message naming the file and
// what is wrong, stay under a memory bound and finish in seconds. The same limits hold under the sanitizers.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "armature/body/npz.h"
#include "armature/ops/texture_bake.h"
#include "support/pickle_writer.h"

namespace {

namespace fs = std::filesystem;
using armature::NpyType;
using armature::test::PickleWriter;
using json = nlohmann::json;

// Far below what the crafted files claim (gigabytes), above a command's own footprint under ASan: a command that
// loads the default avatar holds ~700 MiB of it as doubles (~1 GiB under ASan); one that reads only the crafted
// file a few MiB, though the peak also counts this process's pages at the fork (up to ~200 MiB under ASan).
constexpr double kPeakMiB = 2048, kReaderPeakMiB = 512;
constexpr double kSeconds = 30;  // a few seconds in a Release build; the sanitizers are several times slower

struct Outcome {
  int code = -1;  // exit code, or 128 + the signal
  std::string output;
  double peakMiB = 0, seconds = 0;
};

const fs::path& binDir() {
  static const fs::path dir = fs::read_symlink("/proc/self/exe").parent_path();
  return dir;
}

// Runs bin/<exe> in `cwd` with `env` added, its output to a file; the peak RSS is the child's (wait4).
Outcome run(const std::string& exe, const std::vector<std::string>& args, const fs::path& cwd,
            const std::vector<std::string>& env = {}) {
  const fs::path log = cwd / "output.txt";
  const auto start = std::chrono::steady_clock::now();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(120);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    FILE* out = std::fopen(log.c_str(), "w");
    if (!out) _exit(121);
    dup2(fileno(out), 1), dup2(fileno(out), 2);
    const std::string path = (binDir() / exe).string();
    std::vector<std::string> all = {"timeout", "-k", "5", "120", path};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("timeout", argv.data());
    _exit(122);
  }
  Outcome o;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.peakMiB = double(usage.ru_maxrss) / 1024.0;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(log);
  o.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return o;
}

// A folder of its own for each test, removed after.
struct Folder {
  fs::path dir = fs::temp_directory_path() / ("armature_hostile_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Folder() { fs::create_directories(dir); }
  ~Folder() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return dir / name;
  }
};

// Refused as the class demands: exit 1 or 2, every part of `message` in the output, within the bounds.
void expectRefused(const Outcome& o, const std::vector<std::string>& message, double peakMiB = kReaderPeakMiB) {
  EXPECT_TRUE(o.code == 1 || o.code == 2) << "exit " << o.code << ": " << o.output;
  for (const std::string& part : message) EXPECT_NE(o.output.find(part), std::string::npos) << o.output;
  EXPECT_LT(o.peakMiB, peakMiB) << o.output;
  EXPECT_LT(o.seconds, kSeconds) << o.output;
  std::printf("exit %d, %.0f MiB, %.2f s: %s", o.code, o.peakMiB, o.seconds, o.output.c_str());
}

std::string base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= uint8_t(bytes[i + 2]);
    out += k[v >> 18], out += k[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? k[v & 63] : '=';
  }
  return out;
}

// A small valid rigged glTF: one triangle on two joints, a rotation clip of two keys. Its buffer's sections:
// positions @0 (3 vec3), joints @36 (3 u8 vec4), weights @48 (3 vec4), times @96 (2), rotations @104 (2 vec4).
struct Gltf {
  std::string buffer = std::string(136, '\0');
  json doc;
  Gltf() {
    const float positions[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0}, weights[12] = {1, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 1, 0, 0};
    const uint8_t joints[12] = {0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0};
    const float times[2] = {0, 1}, rotations[8] = {0, 0, 0, 1, 0, 0, 0.7071f, 0.7071f};
    std::memcpy(&buffer[0], positions, 36), std::memcpy(&buffer[36], joints, 12);
    std::memcpy(&buffer[48], weights, 48), std::memcpy(&buffer[96], times, 8);
    std::memcpy(&buffer[104], rotations, 32);
    auto view = [](int offset, int length) {
      return json{{"buffer", 0}, {"byteOffset", offset}, {"byteLength", length}};
    };
    auto accessor = [](int v, int type, int count, const char* shape) {
      return json{{"bufferView", v}, {"componentType", type}, {"count", count}, {"type", shape}};
    };
    doc = {{"asset", {{"version", "2.0"}}},
           {"scene", 0},
           {"scenes", {{{"nodes", {0, 1}}}}},
           {"nodes",
            {{{"mesh", 0}, {"skin", 0}},
             {{"name", "root"}, {"children", {2}}},
             {{"name", "child"}, {"translation", {0, 1, 0}}}}},
           {"skins", {{{"joints", {1, 2}}}}},
           {"meshes", {{{"primitives", {{{"attributes", {{"POSITION", 0}, {"JOINTS_0", 1}, {"WEIGHTS_0", 2}}}}}}}}},
           {"animations",
            {{{"name", "turn"},
              {"samplers", {{{"input", 3}, {"output", 4}}}},
              {"channels", {{{"sampler", 0}, {"target", {{"node", 2}, {"path", "rotation"}}}}}}}}},
           {"bufferViews", {view(0, 36), view(36, 12), view(48, 48), view(96, 8), view(104, 32)}},
           {"accessors",
            {accessor(0, 5126, 3, "VEC3"), accessor(1, 5121, 3, "VEC4"), accessor(2, 5126, 3, "VEC4"),
             accessor(3, 5126, 2, "SCALAR"), accessor(4, 5126, 2, "VEC4")}}};
  }
  void putFloat(size_t at, float x) { std::memcpy(&buffer[at], &x, 4); }
  std::string text() const {
    json d = doc;
    if (!d.contains("buffers"))
      d["buffers"] = {
          {{"byteLength", buffer.size()}, {"uri", "data:application/octet-stream;base64," + base64(buffer)}}};
    return d.dump();
  }
};

Outcome playGltf(const Folder& f, const Gltf& g, const std::vector<std::string>& extra = {}) {
  const fs::path path = f.write("character.gltf", g.text());
  std::vector<std::string> args = {"gltf", path.string(), "--backend", "cpu"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run("armature", args, f.dir);
}

TEST(HostileFiles, AValidGltfPlays) {  // the base every case below changes one thing of
  Folder f;
  const Outcome o = playGltf(f, Gltf());
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("2 joints"), std::string::npos) << o.output;
}

// Class 1: a count whose size arithmetic wraps (stride × (count − 1) with count 2^62 + 1).
TEST(HostileFiles, GltfCountsThatWrapAreRefused) {
  Folder f;
  Gltf g;
  g.doc["accessors"][0]["count"] = (uint64_t(1) << 62) + 1;
  expectRefused(playGltf(f, g), {"character.gltf", "POSITION (accessor 0)", "does not fit 64 bits"});
}

// Class 2: buffers outside the file's folder, by "..", by an absolute path and by a symlink, are never opened;
// data URIs still work (every other case uses one).
TEST(HostileFiles, GltfPathsOutsideItsFolderAreRefused) {
  Folder f;
  fs::create_directories(f.dir / "model");
  f.write("secret.bin", std::string(136, '\x01'));
  fs::create_symlink(f.dir / "secret.bin", f.dir / "model" / "link.bin");
  // An absolute path is joined to the folder by tinygltf, and then names nothing there.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"../secret.bin", "outside the glTF's folder"},
      {"link.bin", "outside the glTF's folder"},
      {(f.dir / "secret.bin").string(), "not a readable glTF file"}};
  for (const auto& [uri, refusal] : cases) {
    SCOPED_TRACE(uri);
    Gltf g;
    g.doc["buffers"] = {{{"byteLength", 136}, {"uri", uri}}};
    std::ofstream(f.dir / "model" / "character.gltf") << g.text();
    const Outcome o =
        run("armature", {"gltf", (f.dir / "model" / "character.gltf").string(), "--backend", "cpu"}, f.dir / "model");
    expectRefused(o, {"character.gltf", refusal});
    EXPECT_EQ(o.output.find(std::string(136, '\x01')), std::string::npos);
  }
  // Inside the folder, an external buffer is read.
  Gltf g;
  g.doc["buffers"] = {{{"byteLength", 136}, {"uri", "buffer.bin"}}};
  std::ofstream(f.dir / "model" / "buffer.bin", std::ios::binary) << g.buffer;
  std::ofstream(f.dir / "model" / "character.gltf") << g.text();
  const Outcome ok =
      run("armature", {"gltf", (f.dir / "model" / "character.gltf").string(), "--backend", "cpu"}, f.dir);
  EXPECT_EQ(ok.code, 0) << ok.output;
}

// Class 3: an accessor without a view is zeros of `count` elements: 2e8 of them are refused before allocating.
TEST(HostileFiles, GltfAllocationsPastTheBudgetAreRefused) {
  Folder f;
  Gltf g;
  g.doc["accessors"][0].erase("bufferView");
  g.doc["accessors"][0]["count"] = 200000000;
  expectRefused(playGltf(f, g), {"character.gltf", "POSITION (accessor 0)", "over the limit"});
}

// Class 3: key times spanning a million seconds would be 30 M frames at 30 fps.
TEST(HostileFiles, GltfClipsTooLongToSampleAreRefused) {
  Folder f;
  Gltf g;
  g.putFloat(100, 3e4f);  // 8 hours: 900,000 frames at 30 fps
  expectRefused(playGltf(f, g), {"character.gltf", "frames", "ARMATURE_MAX_FRAMES"});
  g.putFloat(100, INFINITY);
  expectRefused(playGltf(f, g), {"character.gltf", "key times", "not a finite number"});
}

// Class 5: JSON nested 100,000 deep in extras is refused before tinygltf's recursive parser sees it.
TEST(HostileFiles, DeepGltfJsonIsRefused) {
  Folder f;
  std::string text = Gltf().text();
  text.insert(1, "\"extras\":" + std::string(100000, '[') + std::string(100000, ']') + ",");
  const fs::path path = f.write("deep.gltf", text);
  expectRefused(run("armature", {"gltf", path.string(), "--backend", "cpu"}, f.dir),
                {"deep.gltf", "nests 100001 deep", "limit of 128"});
}

// Class 6: garbage values: NaN positions, a negative float joint index, a sparse accessor.
TEST(HostileFiles, GltfGarbageValuesAreRefused) {
  Folder f;
  Gltf nan;
  nan.putFloat(4, NAN);
  expectRefused(playGltf(f, nan), {"character.gltf", "POSITION: element 1", "not a finite number"});
  Gltf joint;  // JOINTS_0 read as floats from the weights' bytes, the first made -1
  joint.doc["accessors"][1]["componentType"] = 5126;
  joint.doc["accessors"][1]["bufferView"] = 2;
  joint.putFloat(48, -1.0f);
  expectRefused(playGltf(f, joint), {"character.gltf", "JOINTS_0: vertex 0 names joint -1"});
  Gltf sparse;
  sparse.doc["accessors"][0]["sparse"] = {
      {"count", 1}, {"indices", {{"bufferView", 1}, {"componentType", 5121}}}, {"values", {{"bufferView", 0}}}};
  expectRefused(playGltf(f, sparse), {"character.gltf", "POSITION (accessor 0)", "sparse accessors are not read"});
}

// Class 6 and 3: a motion whose poses are 1e300, and one whose frame rate resamples to millions of frames.
TEST(HostileFiles, MotionGarbageAndResamplingBombsAreRefused) {
  const char* model = std::getenv("ARMATURE_DEFAULT_MODEL");
  ASSERT_TRUE(model) << "ARMATURE_DEFAULT_MODEL names the default avatar (set by ctest)";
  Folder f;
  std::vector<double> poses(2 * 165, 0.1);
  poses[7] = 1e300;
  armature::writeNpz((f.dir / "huge.npz").string(), {{"poses", {{2, 165}, NpyType::F64, poses}}});
  expectRefused(run("armature", {"pose", model, "--motion", "huge.npz", "-o", "out.npy", "--backend", "cpu"}, f.dir),
                {"huge.npz", "the pose: element 7 is 1e+300"}, kPeakMiB);
  armature::writeNpz((f.dir / "slow.npz").string(), {{"poses", {{2, 165}, NpyType::F64, std::vector<double>(330)}},
                                                     {"mocap_framerate", {{}, NpyType::F64, {3e-5}}}});
  expectRefused(run("armature",
                    {"pose", model, "--motion", "slow.npz", "--fps", "30", "-o", "out.npy", "--backend", "cpu"}, f.dir),
                {"resampling 2 frames", "over the limit of 500000", "ARMATURE_MAX_FRAMES"}, kPeakMiB);
}

// Class 3: budgets count what is held (doubles), not the file's bytes: a 1-byte dtype deflates 8x past them. The
// budget is lowered through the environment (the model still fits): 48 M bytes held as 384 MiB of doubles.
TEST(HostileFiles, BudgetsCountDecodedDoubles) {
  const char* model = std::getenv("ARMATURE_DEFAULT_MODEL");
  ASSERT_TRUE(model);
  Folder f;
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (50331648,), }";
  header.resize(128 - 10 - 1, ' ');
  header = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() + 1) + '\0' + header + '\n';
  std::vector<uint8_t> bytes(header.begin(), header.end());
  bytes.resize(bytes.size() + (48 << 20), 0);
  armature::writeNpzEntries((f.dir / "bytes.npz").string(), {{"poses", bytes}}, /*deflate=*/true);
  EXPECT_LT(fs::file_size(f.dir / "bytes.npz"), 200000u);
  expectRefused(run("armature", {"pose", model, "--motion", "bytes.npz", "-o", "out.npy", "--backend", "cpu"}, f.dir,
                    {"ARMATURE_READ_BUDGET_MIB=512"}),
                {"bytes.npz", "'poses'", "384.0 MiB once decoded", "256.0 MiB an entry", "ARMATURE_READ_BUDGET_MIB"},
                kPeakMiB);
  const Outcome bad = run("armature", {"pose", model, "--motion", "bytes.npz", "-o", "out.npy"}, f.dir,
                          {"ARMATURE_READ_BUDGET_MIB=lots"});
  expectRefused(bad, {"ARMATURE_READ_BUDGET_MIB='lots'", "a whole number"});
}

// Output amplification: one mesh a frame past kMaxUnrangedOutputFiles needs an explicit range.
TEST(HostileFiles, OneFileAFrameNeedsARangePastAThousand) {
  const char* model = std::getenv("ARMATURE_DEFAULT_MODEL");
  ASSERT_TRUE(model);
  Folder f;
  armature::writeNpz((f.dir / "long.npz").string(),
                     {{"poses", {{1500, 165}, NpyType::F32, std::vector<double>(1500 * 165)}}});
  expectRefused(run("armature", {"pose", model, "--motion", "long.npz", "-o", "x.obj", "--backend", "cpu"}, f.dir),
                {"x.obj", "1500 frames", "--frames"}, kPeakMiB);
  EXPECT_FALSE(fs::exists(f.dir / "x_00000.obj"));
}

// Class 1 in pickles: a sparse matrix whose shape product wraps to 0 (each dimension passing on its own), and an
// ndarray whose shape product wraps.
TEST(HostileFiles, PickledShapesThatWrapAreRefused) {
  Folder f;
  PickleWriter sparse(2);
  sparse.op('}');
  sparse.op('(');
  sparse.str("v_template");
  sparse.object("scipy.sparse.csc", "csc_matrix", [&] {
    sparse.str("_shape");
    sparse.tuple({int64_t(1) << 40, int64_t(1) << 24});
    for (const char* part : {"data", "indices", "indptr"}) {
      sparse.str(part);
      sparse.array({{1}, NpyType::F64, {0}});
    }
  });
  sparse.op('u');
  PickleWriter array(4);
  array.op('}');
  array.op('(');
  array.str("v_template");
  array.array({size_t(1) << 32, size_t(1) << 32}, "f4", {});
  array.op('u');
  for (PickleWriter* w : {&sparse, &array}) {
    const std::vector<uint8_t> b = w->bytes();
    const fs::path path = f.write("wrap.pkl", std::string(b.begin(), b.end()));
    expectRefused(run("armature", {"model", "info", path.string()}, f.dir),
                  {"wrap.pkl", "'v_template'", "does not fit 64 bits"});
  }
}

// Class 4: many keys naming one memoised list of a million numbers: describing the file is linear in it.
TEST(HostileFiles, PickleDescriptionIsLinear) {
  Folder f;
  PickleWriter w(4);
  w.op('}');
  w.op('(');
  w.str("big");
  w.op(']');
  const int list = w.memo();
  w.op('(');
  for (int i = 0; i < 1000000; ++i) w.op('N');  // None: not numbers, so every key's description walks it
  w.op('e');
  for (int k = 0; k < 2000; ++k) {
    w.str("key" + std::to_string(k));
    w.recall(list);
  }
  w.op('u');
  const std::vector<uint8_t> b = w.bytes();
  const fs::path path = f.write("shared.pkl", std::string(b.begin(), b.end()));
  expectRefused(run("armature", {"model", "info", path.string()}, f.dir), {"shared.pkl"}, kPeakMiB);
}

// Class 4: the UV atlas of a million degenerate faces on one edge is built in linear time.
TEST(HostileFiles, AtlasOfAMillionFacesOnOneEdgeIsLinear) {
  const std::vector<float> positions = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  std::vector<int32_t> faces;
  for (int i = 0; i < 1000000; ++i) faces.insert(faces.end(), {0, 1, i % 2 ? 2 : 1});
  const auto start = std::chrono::steady_clock::now();
  try {
    armature::makeUvAtlas(positions, faces, 8192, 1);
  } catch (const armature::Error&) {  // a million charts may not fit: either way it must end in seconds
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), kSeconds);
}

}  // namespace
