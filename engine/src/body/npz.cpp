#include "armature/body/npz.h"

#include "armature/body/pickle.h"

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>

#include "armature/error.h"
#include "armature/file_checks.h"

namespace armature {

std::string NpyArray::shapeString() const {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

namespace {

std::string field(const std::string& header, const std::string& key, const std::string& where) {
  auto k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(where + ": npy header lacks '" + key + "': " + header);
  auto colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(where + ": malformed npy header: " + header);
  size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  return header.substr(i);
}

size_t itemSize(const std::string& d) { return size_t(d[2] - '0'); }

// One little-endian element of type T at p (unaligned).
template <typename T>
double load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return double(v);
}

double readValue(const uint8_t* p, const std::string& d) {
  const char kind = d[1];
  const size_t n = itemSize(d);
  if (kind == 'f') return n == 4 ? load<float>(p) : load<double>(p);
  if (kind == 'i') return n == 1 ? load<int8_t>(p) : n == 4 ? load<int32_t>(p) : load<int64_t>(p);
  return n == 1 ? load<uint8_t>(p) : n == 4 ? load<uint32_t>(p) : load<uint64_t>(p);  // u1 and b1 are bytes
}

}  // namespace

namespace {

// An .npy header: where the data starts and what it holds. Dtypes outside kSupported are described, not refused.
struct NpyHeader {
  std::string dtype;
  std::vector<size_t> shape;
  bool fortran = false;
  size_t dataOffset = 0;  // bytes before the data
  size_t count = 1;       // elements
  bool supported = false;
  size_t dataBytes() const { return count * itemSize(dtype); }
};

const char* const kSupported[] = {"<f4", "<f8", "<i4", "<i8", "<u4", "<u8", "|u1", "|i1", "|b1"};

// Parses the magic, version and header dict from the first `bytes` bytes; needs only the header's bytes.
NpyHeader parseNpyHeader(const uint8_t* p, size_t bytes, const std::string& where) {
  if (bytes < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) throw Error(where + ": not an .npy array (bad magic)");
  uint8_t major = p[6];
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = size_t(p[8]) | size_t(p[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes < 12) throw Error(where + ": truncated .npy header");
    headerLen = size_t(p[8]) | size_t(p[9]) << 8 | size_t(p[10]) << 16 | size_t(p[11]) << 24;
    offset = 12;
  } else {
    throw Error(where + ": unsupported .npy version " + std::to_string(major));
  }
  if (headerLen > bytes - offset) throw Error(where + ": truncated .npy header");
  std::string header(reinterpret_cast<const char*>(p + offset), headerLen);
  NpyHeader h;
  h.dataOffset = offset + headerLen;
  std::string descr = field(header, "descr", where);
  if (descr.size() < 3 || descr[0] != '\'' || descr.find('\'', 1) == std::string::npos)
    throw Error(where + ": malformed dtype in " + header);
  h.dtype = descr.substr(1, descr.find('\'', 1) - 1);
  for (auto* s : kSupported) h.supported |= h.dtype == s;
  h.fortran = field(header, "fortran_order", where).rfind("True", 0) == 0;
  std::string shapeStr = field(header, "shape", where);
  if (shapeStr.empty() || shapeStr[0] != '(') throw Error(where + ": malformed shape in " + header);
  for (size_t i = 1; i < shapeStr.size() && shapeStr[i] != ')';) {
    if (shapeStr[i] == ' ' || shapeStr[i] == ',') {
      ++i;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(shapeStr[i]))) throw Error(where + ": malformed shape in " + header);
    size_t end = i;
    unsigned long long dim = 0;
    while (end < shapeStr.size() && std::isdigit(static_cast<unsigned char>(shapeStr[end]))) {
      dim = dim * 10 + unsigned(shapeStr[end] - '0');
      if (dim > (1ull << 40)) throw Error(where + ": absurd dimension in " + header);
      ++end;
    }
    h.shape.push_back(size_t(dim));
    if (dim && h.count > (1ull << 40) / dim) throw Error(where + ": array too large: " + header);
    h.count *= size_t(dim);
    i = end;
  }
  if (h.shape.size() > 8) throw Error(where + ": more than 8 dimensions");
  return h;
}

std::string shapeText(const std::vector<size_t>& shape) {
  NpyArray a;
  a.shape = shape;
  return a.shapeString();
}

}  // namespace

