#pragma once
// Pickle bytes written opcode by opcode, as Python writes them, for the tests of the restricted unpickler:
//   - protocol 2 as Python 2's cPickle wrote the released .pkl models: str keys as BINSTRING, numpy arrays through
//     numpy.core.multiarray._reconstruct, chumpy and scipy objects through NEWOBJ and BUILD, BINPUT/BINGET memo;
//   - protocol 4 as Python 3 writes: FRAME, SHORT_BINUNICODE, STACK_GLOBAL, MEMOIZE, BINBYTES, numpy._core.
// Protocol 0 (text) is written by hand in the tests that need it.
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "armature/body/body_model.h"

namespace armature::test {

class PickleWriter {
 public:
  explicit PickleWriter(int protocol) : m_protocol(protocol) {
    op(0x80);
    op(uint8_t(protocol));
    if (protocol >= 4) {  // one frame holding the rest; its length is patched in bytes()
      op(0x95);
      m_frameAt = out.size();
      u64(0);
    }
  }
  std::vector<uint8_t> out;

  std::vector<uint8_t> bytes() {
    op('.');
    std::vector<uint8_t> b = out;
    if (m_protocol >= 4) {
      const uint64_t frame = b.size() - (m_frameAt + 8);
      std::memcpy(&b[m_frameAt], &frame, 8);
    }
    return b;
  }

  void op(uint8_t c) { out.push_back(c); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  int memo() {  // stores the top of the stack, as both Pythons do after most values; returns its index
    if (m_protocol >= 4) {
      op(0x94);
    } else if (m_memo < 256) {
      op('q');
      op(uint8_t(m_memo));
    } else {
      op('r');
      u32(uint32_t(m_memo));
    }
    return m_memo++;
  }
  void recall(int index) {
    if (index < 256) {
      op('h');
      op(uint8_t(index));
    } else {
      op('j');
      u32(uint32_t(index));
    }
  }

  // A str: Python 2's bytes str (BINSTRING) or Python 3's unicode (SHORT_BINUNICODE).
  void str(const std::string& s) {
    if (m_protocol >= 4) {
      op(0x8c);
      op(uint8_t(s.size()));
    } else {
      op('T');
      u32(uint32_t(s.size()));
    }
    put(s.data(), s.size());
  }
  void data(const std::vector<uint8_t>& bytes) {  // raw array data: a Python 2 str or Python 3 bytes
    op(m_protocol >= 4 ? 'B' : 'T');
    u32(uint32_t(bytes.size()));
    put(bytes.data(), bytes.size());
  }
  void integer(int32_t v) {
    op('J');
    u32(uint32_t(v));
  }
  void real(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) op(uint8_t(bits >> (8 * i)));
  }
  void global(const std::string& module, const std::string& name) {
    if (m_protocol >= 4) {
      str(module);
      str(name);
      op(0x93);
    } else {
      op('c');
      put(module.data(), module.size());
      op('\n');
      put(name.data(), name.size());
      op('\n');
    }
  }
  void tuple(const std::vector<int64_t>& ints) {
    op('(');
    for (int64_t v : ints) {
      if (v == int32_t(v)) {
        integer(int32_t(v));
      } else {  // LONG1, as Python writes an int past 32 bits: 8 little-endian bytes of two's complement
        op(0x8a);
        op(8);
        u64(uint64_t(v));
      }
    }
    op('t');
  }

