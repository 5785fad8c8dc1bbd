#include "armature/body/gltf_character.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "armature/error.h"
#include "armature/file_checks.h"
#include "armature/ops/joint_propagation.h"
#include "armature/ops/linear_blend_skinning.h"
#include "armature/read_limits.h"
#include "math/transform34.h"

namespace armature {

namespace {

// A node's translation, rotation and scale, from its TRS or decomposed from its matrix (no shear).
std::array<double, 10> nodeTrs(const tinygltf::Node& n) {
  std::array<double, 10> trs = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  if (n.matrix.size() == 16) {  // column-major
    const auto& m = n.matrix;
    for (int r = 0; r < 3; ++r) trs[size_t(r)] = m[size_t(12 + r)];
    double R[3][3];
    for (int c = 0; c < 3; ++c) {
      const double len = std::sqrt(m[size_t(c * 4)] * m[size_t(c * 4)] + m[size_t(c * 4 + 1)] * m[size_t(c * 4 + 1)] +
                                   m[size_t(c * 4 + 2)] * m[size_t(c * 4 + 2)]);
      trs[size_t(7 + c)] = len;
      for (int r = 0; r < 3; ++r) R[r][c] = len > 0 ? m[size_t(c * 4 + r)] / len : double(r == c);
    }
    const double rotation[9] = {R[0][0], R[0][1], R[0][2], R[1][0], R[1][1], R[1][2], R[2][0], R[2][1], R[2][2]};
    const std::array<double, 4> q = quaternionFromRotation(rotation);
    std::copy(q.begin(), q.end(), &trs[3]);
    return trs;
  }
  for (size_t k = 0; k < n.translation.size() && k < 3; ++k) trs[k] = n.translation[k];
  for (size_t k = 0; k < n.rotation.size() && k < 4; ++k) trs[3 + k] = n.rotation[k];
  for (size_t k = 0; k < n.scale.size() && k < 3; ++k) trs[7 + k] = n.scale[k];
  return trs;
}

// The largest magnitude a coordinate, weight or transform entry may have (any unit: 1e9 is past every real model),
// and a key time in seconds (a day: longer clips are refused rather than sampled into millions of frames).
constexpr double kMaxMagnitude = 1e9, kMaxSeconds = 86400;

class Reader {
 public:
  Reader(const tinygltf::Model& g, const std::string& name) : m_g(g), m_name(name) {}
  [[noreturn]] void fail(const std::string& message) const { throw Error(m_name + ": " + message); }

  // An accessor's elements as doubles (normalised integers mapped to [0, 1]), `width` components each. Every size
  // is computed with overflow checks and counted against the read budget before anything is allocated.
  std::vector<double> read(int index, size_t width, const char* what) const {
    if (index < 0 || size_t(index) >= m_g.accessors.size()) fail(std::string(what) + ": no such accessor");
    const tinygltf::Accessor& a = m_g.accessors[size_t(index)];
    const std::string where = m_name + ": " + what + " (accessor " + std::to_string(index) + ")";
    auto refuse = [&](const std::string& message) { throw Error(where + ": " + message); };
    if (a.sparse.isSparse) refuse("sparse accessors are not read (store its values densely)");
    if (size_t(tinygltf::GetNumComponentsInType(uint32_t(a.type))) != width)
      refuse("expected " + std::to_string(width) + " components per element");
    const uint64_t values = checkedProduct({a.count, width}, where), held = checkedProduct({values, 8}, where);
    checkArrayBytes(held, where);
    m_heldBytes = checkedSum(m_heldBytes, held, where);
    checkLimit(m_heldBytes, readLimits().totalBytes, where + ": bytes read from the file's accessors", "bytes",
               "ARMATURE_READ_BUDGET_MIB raises it");
    std::vector<double> out(values, 0.0);
    if (a.bufferView < 0) return out;  // all zeros, as glTF defines an accessor without a view
    if (size_t(a.bufferView) >= m_g.bufferViews.size()) refuse("no such buffer view");
    const tinygltf::BufferView& v = m_g.bufferViews[size_t(a.bufferView)];
    if (v.buffer < 0 || size_t(v.buffer) >= m_g.buffers.size()) refuse("no such buffer");
    const std::vector<unsigned char>& data = m_g.buffers[size_t(v.buffer)].data;
    const int componentBytes = tinygltf::GetComponentSizeInBytes(uint32_t(a.componentType));
    if (componentBytes <= 0) refuse("unknown component type");
    const uint64_t element = uint64_t(componentBytes) * width, stride = v.byteStride ? v.byteStride : element;
    if (stride < element) refuse("byteStride " + std::to_string(stride) + " is smaller than an element");
    const uint64_t start = checkedSum(v.byteOffset, a.byteOffset, where);
    const uint64_t span = a.count ? checkedSum(checkedProduct({stride, a.count - 1}, where), element, where) : 0;
    if (checkedSum(start, span, where) > data.size() || checkedSum(a.byteOffset, span, where) > v.byteLength)
      refuse("its data runs past its buffer");
    for (size_t i = 0; i < a.count; ++i)
      for (size_t c = 0; c < width; ++c) {
        const unsigned char* p = &data[start + i * stride + c * size_t(componentBytes)];
        double x = 0;
        switch (a.componentType) {
          case TINYGLTF_COMPONENT_TYPE_FLOAT: {
            float f;
            std::memcpy(&f, p, 4);
            x = f;
            break;
          }
          case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
            x = a.normalized ? p[0] / 255.0 : p[0];
            break;
          case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
            uint16_t u;
            std::memcpy(&u, p, 2);
            x = a.normalized ? u / 65535.0 : u;
            break;
          }
          case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT: {
            uint32_t u;
            std::memcpy(&u, p, 4);
            x = u;
            break;
          }
          default:
            refuse("component type " + std::to_string(a.componentType) + " is not read here");
        }
        out[i * width + c] = x;
      }
    return out;
  }

