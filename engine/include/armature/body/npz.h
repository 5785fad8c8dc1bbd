#pragma once
// NumPy .npy arrays inside .npz (zip) archives, as the official SMPL/SMPL+H/SMPL-X model files store them.
// Reading decodes <f4 <f8 <i4 <i8 <u4 <u8 (and 1-byte |u1 |i1 |b1), C or Fortran order, stored or deflated
// entries; values come back as doubles in C order. Entries of other dtypes are listed but not parsed. Every failure
// throws armature::Error naming the file and key.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "armature/read_limits.h"

namespace armature {

struct NpyArray {
  std::vector<size_t> shape;
  std::string dtype;           // as in the file, e.g. "<f4"
  std::vector<double> values;  // C (row-major) order
  size_t size() const { return values.size(); }
  std::string shapeString() const;
};

using NpzArchive = std::map<std::string, NpyArray>;  // key without the ".npy" suffix

// The largest archive file accepted (it is read whole; released body models are a few hundred MB).
inline constexpr uint64_t kMaxNpzFileBytes = uint64_t(4) << 30;

// What reading an archive may allocate, counted as held once decoded (8 bytes an element, whatever the dtype), from
// armature/read_limits.h. A crafted archive is refused before the allocation, from what its zip directory and .npy
// headers claim; every refusal names the file, the entry and the limit.
struct NpzLimits {
  uint64_t maxEntryBytes = readLimits().arrayBytes;  // one entry
  uint64_t maxTotalBytes = readLimits().totalBytes;  // all the entries one reader decodes
  // Deflate expands at most about 1032:1: an entry claiming more than this times its compressed size is not deflate
  // data (a size claim meant to make the reader allocate).
  double maxDeflateRatio = 1040;
};

// An entry as listed: its .npy header and its sizes in the archive. readable: a dtype that read() decodes; others
// (object arrays, strings, as official archives carry for joint names and flags) are listed, never parsed.
struct NpzEntry {
  std::string key;  // without ".npy"
  std::string dtype;
  std::vector<size_t> shape;
  uint64_t bytes = 0;        // decoded, as the zip directory says
  uint64_t storedBytes = 0;  // in the archive
  bool readable = false;
};

// An .npz opened for reading: the entries are listed from their headers alone, and an entry's data is decoded
// only when read (within the limits, its CRC-32 checked).
class NpzReader {
 public:
  // `data` must outlive the reader; `name` is what messages call the source.
  NpzReader(const void* data, size_t bytes, std::string name, NpzLimits limits = {});
  NpzReader(std::vector<char> bytes, std::string name, NpzLimits limits = {});
  // Entries another format decodes (a pickle's): `decode` gives a readable entry's array.
  NpzReader(std::vector<NpzEntry> entries, std::function<NpyArray(const NpzEntry&)> decode, std::string name);
  const std::string& name() const { return m_name; }
  const std::vector<NpzEntry>& entries() const { return m_entries; }
  const NpzEntry* find(const std::string& key) const;  // null if absent
  NpyArray read(const std::string& key);
  NpzArchive readAll();  // every readable entry

 private:
  struct Archive;
  void open(const void* data, size_t bytes);
  std::string m_name;
  NpzLimits m_limits;
  std::shared_ptr<Archive> m_archive;
  std::vector<NpzEntry> m_entries;
  std::function<NpyArray(const NpzEntry&)> m_decode;  // set for entries not in a zip
  struct Location {  // per entry, beside m_entries: where it is and what its header implies
    uint64_t index = 0, dataBytes = 0, elements = 0;
    uint32_t crc = 0;
    bool deflated = false;
  };
  std::vector<Location> m_located;
  uint64_t m_decodedBytes = 0, m_archiveBytes = 0;
};

// Opens an .npz archive or a .pkl pickle (armature/body/pickle.h), told apart by their first bytes. FIFOs, devices
// and directories are refused before any read.
NpzReader openArrayFile(const std::string& path, NpzLimits limits = {});
// Every readable entry of an archive (entries of other dtypes are skipped).
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
// The same from each entry's .npy bytes as they are (entries of any dtype: tests write official layouts with them).
void writeNpzEntries(const std::string& path, const std::map<std::string, std::vector<uint8_t>>& npyBytes,
                     bool deflate = false);
// One .npy file's bytes (header + data); `fortran` writes Fortran order (for tests of the reader).
std::vector<uint8_t> encodeNpy(const NpyWrite& array, bool fortran = false);

}  // namespace armature
