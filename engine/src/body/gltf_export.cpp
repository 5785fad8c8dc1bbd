#include "armature/body/gltf_export.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "armature/body/mesh_export.h"
#include "armature/error.h"
#include "math/transform34.h"

namespace armature {

GltfRig gltfRig(const BodyModel& m, const std::vector<double>& betas, const std::vector<double>& expression,
                uint32_t influences) {
  ARM_CHECK(influences == 4 || influences == 8, "gltfRig: 4 or 8 influences per vertex, not %u", influences);
  ARM_CHECK(m.jointCount <= 65535, "gltfRig: %u joints do not fit glTF's 16-bit joint indices", m.jointCount);
  const size_t V = m.vertexCount, J = m.jointCount, K = influences;
  const size_t S = std::min<size_t>(betas.size(), m.shapeCount), E = std::min<size_t>(expression.size(), m.exprCount);
  const std::vector<double> shaped = shapedVertices(m, betas.data(), uint32_t(S), expression.data(), uint32_t(E));
  GltfRig rig;
  rig.influences = influences;
  rig.vertices.assign(shaped.begin(), shaped.end());
  const std::vector<double> joints = regressJoints(m, shaped);
  rig.joints.assign(joints.begin(), joints.end());
  // Area-weighted vertex normals of the bind pose (a vertex no face uses gets +y).
  std::vector<double> normals(V * 3, 0.0);
  for (uint32_t f = 0; f < m.faceCount; ++f) {
    const double* p[3];
    for (int k = 0; k < 3; ++k) p[k] = &shaped[size_t(m.faces[f * 3 + uint32_t(k)]) * 3];
    const double a[3] = {p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]};
    const double b[3] = {p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]};
    const double n[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    for (int k = 0; k < 3; ++k)
      for (int c = 0; c < 3; ++c) normals[size_t(m.faces[f * 3 + uint32_t(k)]) * 3 + size_t(c)] += n[c];
  }
  rig.normals.resize(V * 3);
  for (size_t v = 0; v < V; ++v) {
    const double* n = &normals[v * 3];
    const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (size_t c = 0; c < 3; ++c) rig.normals[v * 3 + c] = len > 0 ? float(n[c] / len) : float(c == 1);
  }
  // The K largest weights of each vertex, renormalised; ties keep the lower joint.
  rig.indices.assign(V * K, 0);
  rig.weights.assign(V * K, 0.0f);
  std::vector<uint32_t> order(J);
  for (size_t v = 0; v < V; ++v) {
    const double* w = &m.weights[v * J];
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return w[a] > w[b]; });
    double kept = 0, dropped = 0;
    for (size_t k = 0; k < J; ++k) (k < K ? kept : dropped) += w[order[k]];
    rig.maxDroppedWeight = std::max(rig.maxDroppedWeight, dropped);
    for (size_t k = 0; k < K && k < J; ++k) {
      const float weight = kept > 0 ? float(w[order[k]] / kept) : float(k == 0);
      rig.indices[v * K + k] = weight > 0 ? uint16_t(order[k]) : 0;  // glTF: unused slots name joint 0
      rig.weights[v * K + k] = weight;
    }
  }
  return rig;
}

GltfAnimation gltfAnimation(const BodyModel& m, const GltfRig& rig, const Motion& motion, uint32_t first,
                            uint32_t count) {
  ARM_CHECK(motion.jointCount == m.jointCount, "gltfAnimation: the motion has %u joints, the model %u",
            motion.jointCount, m.jointCount);
  ARM_CHECK(count >= 1 && first < motion.frames && count <= motion.frames - first,
            "gltfAnimation: frames [%u, %u) outside the motion's %u", first, first + count, motion.frames);
  const size_t J = m.jointCount;
  GltfAnimation a;
  a.fps = motion.fps;
  a.frames = count;
  a.rotations.resize(count * J * 4);
  a.rootTranslation.resize(size_t(count) * 3);
  const size_t root = size_t(m.topologicalOrder()[0]);
  for (size_t t = 0; t < count; ++t) {
    for (size_t j = 0; j < J; ++j) {
      const std::array<double, 4> q = quaternionFromAxisAngle(&motion.pose[((first + t) * J + j) * 3]);
      float* out = &a.rotations[(t * J + j) * 4];
      out[0] = float(q[1]), out[1] = float(q[2]), out[2] = float(q[3]), out[3] = float(q[0]);
    }
    for (size_t c = 0; c < 3; ++c)
      a.rootTranslation[t * 3 + c] = float(double(rig.joints[root * 3 + c]) + motion.transl[(first + t) * 3 + c]);
  }
  return a;
}