 private:
  const tinygltf::Model& m_g;
  const std::string& m_name;
  mutable uint64_t m_heldBytes = 0;  // what read() has allocated
};

double keyTime(const GltfChannel& c, size_t k) { return double(c.times[k]); }

// The deepest nesting of arrays and objects in JSON text, counted outside strings, in one pass. A .glb's JSON is
// its first chunk; anything malformed is left for tinygltf to report.
uint32_t jsonDepth(const std::vector<unsigned char>& bytes, bool binary) {
  size_t begin = 0, end = bytes.size();
  if (binary) {
    if (bytes.size() < 20) return 0;
    uint32_t length;
    std::memcpy(&length, &bytes[12], 4);
    begin = 20, end = std::min<size_t>(bytes.size(), 20 + size_t(length));
  }
  uint32_t depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = begin; i < end; ++i) {
    const unsigned char c = bytes[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth) {
      --depth;
    }
  }
  return deepest;
}

// tinygltf's file access, confined: a path is opened only when it resolves (symlinks and ".." included) to a
// regular file inside the glTF's folder, and never an image (no texture is used). tinygltf also searches the
// current directory; that path resolves outside the folder and is refused like any other.
struct Confinement {
  std::filesystem::path folder;  // canonical; empty: every path is refused
  std::string refused;           // why the last path was refused, for the message
  uint64_t bytesRead = 0;
};

bool isImagePath(const std::string& path) {
  const std::string ext = lowerExtension(path);
  for (const char* image : {".png", ".jpg", ".jpeg", ".ktx", ".ktx2", ".webp", ".dds", ".basis", ".gif", ".bmp"})
    if (ext == image) return true;
  return false;
}

bool confined(const std::string& path, Confinement& c, std::filesystem::path& resolved) {
  std::error_code ec;
  resolved = std::filesystem::weakly_canonical(path, ec);
  if (c.folder.empty()) {
    c.refused = "'" + path + "': external files are not read here";
    return false;
  }
  const bool inside =
      !ec && std::mismatch(c.folder.begin(), c.folder.end(), resolved.begin(), resolved.end()).first == c.folder.end();
  if (!inside) c.refused = "'" + path + "' is outside the glTF's folder " + c.folder.string() + " (not opened)";
  return inside;
}

bool confinedExists(const std::string& path, void* user) {
  Confinement& c = *static_cast<Confinement*>(user);
  std::filesystem::path resolved;
  std::error_code ec;
  return confined(path, c, resolved) && !isImagePath(path) && std::filesystem::is_regular_file(resolved, ec);
}

std::string unexpanded(const std::string& path, void*) { return path; }  // tinygltf's default runs wordexp

