#pragma once
// Posed meshes and joints out, in the formats other tools open: Wavefront OBJ (text), PLY (binary little-endian),
// and joints as .npy (float32) or CSV. Every writer throws armature::Error naming the path when it cannot write.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace armature {

// vertices (V,3), faces (F,3) 0-based.
void writeObj(const std::string& path, const std::vector<float>& vertices, const std::vector<int32_t>& faces);
void writePly(const std::string& path, const std::vector<float>& vertices, const std::vector<int32_t>& faces);
// joints (T,J,3): an .npy of float32 (T,J,3), or CSV rows "frame,joint,x,y,z".
void writeJointsNpy(const std::string& path, const std::vector<float>& joints, uint32_t frames, uint32_t jointCount);
void writeJointsCsv(const std::string& path, const std::vector<float>& joints, uint32_t frames, uint32_t jointCount);

// Any bytes to a file, with the same errors.
void writeFileBytes(const std::string& path, const void* data, size_t bytes);

}  // namespace armature