NpyArray parseNpy(const void* data, size_t bytes, const std::string& where) {
  auto* p = static_cast<const uint8_t*>(data);
  const NpyHeader h = parseNpyHeader(p, bytes, where);
  if (!h.supported)
    throw Error(where + ": dtype '" + h.dtype + "' is not supported (expected one of <f4 <f8 <i4 <i8 <u4 <u8)");
  const size_t item = itemSize(h.dtype);
  if (h.dataBytes() != bytes - h.dataOffset)
    throw Error(where + ": shape " + shapeText(h.shape) + " of " + h.dtype + " needs " + std::to_string(h.dataBytes()) +
                " data bytes, found " + std::to_string(bytes - h.dataOffset) + " (truncated or corrupt)");
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.values.resize(h.count);
  const uint8_t* src = p + h.dataOffset;
  if (!h.fortran || a.shape.size() < 2) {
    for (size_t i = 0; i < h.count; ++i) a.values[i] = readValue(src + i * item, a.dtype);
  } else {
    // Fortran order: the first index varies fastest. Walk C order with a running multi-index.
    size_t nd = a.shape.size();
    std::vector<size_t> fstride(nd, 1), idx(nd, 0);
    for (size_t d = 1; d < nd; ++d) fstride[d] = fstride[d - 1] * a.shape[d - 1];
    for (size_t i = 0; i < h.count; ++i) {
      size_t f = 0;
      for (size_t d = 0; d < nd; ++d) f += idx[d] * fstride[d];
      a.values[i] = readValue(src + f * item, a.dtype);
      for (size_t d = nd; d-- > 0;) {
        if (++idx[d] < a.shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  return a;
}

struct NpzReader::Archive {
  std::vector<char> owned;  // the file's bytes, when the reader read it
  zip_t* zip = nullptr;
  ~Archive() {
    if (zip) zip_discard(zip);
  }
};

NpzReader::NpzReader(const void* data, size_t bytes, std::string name, NpzLimits limits)
    : m_name(std::move(name)), m_limits(limits), m_archive(std::make_shared<Archive>()) {
  open(data, bytes);
}

NpzReader::NpzReader(std::vector<char> bytes, std::string name, NpzLimits limits)
    : m_name(std::move(name)), m_limits(limits), m_archive(std::make_shared<Archive>()) {
  m_archive->owned = std::move(bytes);
  open(m_archive->owned.data(), m_archive->owned.size());
}

NpzReader::NpzReader(std::vector<NpzEntry> entries, std::function<NpyArray(const NpzEntry&)> decode, std::string name)
    : m_name(std::move(name)), m_entries(std::move(entries)), m_decode(std::move(decode)) {}

void NpzReader::open(const void* data, size_t bytes) {
  m_archiveBytes = bytes;
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(data, bytes, 0, &err);
  if (!src) throw Error(m_name + ": " + zip_error_strerror(&err));
  m_archive->zip = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!m_archive->zip) {
    std::string msg = zip_error_strerror(&err);
    zip_source_free(src);
    zip_error_fini(&err);
    throw Error(m_name + ": not a readable .npz (zip) archive: " + msg);
  }
  zip_t* z = m_archive->zip;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* entryName = zip_get_name(z, zip_uint64_t(i), 0);
    if (!entryName) continue;
    std::string key = entryName;
    if (key.size() < 4 || key.compare(key.size() - 4, 4, ".npy") != 0) continue;
    key.resize(key.size() - 4);
    const std::string where = m_name + ": entry '" + key + "'";
    zip_stat_t st;
    if (zip_stat_index(z, zip_uint64_t(i), 0, &st) != 0 ||
        (st.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC | ZIP_STAT_COMP_METHOD)) !=
            (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC | ZIP_STAT_COMP_METHOD))
      throw Error(where + ": cannot stat it");
    // The header alone: at most its first kHeaderBytes (numpy writes a few hundred), read through the entry's
    // decompression, so listing an archive costs no more than that per entry.
    constexpr size_t kHeaderBytes = 64 * 1024 + 12;
    std::vector<uint8_t> head(std::min<uint64_t>(st.size, kHeaderBytes));
    zip_file_t* f = zip_fopen_index(z, zip_uint64_t(i), 0);
    if (!f) throw Error(where + ": cannot open it: " + zip_strerror(z));
    zip_int64_t got = head.empty() ? 0 : zip_fread(f, head.data(), head.size());
    zip_fclose(f);
    if (got < 0) throw Error(where + ": corrupt (cannot decompress its header)");
    head.resize(size_t(got));
    NpyHeader h = parseNpyHeader(head.data(), head.size(), where);
    NpzEntry e;
    e.key = key;
    e.dtype = h.dtype;
    e.shape = h.shape;
    e.bytes = st.size;
    e.storedBytes = st.comp_size;
    e.readable = h.supported;
    m_located.push_back({uint64_t(i), h.supported ? uint64_t(h.dataOffset) + h.dataBytes() : 0, h.count, st.crc,
                         st.comp_method != ZIP_CM_STORE});
    m_entries.push_back(std::move(e));
  }
}

const NpzEntry* NpzReader::find(const std::string& key) const {
  for (const NpzEntry& e : m_entries)
    if (e.key == key) return &e;
  return nullptr;
}

NpyArray NpzReader::read(const std::string& key) {
  const NpzEntry* found = find(key);
  if (!found) throw Error(m_name + ": no entry '" + key + "'");
  const NpzEntry& e = *found;
  const size_t k = size_t(found - m_entries.data());
  const std::string where = m_name + ": entry '" + key + "'";
  if (!e.readable)
    throw Error(where + ": dtype '" + e.dtype + "' is not supported (expected one of <f4 <f8 <i4 <i8 <u4 <u8)");
  if (m_decode) return m_decode(e);
  // Every bound is checked against what the zip directory and the .npy header claim, before anything is allocated.
  const Location& at = m_located[k];
  if (e.bytes != at.dataBytes)
    throw Error(where + ": its header's shape " + shapeText(e.shape) + " of " + e.dtype + " needs " +
                std::to_string(at.dataBytes) + " bytes, the zip entry claims " + std::to_string(e.bytes) +
                " (truncated or corrupt)");
  if (e.storedBytes > m_archiveBytes || (!at.deflated && e.storedBytes != e.bytes))
    throw Error(where + ": its sizes in the zip directory (" + std::to_string(e.storedBytes) + " stored, " +
                std::to_string(e.bytes) + " decoded) do not fit an archive of " + std::to_string(m_archiveBytes) +
                " bytes (corrupt)");
  // Held as doubles: a 1-byte dtype takes 8 times its bytes in the file.
  const uint64_t held = checkedProduct({at.elements, sizeof(double)}, where);
  if (at.deflated && double(e.bytes) > double(e.storedBytes) * m_limits.maxDeflateRatio + 1024.0)
    throw Error(where + ": claims " + mebibytes(e.bytes) + " from " + std::to_string(e.storedBytes) +
                " compressed bytes, more than the ratio of " + std::to_string(int(m_limits.maxDeflateRatio)) +
                ":1 deflate can reach (a size claim meant to make the reader allocate)");
  if (held > m_limits.maxEntryBytes)
    throw Error(where + ": " + mebibytes(held) + " once decoded, over the limit of " +
                mebibytes(m_limits.maxEntryBytes) + " an entry (ARMATURE_READ_BUDGET_MIB raises it)");
  if (m_decodedBytes + held > m_limits.maxTotalBytes)
    throw Error(where + ": would bring what is decoded from the archive to " + mebibytes(m_decodedBytes + held) +
                ", over the limit of " + mebibytes(m_limits.maxTotalBytes) + " (ARMATURE_READ_BUDGET_MIB raises it)");
  std::vector<uint8_t> buf(e.bytes);
  zip_file_t* f = zip_fopen_index(m_archive->zip, at.index, 0);
  if (!f) throw Error(where + ": cannot open it: " + zip_strerror(m_archive->zip));
  zip_int64_t got = buf.empty() ? 0 : zip_fread(f, buf.data(), buf.size());
  std::string ferr = got < 0 ? zip_file_strerror(f) : "";
  zip_fclose(f);
  if (got < 0 || zip_uint64_t(got) != e.bytes)
    throw Error(where + ": truncated or corrupt" + (ferr.empty() ? "" : ": " + ferr));
  const uLong crc = crc32_z(crc32(0L, Z_NULL, 0), buf.data(), buf.size());
  if (crc != at.crc)
    throw Error(where + ": corrupt (CRC-32 of its data is " + std::to_string(crc) + ", the archive says " +
                std::to_string(at.crc) + ")");
  m_decodedBytes += held;
  return parseNpy(buf.data(), buf.size(), where);
}

NpzArchive NpzReader::readAll() {
  NpzArchive out;
  for (const NpzEntry& e : m_entries)  // read() leaves the list as it is
    if (e.readable) out[e.key] = read(e.key);
  return out;
}

NpzReader openArrayFile(const std::string& path, NpzLimits limits) {
  checkRegularFile(path, "file", kMaxNpzFileBytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Protocol 2 and later start with PROTO; protocols 0 and 1 with the dict's MARK or EMPTY_DICT.
  const bool pickle = !bytes.empty() && (uint8_t(bytes[0]) == 0x80 || bytes[0] == '(' || bytes[0] == '}');
  if (pickle) return readPickle(std::move(bytes), path, limits);
  return NpzReader(std::move(bytes), path, limits);
}

NpzArchive readNpzFromMemory(const void* data, size_t bytes, const std::string& name) {
  return NpzReader(data, bytes, name).readAll();
}

NpzArchive readNpz(const std::string& path) { return openArrayFile(path).readAll(); }

std::vector<uint8_t> encodeNpy(const NpyWrite& a, bool fortran) {
  const char* descr = "<f4";
  size_t item = 4;
  switch (a.type) {
    case NpyType::F32:
      descr = "<f4";
      item = 4;
      break;
    case NpyType::F64:
      descr = "<f8";
      item = 8;
      break;
    case NpyType::I32:
      descr = "<i4";
      item = 4;
      break;
    case NpyType::I64:
      descr = "<i8";
      item = 8;
      break;
    case NpyType::U32:
      descr = "<u4";
      item = 4;
      break;
  }
  size_t count = std::accumulate(a.shape.begin(), a.shape.end(), size_t(1), std::multiplies<>());
  ARM_CHECK(count == a.values.size(), "encodeNpy: shape holds %zu values, given %zu", count, a.values.size());
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i)
    shape += std::to_string(a.shape[i]) + (a.shape.size() == 1 || i + 1 < a.shape.size() ? "," : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out(10 + header.size() + count * item);
  std::memcpy(out.data(), "\x93NUMPY\x01\x00", 8);
  out[8] = uint8_t(header.size() & 0xff);
  out[9] = uint8_t(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  uint8_t* dst = out.data() + 10 + header.size();
  size_t nd = a.shape.size();
  std::vector<size_t> idx(nd, 0), fstride(nd, 1);
  for (size_t d = 1; d < nd; ++d) fstride[d] = fstride[d - 1] * a.shape[d - 1];
  for (size_t i = 0; i < count; ++i) {
    size_t pos = i;
    if (fortran && nd > 1) {
      pos = 0;
      for (size_t d = 0; d < nd; ++d) pos += idx[d] * fstride[d];
      for (size_t d = nd; d-- > 0;) {
        if (++idx[d] < a.shape[d]) break;
        idx[d] = 0;
      }
    }
    double v = a.values[i];
    uint8_t* q = dst + pos * item;
    switch (a.type) {
      case NpyType::F32: {
        float x = float(v);
        std::memcpy(q, &x, 4);
        break;
      }
      case NpyType::F64:
        std::memcpy(q, &v, 8);
        break;
      case NpyType::I32: {
        int32_t x = int32_t(v);
        std::memcpy(q, &x, 4);
        break;
      }
      case NpyType::I64: {
        int64_t x = int64_t(v);
        std::memcpy(q, &x, 8);
        break;
      }
      case NpyType::U32: {
        uint32_t x = uint32_t(v);
        std::memcpy(q, &x, 4);
        break;
      }
    }
  }
  return out;
}

void writeNpz(const std::string& path, const std::map<std::string, NpyWrite>& arrays, bool deflate) {
  std::map<std::string, std::vector<uint8_t>> entries;
  for (const auto& [key, array] : arrays) entries[key] = encodeNpy(array);
  writeNpzEntries(path, entries, deflate);
}

void writeNpzEntries(const std::string& path, const std::map<std::string, std::vector<uint8_t>>& entries,
                     bool deflate) {
  int errorCode = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &errorCode);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, errorCode);
    std::string msg = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw Error(path + ": cannot create: " + msg);
  }
  for (const auto& [key, buf] : entries) {  // libzip reads the buffers at zip_close
    zip_source_t* s = zip_source_buffer(z, buf.data(), buf.size(), 0);
    zip_int64_t idx = s ? zip_file_add(z, (key + ".npy").c_str(), s, ZIP_FL_OVERWRITE) : -1;
    if (idx < 0) {
      if (s) zip_source_free(s);
      std::string msg = zip_strerror(z);
      zip_discard(z);
      throw Error(path + ": cannot add '" + key + "': " + msg);
    }
    zip_set_file_compression(z, zip_uint64_t(idx), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) {
    std::string msg = zip_strerror(z);
    zip_discard(z);
    throw Error(path + ": cannot write: " + msg);
  }
}

}  // namespace armature