bool confinedRead(std::vector<unsigned char>* out, std::string* err, const std::string& path, void* user) {
  Confinement& c = *static_cast<Confinement*>(user);
  std::filesystem::path resolved;
  if (!confined(path, c, resolved) || isImagePath(path)) {
    if (err) *err += c.refused + "\n";
    return false;
  }
  try {
    checkRegularFile(resolved.string(), "glTF buffer", readLimits().totalBytes - c.bytesRead);
  } catch (const Error& e) {
    if (err) *err += std::string(e.what()) + "\n";
    return false;
  }
  std::ifstream in(resolved, std::ios::binary);
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  c.bytesRead += out->size();
  return bool(in) || in.eof();
}

bool neverWrite(std::string*, const std::string&, const std::vector<unsigned char>&, void*) { return false; }

bool skipImage(tinygltf::Image*, const int, std::string*, std::string*, int, int, const unsigned char*, int, void*) {
  return true;  // images are not decoded: no texture is used
}

}  // namespace

GltfCharacter loadGltfCharacter(const std::string& path) {
  checkRegularFile(path, "glTF file", uint64_t(2) << 30);
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw Error(path + ": cannot read it");
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::weakly_canonical(path, ec).parent_path();
  if (ec) throw Error(path + ": cannot resolve its folder: " + ec.message());
  return readGltfCharacter(bytes, lowerExtension(path) == ".glb", path, folder.string());
}

