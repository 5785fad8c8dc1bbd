#include "armature/body/npz.h"

#include <zip.h>

#include <cmath>
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

NpyArray parseNpy(const void* data, size_t bytes, const std::string& where) {
  auto* p = static_cast<const uint8_t*>(data);
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
  offset += headerLen;

  NpyArray a;
  std::string descr = field(header, "descr", where);
  if (descr.size() < 5 || descr[0] != '\'') throw Error(where + ": malformed dtype in " + header);
  a.dtype = descr.substr(1, descr.find('\'', 1) - 1);
  static const char* kSupported[] = {"<f4", "<f8", "<i4", "<i8", "<u4", "<u8", "|u1", "|i1", "|b1"};
  bool ok = false;
  for (auto* s : kSupported) ok |= a.dtype == s;
  if (!ok) throw Error(where + ": dtype '" + a.dtype + "' is not supported (expected one of <f4 <f8 <i4 <i8 <u4 <u8)");

  bool fortran = field(header, "fortran_order", where).rfind("True", 0) == 0;
  std::string shapeStr = field(header, "shape", where);
  if (shapeStr.empty() || shapeStr[0] != '(') throw Error(where + ": malformed shape in " + header);
  size_t count = 1;
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
    a.shape.push_back(size_t(dim));
    if (dim && count > (1ull << 40) / dim) throw Error(where + ": array too large: " + header);
    count *= size_t(dim);
    i = end;
  }
  if (a.shape.size() > 8) throw Error(where + ": more than 8 dimensions");
  size_t item = itemSize(a.dtype);
  if (count * item != bytes - offset)
    throw Error(where + ": shape " + a.shapeString() + " of " + a.dtype + " needs " + std::to_string(count * item) +
                " data bytes, found " + std::to_string(bytes - offset) + " (truncated or corrupt)");

  a.values.resize(count);
  const uint8_t* src = p + offset;
  if (!fortran || a.shape.size() < 2) {
    for (size_t i = 0; i < count; ++i) a.values[i] = readValue(src + i * item, a.dtype);
  } else {
    // Fortran order: the first index varies fastest. Walk C order with a running multi-index.
    size_t nd = a.shape.size();
    std::vector<size_t> fstride(nd, 1), idx(nd, 0);
    for (size_t d = 1; d < nd; ++d) fstride[d] = fstride[d - 1] * a.shape[d - 1];
    for (size_t i = 0; i < count; ++i) {
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

NpzArchive readNpzFromMemory(const void* data, size_t bytes, const std::string& name) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(data, bytes, 0, &err);
  if (!src) throw Error(name + ": " + zip_error_strerror(&err));
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!z) {
    std::string msg = zip_error_strerror(&err);
    zip_source_free(src);
    zip_error_fini(&err);
    throw Error(name + ": not a readable .npz (zip) archive: " + msg);
  }
  std::unique_ptr<zip_t, decltype(&zip_discard)> archive(z, zip_discard);
  NpzArchive out;
  zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* entry = zip_get_name(z, zip_uint64_t(i), 0);
    if (!entry) continue;
    std::string key = entry;
    if (key.size() < 4 || key.compare(key.size() - 4, 4, ".npy") != 0) continue;
    key.resize(key.size() - 4);
    zip_stat_t st;
    if (zip_stat_index(z, zip_uint64_t(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
      throw Error(name + ": cannot stat entry '" + key + "'");
    if (st.size > (1ull << 34)) throw Error(name + ": entry '" + key + "' claims an absurd size");
    std::vector<uint8_t> buf(st.size);
    zip_file_t* f = zip_fopen_index(z, zip_uint64_t(i), 0);
    if (!f) throw Error(name + ": cannot open entry '" + key + "': " + zip_strerror(z));
    zip_int64_t got = st.size ? zip_fread(f, buf.data(), st.size) : 0;
    std::string ferr = got < 0 ? zip_file_strerror(f) : "";
    zip_fclose(f);
    if (got < 0 || zip_uint64_t(got) != st.size)
      throw Error(name + ": entry '" + key + "' is truncated or corrupt" + (ferr.empty() ? "" : ": " + ferr));
    out[key] = parseNpy(buf.data(), buf.size(), name + ": key '" + key + "'");
  }
  return out;
}

NpzArchive readNpz(const std::string& path) {
  checkRegularFile(path, "file", kMaxNpzFileBytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  bool pickle = (bytes.size() > 2 && uint8_t(bytes[0]) == 0x80 && bytes[1] >= 2 && bytes[1] <= 5) ||
                (path.size() > 4 && path.compare(path.size() - 4, 4, ".pkl") == 0);
  if (pickle)
    throw Error(path +
                ": this is a Python pickle (.pkl), which Armature does not execute. Convert it once with: "
                "python -c \"import pickle,numpy as np,scipy.sparse as sp; d=pickle.load(open('" +
                path +
                "','rb'),encoding='latin1'); np.savez('model.npz', **{k:(v.toarray() if sp.issparse(v) else "
                "np.asarray(v)) for k,v in d.items() if not isinstance(v,str)})\" (needs chumpy installed for old SMPL "
                "files)");
  return readNpzFromMemory(bytes.data(), bytes.size(), path);
}

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
  int errorCode = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &errorCode);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, errorCode);
    std::string msg = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw Error(path + ": cannot create: " + msg);
  }
  std::vector<std::vector<uint8_t>> keepAlive;  // libzip reads the buffers at zip_close
  keepAlive.reserve(arrays.size());
  for (auto& [key, array] : arrays) {
    keepAlive.push_back(encodeNpy(array));
    auto& buf = keepAlive.back();
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
