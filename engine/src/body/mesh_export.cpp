#include "armature/body/mesh_export.h"

#include <cstdio>
#include <cerrno>
#include <cstring>

#include "armature/body/npz.h"
#include "armature/error.h"

namespace armature {

namespace {
struct File {
  explicit File(const std::string& p, const char* mode) : path(p), f(std::fopen(p.c_str(), mode)) {
    if (!f) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  }
  ~File() {
    if (f) std::fclose(f);
  }
  void close() {
    const bool failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || failed) {
      f = nullptr;
      throw Error(path + ": write failed (disk full?)");
    }
    f = nullptr;
  }
  std::string path;
  FILE* f;
};

void checkMesh(const std::string& path, const std::vector<float>& vertices, const std::vector<int32_t>& faces) {
  ARM_CHECK(vertices.size() % 3 == 0 && faces.size() % 3 == 0, "%s: vertices and faces must be (N,3) arrays",
            path.c_str());
  const size_t V = vertices.size() / 3;
  for (int32_t i : faces) ARM_CHECK(i >= 0 && size_t(i) < V, "%s: face index %d outside [0, %zu)", path.c_str(), i, V);
}
}  // namespace

void writeObj(const std::string& path, const std::vector<float>& vertices, const std::vector<int32_t>& faces) {
  checkMesh(path, vertices, faces);
  File out(path, "w");
  std::fprintf(out.f, "# armature posed mesh: %zu vertices, %zu faces\n", vertices.size() / 3, faces.size() / 3);
  for (size_t v = 0; v < vertices.size(); v += 3)
    std::fprintf(out.f, "v %.9g %.9g %.9g\n", vertices[v], vertices[v + 1], vertices[v + 2]);
  for (size_t f = 0; f < faces.size(); f += 3)  // OBJ counts from 1
    std::fprintf(out.f, "f %d %d %d\n", faces[f] + 1, faces[f + 1] + 1, faces[f + 2] + 1);
  out.close();
}

void writePly(const std::string& path, const std::vector<float>& vertices, const std::vector<int32_t>& faces) {
  checkMesh(path, vertices, faces);
  File out(path, "wb");
  std::fprintf(out.f,
               "ply\nformat binary_little_endian 1.0\ncomment armature posed mesh\nelement vertex %zu\n"
               "property float x\nproperty float y\nproperty float z\nelement face %zu\n"
               "property list uchar int vertex_indices\nend_header\n",
               vertices.size() / 3, faces.size() / 3);
  std::fwrite(vertices.data(), sizeof(float), vertices.size(), out.f);
  for (size_t f = 0; f < faces.size(); f += 3) {
    const uint8_t three = 3;
    std::fwrite(&three, 1, 1, out.f);
    std::fwrite(&faces[f], sizeof(int32_t), 3, out.f);
  }
  out.close();
}

void writeJointsNpy(const std::string& path, const std::vector<float>& joints, uint32_t frames, uint32_t jointCount) {
  ARM_CHECK(joints.size() == size_t(frames) * jointCount * 3, "%s: joints must be (%u,%u,3)", path.c_str(), frames,
            jointCount);
  const std::vector<uint8_t> bytes =
      encodeNpy({{frames, jointCount, 3}, NpyType::F32, std::vector<double>(joints.begin(), joints.end())});
  File out(path, "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), out.f);
  out.close();
}

void writeJointsCsv(const std::string& path, const std::vector<float>& joints, uint32_t frames, uint32_t jointCount) {
  ARM_CHECK(joints.size() == size_t(frames) * jointCount * 3, "%s: joints must be (%u,%u,3)", path.c_str(), frames,
            jointCount);
  File out(path, "w");
  std::fprintf(out.f, "frame,joint,x,y,z\n");
  for (uint32_t t = 0; t < frames; ++t)
    for (uint32_t j = 0; j < jointCount; ++j) {
      const float* p = &joints[(size_t(t) * jointCount + j) * 3];
      std::fprintf(out.f, "%u,%u,%.9g,%.9g,%.9g\n", t, j, p[0], p[1], p[2]);
    }
  out.close();
}

void writeFileBytes(const std::string& path, const void* data, size_t bytes) {
  File file(path, "wb");
  std::fwrite(data, 1, bytes, file.f);
  file.close();
}

}  // namespace armature