GltfCharacter readGltfCharacter(const std::vector<unsigned char>& bytes, bool binary, const std::string& path,
                                const std::string& folder) {
  if (bytes.size() > UINT32_MAX) throw Error(path + ": larger than 4 GiB, which tinygltf cannot read");
  const uint32_t depth = jsonDepth(bytes, binary);
  if (depth > kMaxGltfJsonDepth)
    throw Error(path + ": its JSON nests " + std::to_string(depth) + " deep, past the limit of " +
                std::to_string(kMaxGltfJsonDepth) + " (a glTF nests about ten deep)");
  Confinement confinement;
  if (!folder.empty()) confinement.folder = std::filesystem::path(folder);
  tinygltf::Model g;
  tinygltf::TinyGLTF loader;
  loader.SetFsCallbacks({confinedExists, unexpanded, confinedRead, neverWrite, &confinement});
  loader.SetImageLoader(skipImage, nullptr);
  std::string error, warning;
  const bool ok = binary
                      ? loader.LoadBinaryFromMemory(&g, &error, &warning, bytes.data(), unsigned(bytes.size()), folder)
                      : loader.LoadASCIIFromString(&g, &error, &warning, reinterpret_cast<const char*>(bytes.data()),
                                                   unsigned(bytes.size()), folder);
  std::string why = error.empty() ? warning : error;
  while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
  if (!ok)
    throw Error(path + ": not a readable glTF file: " + why +
                (confinement.refused.empty() ? "" : " (" + confinement.refused + ")"));
  const Reader r(g, path);
  GltfCharacter c;
  c.source = path;
  const tinygltf::Node* meshNode = nullptr;
  for (const tinygltf::Node& n : g.nodes)
    if (n.mesh >= 0 && n.skin >= 0 && size_t(n.mesh) < g.meshes.size() && size_t(n.skin) < g.skins.size()) {
      meshNode = &n;
      break;
    }
  if (!meshNode) r.fail("no skinned mesh (a node with both a mesh and a skin)");
  const tinygltf::Skin& skin = g.skins[size_t(meshNode->skin)];
  const size_t J = skin.joints.size();
  if (J == 0 || J > 65535) r.fail("the skin has " + std::to_string(J) + " joints (expected 1 to 65535)");
  const tinygltf::Primitive* prim = nullptr;
  for (const tinygltf::Primitive& p : g.meshes[size_t(meshNode->mesh)].primitives)
    if (p.attributes.count("JOINTS_0") && p.attributes.count("WEIGHTS_0") && p.attributes.count("POSITION")) {
      prim = &p;
      break;
    }
  if (!prim) r.fail("the skinned mesh has no primitive with POSITION, JOINTS_0 and WEIGHTS_0");
  if (prim->mode != -1 && prim->mode != TINYGLTF_MODE_TRIANGLES) r.fail("the skinned primitive is not triangles");

  const std::vector<double> positions = r.read(prim->attributes.at("POSITION"), 3, "POSITION");
  checkFinite(positions.data(), positions.size(), kMaxMagnitude, path + ": POSITION");
  c.vertices.assign(positions.begin(), positions.end());
  const size_t V = c.vertexCount();
  if (prim->indices >= 0) {
    const std::vector<double> idx = r.read(prim->indices, 1, "indices");
    c.indices.reserve(idx.size());
    for (double i : idx) {
      if (!(i >= 0 && i < double(V)))
        r.fail("an index " + std::to_string(i) + " outside the " + std::to_string(V) + " vertices");
      c.indices.push_back(uint32_t(i));
    }
  } else {
    for (uint32_t i = 0; i < V; ++i) c.indices.push_back(i);
  }
  if (c.indices.size() % 3) r.fail("the triangle list has " + std::to_string(c.indices.size()) + " indices");
  c.influences = prim->attributes.count("JOINTS_1") && prim->attributes.count("WEIGHTS_1") ? 8 : 4;
  const size_t K = c.influences;
  c.joints.assign(V * K, 0);
  c.weights.assign(V * K, 0.0f);
  for (size_t set = 0; set < K / 4; ++set) {
    const std::string n = std::to_string(set);
    const std::vector<double> joints = r.read(prim->attributes.at("JOINTS_" + n), 4, "JOINTS");
    const std::vector<double> weights = r.read(prim->attributes.at("WEIGHTS_" + n), 4, "WEIGHTS");
    if (joints.size() != V * 4 || weights.size() != V * 4) r.fail("JOINTS/WEIGHTS do not have one element per vertex");
    for (size_t v = 0; v < V; ++v)
      for (size_t k = 0; k < 4; ++k) {
        const double j = joints[v * 4 + k], w = weights[v * 4 + k];
        if (!(j >= 0 && j < double(J) && j == std::floor(j)))
          r.fail("JOINTS_" + n + ": vertex " + std::to_string(v) + " names joint " + std::to_string(j) +
                 ", not one of the skin's " + std::to_string(J));
        if (!(w >= 0 && w <= kMaxMagnitude))
          r.fail("WEIGHTS_" + n + ": vertex " + std::to_string(v) + " has the weight " + std::to_string(w) +
                 " (expected a finite number >= 0)");
        c.joints[v * K + set * 4 + k] = uint16_t(j);
        c.weights[v * K + set * 4 + k] = float(w);
      }
  }
  size_t rescaled = 0;
  double lowest = INFINITY, highest = 0;
  for (size_t v = 0; v < V; ++v) {
    double sum = 0;
    for (size_t k = 0; k < K; ++k) sum += c.weights[v * K + k];
    if (!(sum > 0)) r.fail("vertex " + std::to_string(v) + "'s weights sum to zero");
    if (std::abs(sum - 1) > 1e-3) ++rescaled, lowest = std::min(lowest, sum), highest = std::max(highest, sum);
    for (size_t k = 0; k < K; ++k) c.weights[v * K + k] = float(c.weights[v * K + k] / sum);
  }
  if (rescaled) {
    char note[200];
    std::snprintf(
        note, sizeof note,
        "the skin weights of %zu of %zu vertices sum to %.3g … %.3g, not 1: rescaled to 1 (as glTF viewers do)",
        rescaled, V, lowest, highest);
    c.notes.push_back(note);
  }

  // The joints: node parents, each joint's nearest joint ancestor, and what lies above a root.
  std::vector<int> nodeParent(g.nodes.size(), -1), jointOfNode(g.nodes.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int child : g.nodes[n].children)
      if (child >= 0 && size_t(child) < g.nodes.size()) nodeParent[size_t(child)] = int(n);
  for (size_t j = 0; j < J; ++j) {
    const int node = skin.joints[j];
    if (node < 0 || size_t(node) >= g.nodes.size()) r.fail("skin joint " + std::to_string(j) + " is not a node");
    jointOfNode[size_t(node)] = int(j);
  }
  c.parents.assign(J, -1);
  c.rootParent.assign(J * 12, 0.0);
  c.restTrs.resize(J * 10);
  auto trsOf = [&](int node) {
    const std::array<double, 10> trs = nodeTrs(g.nodes[size_t(node)]);
    checkFinite(trs.data(), trs.size(), kMaxMagnitude, path + ": node " + std::to_string(node) + "'s transform");
    return trs;
  };
  // Each joint walks up through the nodes that are not joints to its nearest joint ancestor. A file could make
  // those walks long and shared (quadratic); they are bounded in all.
  constexpr size_t kMaxNodeSteps = size_t(1) << 24;
  size_t steps = 0;
  for (size_t j = 0; j < J; ++j) {
    const tinygltf::Node& node = g.nodes[size_t(skin.joints[j])];
    c.jointNames.push_back(node.name.empty() ? "joint_" + std::to_string(j) : node.name);
    const std::array<double, 10> trs = trsOf(skin.joints[j]);
    std::copy(trs.begin(), trs.end(), &c.restTrs[j * 10]);
    Mat34 above = kIdentity34;
    int n = nodeParent[size_t(skin.joints[j])];
    for (size_t walked = 0; n >= 0 && jointOfNode[size_t(n)] < 0; n = nodeParent[size_t(n)], ++walked, ++steps) {
      if (walked > g.nodes.size()) r.fail("the node hierarchy has a cycle");
      if (steps > kMaxNodeSteps)
        r.fail("the joints' ancestors that are not joints take more than " + std::to_string(kMaxNodeSteps) +
               " steps to walk (a crafted hierarchy)");
      const std::array<double, 10> t = trsOf(n);
      above = compose(trsMatrix(&t[0], &t[3], &t[7]), above);
    }
    c.parents[j] = n >= 0 ? jointOfNode[size_t(n)] : -1;
    std::copy(above.begin(), above.end(), &c.rootParent[j * 12]);
  }
  c.inverseBind.assign(J * 12, 0.0);
  const std::vector<double> ibm = skin.inverseBindMatrices >= 0
                                      ? r.read(skin.inverseBindMatrices, 16, "inverseBindMatrices")
                                      : std::vector<double>();
  checkFinite(ibm.data(), ibm.size(), kMaxMagnitude, path + ": inverseBindMatrices");
  if (!ibm.empty() && ibm.size() != J * 16)
    r.fail("the skin has " + std::to_string(J) + " joints but " + std::to_string(ibm.size() / 16) +
           " inverse bind matrices");
  for (size_t j = 0; j < J; ++j)
    for (size_t row = 0; row < 3; ++row)
      for (size_t col = 0; col < 4; ++col)
        c.inverseBind[j * 12 + row * 4 + col] = ibm.empty() ? double(row == col) : ibm[j * 16 + col * 4 + row];

  for (const tinygltf::Animation& a : g.animations) {
    GltfClip clip;
    clip.name = a.name;
    for (const tinygltf::AnimationChannel& ch : a.channels) {
      if (ch.target_node < 0 || size_t(ch.target_node) >= g.nodes.size() || jointOfNode[size_t(ch.target_node)] < 0)
        continue;  // not a joint of this skin
      GltfChannel out;
      out.joint = uint32_t(jointOfNode[size_t(ch.target_node)]);
      if (ch.target_path == "translation")
        out.path = GltfChannel::Path::Translation;
      else if (ch.target_path == "rotation")
        out.path = GltfChannel::Path::Rotation;
      else if (ch.target_path == "scale")
        out.path = GltfChannel::Path::Scale;
      else
        continue;  // morph weights
      if (ch.sampler < 0 || size_t(ch.sampler) >= a.samplers.size()) r.fail("an animation channel without its sampler");
      const tinygltf::AnimationSampler& s = a.samplers[size_t(ch.sampler)];
      out.interpolation = s.interpolation == "STEP"          ? GltfChannel::Interpolation::Step
                          : s.interpolation == "CUBICSPLINE" ? GltfChannel::Interpolation::CubicSpline
                                                             : GltfChannel::Interpolation::Linear;
      const std::vector<double> times = r.read(s.input, 1, "animation input");
      const size_t width = out.path == GltfChannel::Path::Rotation ? 4 : 3;
      const std::vector<double> values = r.read(s.output, width, "animation output");
      const size_t perKey = out.interpolation == GltfChannel::Interpolation::CubicSpline ? 3 : 1;
      if (times.empty() || values.size() != times.size() * width * perKey)
        r.fail("an animation sampler with " + std::to_string(times.size()) + " times and " +
               std::to_string(values.size() / width) + " values");
      checkFinite(times.data(), times.size(), kMaxSeconds, path + ": animation '" + a.name + "' key times");
      checkFinite(values.data(), values.size(), kMaxMagnitude, path + ": animation '" + a.name + "' values");
      for (size_t k = 1; k < times.size(); ++k)
        if (!(times[k] > times[k - 1])) r.fail("animation times that do not increase");
      out.times.assign(times.begin(), times.end());
      out.values.assign(values.begin(), values.end());
      clip.seconds = std::max(clip.seconds, times.back());
      clip.channels.push_back(std::move(out));
    }
    c.clips.push_back(std::move(clip));
  }
  if (c.clips.size() > 1)
    c.notes.push_back(std::to_string(c.clips.size()) +
                      " animations: one plays at a time (--clip N, 0 the first); a motion exported as several "
                      "animations plays only the chosen part");
  return c;
}

