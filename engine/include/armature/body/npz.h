#pragma once
// NumPy .npy arrays inside .npz (zip) archives, as the official SMPL/SMPL+H/SMPL-X model files store them.
// Reading accepts <f4 <f8 <i4 <i8 <u4 <u8 (and 1-byte |u1 |i1 |b1), C or Fortran order, stored or deflated
// entries; values come back as doubles in C order. Every failure throws armature::Error naming the file and key.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace armature {

struct NpyArray {
  std::vector<size_t> shape;
  std::string dtype;           // as in the file, e.g. "<f4"
  std::vector<double> values;  // C (row-major) order
  size_t size() const { return values.size(); }
  std::string shapeString() const;
};

using NpzArchive = std::map<std::string, NpyArray>;  // key without the ".npy" suffix

// The largest archive readNpz accepts (the file is read whole; released body models are a few hundred MB).
inline constexpr uint64_t kMaxNpzFileBytes = uint64_t(4) << 30;
// Reads an archive from a regular file (FIFOs, devices and directories are refused before any read).
NpzArchive readNpz(const std::string& path);
// `name` is what error messages call the source (usually the path).
NpzArchive readNpzFromMemory(const void* data, size_t bytes, const std::string& name);
NpyArray parseNpy(const void* data, size_t bytes, const std::string& where);

enum class NpyType { F32, F64, I32, I64, U32 };
struct NpyWrite {
  std::vector<size_t> shape;
  NpyType type = NpyType::F32;
  std::vector<double> values;  // C order
};
// Writes an .npz in C order, entries stored (as numpy.savez) or deflated (as numpy.savez_compressed).
void writeNpz(const std::string& path, const std::map<std::string, NpyWrite>& arrays, bool deflate = false);
// One .npy file's bytes (header + data); `fortran` writes Fortran order (for tests of the reader).
std::vector<uint8_t> encodeNpy(const NpyWrite& array, bool fortran = false);

}  // namespace armature