std::vector<double> gltfSkin(const BodyModel& m, const GltfRig& rig, const GltfAnimation& a, uint32_t frame) {
  ARM_CHECK(frame < a.frames, "gltfSkin: frame %u of %u", frame, a.frames);
  const size_t J = m.jointCount, V = m.vertexCount, K = rig.influences;
  // Each joint's global matrix times its inverse bind matrix (a translation by minus its rest location).
  std::vector<Mat34> global(J), skin(J);
  for (int32_t j : m.topologicalOrder()) {
    const size_t u = size_t(j);
    const int32_t p = m.parents[u];
    double local[3], q[4];
    for (size_t c = 0; c < 3; ++c)
      local[c] = p < 0 ? a.rootTranslation[frame * 3 + c] : rig.joints[u * 3 + c] - rig.joints[size_t(p) * 3 + c];
    for (size_t c = 0; c < 4; ++c) q[c] = a.rotations[(frame * J + u) * 4 + c];
    const Mat34 own = trsMatrix(local, q);
    global[u] = p < 0 ? own : compose(global[size_t(p)], own);
    Mat34 inverseBind = kIdentity34;
    for (size_t c = 0; c < 3; ++c) inverseBind[c * 4 + 3] = -double(rig.joints[u * 3 + c]);
    skin[u] = compose(global[u], inverseBind);
  }
  std::vector<double> out(V * 3, 0.0);
  for (size_t v = 0; v < V; ++v) {
    const float* x = &rig.vertices[v * 3];
    for (size_t k = 0; k < K; ++k) {
      const double w = rig.weights[v * K + k];
      if (w == 0) continue;
      const Mat34& s = skin[rig.indices[v * K + k]];
      for (size_t r = 0; r < 3; ++r)
        out[v * 3 + r] += w * (s[r * 4] * x[0] + s[r * 4 + 1] * x[1] + s[r * 4 + 2] * x[2] + s[r * 4 + 3]);
    }
  }
  return out;
}