std::vector<double> sampleGltfLocals(const GltfCharacter& c, uint32_t clipIndex, double seconds) {
  const size_t J = c.jointCount();
  std::vector<double> trs = c.restTrs;
  if (clipIndex < c.clips.size()) {
    for (const GltfChannel& ch : c.clips[clipIndex].channels) {
      const size_t width = ch.path == GltfChannel::Path::Rotation ? 4 : 3, n = ch.times.size();
      const bool cubic = ch.interpolation == GltfChannel::Interpolation::CubicSpline;
      auto value = [&](size_t k, size_t part) {  // part: 0 in-tangent, 1 value, 2 out-tangent (cubic); else value
        return &ch.values[(cubic ? k * 3 + part : k) * width];
      };
      const double t = std::clamp(seconds, keyTime(ch, 0), keyTime(ch, n - 1));
      const size_t k = size_t(std::upper_bound(ch.times.begin(), ch.times.end(), float(t)) - ch.times.begin());
      const size_t a = k == 0 ? 0 : std::min(k - 1, n - 1), b = std::min(a + 1, n - 1);
      const double span = keyTime(ch, b) - keyTime(ch, a), s = span > 0 ? (t - keyTime(ch, a)) / span : 0.0;
      double out[4];
      if (ch.interpolation == GltfChannel::Interpolation::Step || a == b) {
        for (size_t i = 0; i < width; ++i) out[i] = value(a, 1)[i];
      } else if (cubic) {  // Hermite with tangents scaled by the key interval
        const double s2 = s * s, s3 = s2 * s;
        for (size_t i = 0; i < width; ++i)
          out[i] = (2 * s3 - 3 * s2 + 1) * value(a, 1)[i] + (s3 - 2 * s2 + s) * span * value(a, 2)[i] +
                   (-2 * s3 + 3 * s2) * value(b, 1)[i] + (s3 - s2) * span * value(b, 0)[i];
      } else if (width == 4) {
        std::array<double, 4> p, q;
        for (size_t i = 0; i < 4; ++i) p[i] = value(a, 1)[i], q[i] = value(b, 1)[i];
        const std::array<double, 4> r = slerp(p, q, s);
        std::copy(r.begin(), r.end(), out);
      } else {
        for (size_t i = 0; i < width; ++i) out[i] = (1 - s) * value(a, 1)[i] + s * value(b, 1)[i];
      }
      if (width == 4) {
        const double norm = std::sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2] + out[3] * out[3]);
        for (double& x : out) x = norm > 0 ? x / norm : 0;
      }
      const size_t at = ch.path == GltfChannel::Path::Translation ? 0 : ch.path == GltfChannel::Path::Rotation ? 3 : 7;
      std::copy_n(out, width, &trs[ch.joint * 10 + at]);
    }
  }
  std::vector<double> locals(J * 12);
  for (size_t j = 0; j < J; ++j) {
    Mat34 m = trsMatrix(&trs[j * 10], &trs[j * 10 + 3], &trs[j * 10 + 7]);
    if (c.parents[j] < 0) {
      Mat34 above;
      std::copy_n(&c.rootParent[j * 12], 12, above.begin());
      m = compose(above, m);
    }
    std::copy(m.begin(), m.end(), &locals[j * 12]);
  }
  return locals;
}

GltfPoseRef poseGltfCharacterRef(const GltfCharacter& c, const JointForest& forest, const std::vector<double>& locals,
                                 uint32_t batch) {
  JointLocalsRef in;
  in.batch = batch, in.kind = LocalTransform::Affine, in.affine = locals, in.inverseBind = c.inverseBind;
  JointGlobalsRef g = propagateJointsRef(forest, in);
  const std::vector<uint32_t> joints(c.joints.begin(), c.joints.end());
  const std::vector<double> rest(c.vertices.begin(), c.vertices.end()), weights(c.weights.begin(), c.weights.end());
  return {linearBlendSkinningRef(rest, joints, weights, c.influences, g.skinning, c.jointCount(), batch),
          std::move(g.positions)};
}

}  // namespace armature