  // numpy.dtype(code, False, True) with its state (3, order, None, None, None, -1, -1, 0); a dtype written before
  // is recalled from the memo, as pickle does for a shared object.
  void dtype(const std::string& code, char order = '<') {
    const std::string id = order + code;
    if (auto it = m_dtypes.find(id); it != m_dtypes.end()) return recall(it->second);
    global("numpy", "dtype");
    op('(');
    str(code);
    op(0x89);
    op(0x88);
    op('t');
    op('R');
    op('(');
    integer(3);
    str(std::string(1, order));
    op('N');
    op('N');
    op('N');
    integer(-1);
    integer(-1);
    integer(0);
    op('t');
    op('b');
    m_dtypes[id] = memo();
  }
  // An ndarray as numpy's __reduce__ writes it: _reconstruct(ndarray, (0,), b'b') then BUILD with
  // (1, shape, dtype, fortran, data).
  void array(const std::vector<size_t>& shape, const std::string& code, const std::vector<uint8_t>& raw,
             bool fortran = false, char order = '<') {
    global(m_protocol >= 4 ? "numpy._core.multiarray" : "numpy.core.multiarray", "_reconstruct");
    op('(');
    global("numpy", "ndarray");
    tuple({0});
    str("b");
    op('t');
    op('R');
    memo();
    op('(');
    integer(1);
    std::vector<int64_t> dims(shape.begin(), shape.end());
    tuple(dims);
    dtype(code, order);
    op(fortran ? 0x88 : 0x89);
    data(raw);
    op('t');
    op('b');
  }
  void array(const NpyWrite& a) {
    const char* code = a.type == NpyType::F32   ? "f4"
                       : a.type == NpyType::F64 ? "f8"
                       : a.type == NpyType::I32 ? "i4"
                       : a.type == NpyType::I64 ? "i8"
                                                : "u4";
    const size_t item = a.type == NpyType::F64 || a.type == NpyType::I64 ? 8 : 4;
    std::vector<uint8_t> raw(a.values.size() * item);
    for (size_t i = 0; i < a.values.size(); ++i) {
      const double v = a.values[i];
      uint8_t* p = raw.data() + i * item;
      if (a.type == NpyType::F32) {
        const float f = float(v);
        std::memcpy(p, &f, 4);
      }
      if (a.type == NpyType::F64) std::memcpy(p, &v, 8);
      if (a.type == NpyType::I32) {
        const int32_t x = int32_t(v);
        std::memcpy(p, &x, 4);
      }
      if (a.type == NpyType::I64) {
        const int64_t x = int64_t(v);
        std::memcpy(p, &x, 8);
      }
      if (a.type == NpyType::U32) {
        const uint32_t x = uint32_t(v);
        std::memcpy(p, &x, 4);
      }
    }
    array(a.shape, code, raw);
  }
  // An object made by NEWOBJ (cls.__new__(cls)) and filled by BUILD with a dict; `fill` writes the dict's items.
  template <typename Fill>
  void object(const std::string& module, const std::string& name, Fill fill) {
    global(module, name);
    op(')');
    op(0x81);
    memo();
    op('}');
    op('(');
    fill();
    op('u');
    op('b');
  }
  // chumpy.ch.Ch holding the array in 'x' (with one of chumpy's other attributes, as released files have them).
  void ch(const NpyWrite& a) {
    object("chumpy.ch", "Ch", [&] {
      str("x");
      array(a);
      str("_depends_on_deps");
      op('}');
    });
  }
  // scipy.sparse.csc_matrix of a dense row-major (rows, cols) matrix, as scipy pickles it.
  void csc(size_t rows, size_t cols, const std::vector<double>& dense) {
    std::vector<double> data, indices, indptr = {0};
    for (size_t c = 0; c < cols; ++c) {
      for (size_t r = 0; r < rows; ++r)
        if (dense[r * cols + c] != 0) data.push_back(dense[r * cols + c]), indices.push_back(double(r));
      indptr.push_back(double(data.size()));
    }
    object(m_protocol >= 4 ? "scipy.sparse._csc" : "scipy.sparse.csc", "csc_matrix", [&] {
      str("_shape");
      tuple({int64_t(rows), int64_t(cols)});
      str("data");
      array({{data.size()}, NpyType::F64, data});
      str("indices");
      array({{indices.size()}, NpyType::I32, indices});
      str("indptr");
      array({{indptr.size()}, NpyType::I32, indptr});
      str("format");
      str("csc");
      str("maxprint");
      integer(50);
    });
  }

 private:
  int m_protocol;
  size_t m_frameAt = 0;
  int m_memo = 0;
  std::map<std::string, int> m_dtypes;
};

// A model as its .pkl release stores it: a dict with v_template and shapedirs in chumpy Ch, J_regressor a csc
// matrix, the other arrays plain, and the strings bs_style / bs_type.
inline std::vector<uint8_t> pickleBodyModel(const BodyModel& m, int protocol) {
  PickleWriter w(protocol);
  w.op('}');
  w.memo();
  w.op('(');
  for (const auto& [key, array] : bodyModelToNpz(m)) {
    w.str(key);
    if (key == "v_template" || key == "shapedirs")
      w.ch(array);
    else if (key == "J_regressor") {  // float64 data in the pickle, holding the float32 values the .npz stores
      std::vector<double> values = array.values;
      for (double& v : values) v = double(float(v));
      w.csc(m.jointCount, m.vertexCount, values);
    } else
      w.array(array);
  }
  w.str("bs_style");
  w.str("lbs");
  w.str("bs_type");
  w.str("lrotmin");
  w.op('u');
  return w.bytes();
}

}  // namespace armature::test