void writeGlb(const std::string& path, const BodyModel& m, const GltfRig& rig, const GltfAnimation& a) {
  ARM_CHECK(a.frames >= 1, "writeGlb: %s: the animation has no frames", path.c_str());
  const size_t J = m.jointCount, V = m.vertexCount, K = rig.influences;
  tinygltf::Model g;
  g.asset.version = "2.0";
  g.asset.generator = "Armature";
  g.buffers.emplace_back();
  std::vector<unsigned char>& bytes = g.buffers[0].data;
  // One buffer view per accessor, 4-byte aligned; `target` 0 for data that is not vertex or index data.
  auto accessor = [&](const void* data, size_t count, int componentType, int type, size_t elementBytes, int target) {
    bytes.resize((bytes.size() + 3) & ~size_t(3));
    tinygltf::BufferView view;
    view.buffer = 0;
    view.byteOffset = bytes.size();
    view.byteLength = count * elementBytes;
    view.target = target;
    const auto* p = static_cast<const unsigned char*>(data);
    bytes.insert(bytes.end(), p, p + view.byteLength);
    g.bufferViews.push_back(view);
    tinygltf::Accessor acc;
    acc.bufferView = int(g.bufferViews.size() - 1);
    acc.componentType = componentType;
    acc.count = count;
    acc.type = type;
    g.accessors.push_back(acc);
    return int(g.accessors.size() - 1);
  };
  auto bounds = [&](int index, const float* values, size_t count, size_t width) {
    std::vector<double> lo(width, INFINITY), hi(width, -INFINITY);
    for (size_t i = 0; i < count; ++i)
      for (size_t c = 0; c < width; ++c) {
        lo[c] = std::min(lo[c], double(values[i * width + c]));
        hi[c] = std::max(hi[c], double(values[i * width + c]));
      }
    g.accessors[size_t(index)].minValues = lo;
    g.accessors[size_t(index)].maxValues = hi;
  };
  constexpr int kFloat = TINYGLTF_COMPONENT_TYPE_FLOAT, kArray = TINYGLTF_TARGET_ARRAY_BUFFER;

  tinygltf::Primitive prim;
  prim.mode = TINYGLTF_MODE_TRIANGLES;
  prim.attributes["POSITION"] = accessor(rig.vertices.data(), V, kFloat, TINYGLTF_TYPE_VEC3, 12, kArray);
  bounds(prim.attributes["POSITION"], rig.vertices.data(), V, 3);
  prim.attributes["NORMAL"] = accessor(rig.normals.data(), V, kFloat, TINYGLTF_TYPE_VEC3, 12, kArray);
  for (size_t set = 0; set < K / 4; ++set) {  // JOINTS_n / WEIGHTS_n hold influences 4n .. 4n+3
    std::vector<uint16_t> joints(V * 4);
    std::vector<float> weights(V * 4);
    for (size_t v = 0; v < V; ++v)
      for (size_t k = 0; k < 4; ++k) {
        joints[v * 4 + k] = rig.indices[v * K + set * 4 + k];
        weights[v * 4 + k] = rig.weights[v * K + set * 4 + k];
      }
    const std::string n = std::to_string(set);
    prim.attributes["JOINTS_" + n] =
        accessor(joints.data(), V, TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT, TINYGLTF_TYPE_VEC4, 8, kArray);
    prim.attributes["WEIGHTS_" + n] = accessor(weights.data(), V, kFloat, TINYGLTF_TYPE_VEC4, 16, kArray);
  }
  std::vector<uint32_t> indices(m.faces.begin(), m.faces.end());
  prim.indices = accessor(indices.data(), indices.size(), TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT, TINYGLTF_TYPE_SCALAR, 4,
                          TINYGLTF_TARGET_ELEMENT_ARRAY_BUFFER);
  tinygltf::Mesh mesh;
  mesh.name = "body";
  mesh.primitives.push_back(prim);
  g.meshes.push_back(mesh);

  // Joint nodes 0..J-1 in the model's order, then the mesh node.
  const std::vector<int32_t> order = m.topologicalOrder();
  const size_t root = size_t(order[0]);
  g.nodes.resize(J + 1);
  for (size_t j = 0; j < J; ++j) {
    tinygltf::Node& node = g.nodes[j];
    node.name = j < m.jointNames.size() ? m.jointNames[j] : "joint_" + std::to_string(j);
    const int32_t p = m.parents[j];
    node.translation.resize(3);
    for (size_t c = 0; c < 3; ++c)
      node.translation[c] =
          p < 0 ? double(a.rootTranslation[c]) : double(rig.joints[j * 3 + c]) - double(rig.joints[size_t(p) * 3 + c]);
    node.rotation.assign(a.rotations.begin() + long(j * 4), a.rotations.begin() + long(j * 4 + 4));
    if (p >= 0) g.nodes[size_t(p)].children.push_back(int(j));
  }
  g.nodes[J].name = "body";
  g.nodes[J].mesh = 0;
  g.nodes[J].skin = 0;

  std::vector<float> inverseBind(J * 16, 0.0f);
  for (size_t j = 0; j < J; ++j) {
    float* ib = &inverseBind[j * 16];
    ib[0] = ib[5] = ib[10] = ib[15] = 1;
    for (size_t c = 0; c < 3; ++c) ib[12 + c] = -rig.joints[j * 3 + c];
  }
  tinygltf::Skin skin;
  skin.name = "skeleton";
  skin.skeleton = int(root);
  for (size_t j = 0; j < J; ++j) skin.joints.push_back(int(j));
  skin.inverseBindMatrices = accessor(inverseBind.data(), J, kFloat, TINYGLTF_TYPE_MAT4, 64, 0);
  g.skins.push_back(skin);

  std::vector<float> times(a.frames);
  for (uint32_t t = 0; t < a.frames; ++t) times[t] = float(t / a.fps);
  tinygltf::Animation anim;
  anim.name = "motion";
  const int input = accessor(times.data(), times.size(), kFloat, TINYGLTF_TYPE_SCALAR, 4, 0);
  bounds(input, times.data(), times.size(), 1);
  auto channel = [&](int node, const char* pathName, const std::vector<float>& values, int type) {
    tinygltf::AnimationSampler sampler;
    sampler.input = input;
    sampler.interpolation = "LINEAR";  // rotations: spherical linear, as glTF defines LINEAR for quaternions
    const size_t width = type == TINYGLTF_TYPE_VEC4 ? 4 : 3;
    sampler.output = accessor(values.data(), a.frames, kFloat, type, width * 4, 0);
    anim.samplers.push_back(sampler);
    tinygltf::AnimationChannel ch;
    ch.sampler = int(anim.samplers.size() - 1);
    ch.target_node = node;
    ch.target_path = pathName;
    anim.channels.push_back(ch);
  };
  for (size_t j = 0; j < J; ++j) {
    std::vector<float> track(size_t(a.frames) * 4);
    for (size_t t = 0; t < a.frames; ++t) std::memcpy(&track[t * 4], &a.rotations[(t * J + j) * 4], 16);
    channel(int(j), "rotation", track, TINYGLTF_TYPE_VEC4);
  }
  channel(int(root), "translation", a.rootTranslation, TINYGLTF_TYPE_VEC3);
  g.animations.push_back(anim);

  g.buffers[0].data.resize((bytes.size() + 3) & ~size_t(3));
  tinygltf::Scene scene;
  scene.name = "avatar";
  scene.nodes = {int(root), int(J)};
  g.scenes.push_back(scene);
  g.defaultScene = 0;
  std::ostringstream glb;
  tinygltf::TinyGLTF writer;
  if (!writer.WriteGltfSceneToStream(&g, glb, false, true)) throw Error(path + ": tinygltf could not encode the .glb");
  const std::string bytesOut = glb.str();
  writeFileBytes(path, bytesOut.data(), bytesOut.size());
}

}  // namespace armature
