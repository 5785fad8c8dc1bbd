#include "armature/body/pickle.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

#include "armature/error.h"

namespace armature {

namespace {

constexpr uint32_t kNoValue = ~0u;

enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Set, Class, Object };

// One Python value. Containers and objects refer to other values by index into the unpickler's arena, so a crafted
// nesting costs no recursion to build or to free.
struct Value {
  Kind kind = Kind::None;
  int64_t integer = 0;                         // Bool, Int
  double real = 0;                             // Float
  std::string text;                            // Str (UTF-8), Bytes; Class and Object: the class's short name
  std::vector<uint32_t> items;                 // List, Tuple, Set; Dict: key, value, key, value, ...
  uint32_t args = kNoValue, state = kNoValue;  // Object: the constructor's arguments and BUILD's state
};

// The classes and functions a model file may name, by the names pickles give them, and what this reader calls them.
const std::map<std::string, std::string>& knownGlobals() {
  static const std::map<std::string, std::string> known = {
      {"numpy.core.multiarray._reconstruct", "_reconstruct"},
      {"numpy._core.multiarray._reconstruct", "_reconstruct"},
      {"numpy.core.multiarray.scalar", "scalar"},
      {"numpy._core.multiarray.scalar", "scalar"},
      {"numpy.core.numeric._frombuffer", "_frombuffer"},
      {"numpy._core.numeric._frombuffer", "_frombuffer"},
      {"numpy.ndarray", "ndarray"},
      {"numpy.dtype", "dtype"},
      {"chumpy.ch.Ch", "Ch"},
      {"scipy.sparse.csc.csc_matrix", "csc"},
      {"scipy.sparse._csc.csc_matrix", "csc"},
      {"scipy.sparse._csc.csc_array", "csc"},
      {"scipy.sparse._arrays.csc_array", "csc"},
      {"scipy.sparse.csr.csr_matrix", "csr"},
      {"scipy.sparse._csr.csr_matrix", "csr"},
      {"scipy.sparse._csr.csr_array", "csr"},
      {"scipy.sparse._arrays.csr_array", "csr"},
      {"copy_reg._reconstructor", "_reconstructor"},
      {"copyreg._reconstructor", "_reconstructor"},
      {"__builtin__.object", "object"},
      {"builtins.object", "object"},
      {"_codecs.encode", "encode"},
  };
  return known;
}

// Code point to UTF-8.
void appendUtf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xc0 | c >> 6), out += char(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += char(0xe0 | c >> 12), out += char(0x80 | (c >> 6 & 0x3f)), out += char(0x80 | (c & 0x3f));
  } else {
    out += char(0xf0 | c >> 18), out += char(0x80 | (c >> 12 & 0x3f)), out += char(0x80 | (c >> 6 & 0x3f)),
        out += char(0x80 | (c & 0x3f));
  }
}

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t bytes, const std::string& name) : m_p(data), m_n(bytes), m_name(name) {}
  std::vector<Value> values;

  uint32_t run() {
    while (true) {
      m_op = m_at;
      const uint8_t op = *take(1);
      switch (op) {
        case 0x80:  // PROTO
          if (*take(1) > 5) fail("pickle protocol " + std::to_string(m_p[m_at - 1]) + " (expected 0 to 5)");
          break;
        case 0x95:  // FRAME: a length hint only
          take(8);
          break;
        case '.':  // STOP
          return pop();
        case '(':  // MARK
          m_marks.push_back(m_stack.size());
          break;
        case '0':  // POP (or the mark itself, as CPython does, when nothing is above it)
          if (!m_marks.empty() && m_marks.back() == m_stack.size())
            m_marks.pop_back();
          else
            pop();
          break;
        case '1':  // POP_MARK
          popMark();
          break;
        case '2':  // DUP
          push(top());
          break;
        case 'N':
          push(add({}));
          break;
        case 0x88:
        case 0x89:
          push(number(Kind::Bool, op == 0x88));
          break;
        case 'I': {  // INT (text; "00" and "01" are protocol 0's booleans)
          const std::string s = line();
          push(s == "00" || s == "01" ? number(Kind::Bool, s == "01") : number(Kind::Int, parseInt(s)));
          break;
        }
        case 'L': {  // LONG (text, with Python 2's trailing L)
          std::string s = line();
          if (!s.empty() && s.back() == 'L') s.pop_back();
          push(number(Kind::Int, parseInt(s)));
          break;
        }
        case 'J':
          push(number(Kind::Int, int32_t(uint32_t(le(4)))));
          break;
        case 'K':
          push(number(Kind::Int, int64_t(le(1))));
          break;
        case 'M':
          push(number(Kind::Int, int64_t(le(2))));
          break;
        case 0x8a:  // LONG1
          push(number(Kind::Int, longBytes(le(1))));
          break;
        case 0x8b:  // LONG4
          push(number(Kind::Int, longBytes(le(4))));
          break;
        case 'F': {
          const std::string s = line();
          char* end = nullptr;
          Value v{Kind::Float};
          v.real = std::strtod(s.c_str(), &end);
          if (s.empty() || *end) fail("malformed FLOAT '" + s + "'");
          push(add(std::move(v)));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          uint64_t bits = 0;
          for (const uint8_t *b = take(8), *e = b + 8; b < e; ++b) bits = bits << 8 | *b;
          Value v{Kind::Float};
          std::memcpy(&v.real, &bits, 8);
          push(add(std::move(v)));
          break;
        }
        case 'S':
          push(text(Kind::Bytes, quoted(line())));
          break;
        case 'V':
          push(text(Kind::Str, rawUnicode(line())));
          break;
        case 'T':
        case 'B':
        case 'X':
          push(text(op == 'X' ? Kind::Str : Kind::Bytes, counted(le(4))));
          break;
        case 'U':
        case 'C':
        case 0x8c:
          push(text(op == 0x8c ? Kind::Str : Kind::Bytes, counted(le(1))));
          break;
        case 0x8d:
        case 0x8e:
        case 0x96:
          push(text(op == 0x8d ? Kind::Str : Kind::Bytes, counted(le(8))));
          break;
        case ']':
        case ')':
        case '}':
        case 0x8f:
          push(add({op == ']' ? Kind::List : op == ')' ? Kind::Tuple : op == '}' ? Kind::Dict : Kind::Set}));
          break;
        case 'l':
        case 't':
        case 0x91:
          push(container(op == 'l' ? Kind::List : op == 't' ? Kind::Tuple : Kind::Set, popMark()));
          break;
        case 'd': {
          std::vector<uint32_t> items = popMark();
          if (items.size() % 2) fail("DICT with an odd number of items");
          push(container(Kind::Dict, std::move(items)));
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {
          std::vector<uint32_t> items(size_t(op - 0x84));
          for (size_t i = items.size(); i-- > 0;) items[i] = pop();
          push(container(Kind::Tuple, std::move(items)));
          break;
        }
        case 'a': {
          const uint32_t item = pop();
          extend(Kind::List, {item});
          break;
        }
        case 'e':
          extend(Kind::List, popMark());
          break;
        case 's': {
          const uint32_t value = pop(), key = pop();
          extend(Kind::Dict, {key, value});
          break;
        }
        case 'u': {
          std::vector<uint32_t> items = popMark();
          if (items.size() % 2) fail("SETITEMS with an odd number of items");
          extend(Kind::Dict, std::move(items));
          break;
        }
        case 0x90:
          extend(Kind::Set, popMark());
          break;
        case 'p':
          memoize(parseIndex(line()));
          break;
        case 'q':
          memoize(le(1));
          break;
        case 'r':
          memoize(le(4));
          break;
        case 0x94:
          memoize(m_memo.size());
          break;
        case 'g':
          push(recall(parseIndex(line())));
          break;
        case 'h':
          push(recall(le(1)));
          break;
        case 'j':
          push(recall(le(4)));
          break;
        case 'c': {
          const std::string module = line();
          push(global(module, line()));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const Value& name = strAt(pop(), "STACK_GLOBAL's name");
          const Value& module = strAt(pop(), "STACK_GLOBAL's module");
          push(global(module.text, name.text));
          break;
        }
        case 'i': {  // INST: class from the text, arguments from the mark
          const std::string module = line();
          const uint32_t cls = global(module, line());
          push(call(cls, container(Kind::Tuple, popMark())));
          break;
        }
        case 'o': {  // OBJ: class and arguments from the mark
          std::vector<uint32_t> items = popMark();
          if (items.empty()) fail("OBJ without a class");
          const uint32_t cls = items.front();
          items.erase(items.begin());
          push(call(cls, container(Kind::Tuple, std::move(items))));
          break;
        }
        case 'R': {
          const uint32_t args = pop();
          const uint32_t callable = pop();
          push(call(callable, args));
          break;
        }
        case 0x81:
        case 0x92: {  // NEWOBJ, NEWOBJ_EX: cls.__new__(cls, *args) makes an empty object
          if (op == 0x92) pop();
          const uint32_t args = pop();
          const uint32_t cls = pop();
          push(object(classAt(cls), args));
          break;
        }
        case 'b': {  // BUILD: the state is kept and read when the value is decoded
          const uint32_t state = pop();
          Value& target = values[top()];
          if (target.kind != Kind::Object) fail("BUILD on a value that is not an object");
          target.state = state;
          break;
        }
        case 'P':
        case 'Q':
          fail("persistent ids are refused (the file would need outside objects)");
        case 0x82:
        case 0x83:
        case 0x84:
          fail("extension-registry opcodes are refused");
        case 0x97:
        case 0x98:
          fail("out-of-band buffers are refused");
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(std::string("unknown pickle opcode ") + hex + " (not a pickle, or a corrupt one)");
        }
      }
    }
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(m_name + ": pickle byte " + std::to_string(m_op) + ": " + message);
  }

 private:
  const uint8_t* take(size_t k) {
    if (k > m_n - m_at) fail("truncated (the data ends inside an opcode; no STOP)");
    const uint8_t* q = m_p + m_at;
    m_at += k;
    return q;
  }
  uint64_t le(size_t k) {
    const uint8_t* q = take(k);
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;) v = v << 8 | q[i];
    return v;
  }
  std::string line() {
    const void* nl = m_at < m_n ? std::memchr(m_p + m_at, '\n', m_n - m_at) : nullptr;
    if (!nl) fail("truncated (a text opcode without its newline)");
    const size_t end = size_t(static_cast<const uint8_t*>(nl) - m_p);
    std::string s(reinterpret_cast<const char*>(m_p + m_at), end - m_at);
    m_at = end + 1;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    return s;
  }
  std::string counted(uint64_t k) {
    if (k > m_n - m_at) fail("a string of " + std::to_string(k) + " bytes runs past the end of the data");
    const uint8_t* q = take(size_t(k));
    return std::string(reinterpret_cast<const char*>(q), size_t(k));
  }
  int64_t parseInt(const std::string& s) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || errno == ERANGE) fail("integer '" + s + "' is malformed or does not fit 64 bits");
    return v;
  }
  uint64_t parseIndex(const std::string& s) {
    const int64_t v = parseInt(s);
    if (v < 0) fail("negative memo index");
    return uint64_t(v);
  }
  int64_t longBytes(uint64_t k) {  // two's complement, little-endian
    if (k > 8) fail("an integer of " + std::to_string(k) + " bytes (more than 64 bits)");
    if (k == 0) return 0;
    uint64_t v = le(size_t(k));
    if (k < 8 && (v >> (8 * k - 1) & 1)) v |= ~uint64_t(0) << (8 * k);
    return int64_t(v);
  }
  // Python 2 repr of a str: quoted, with \\ \' \" \n \r \t \xHH and octal escapes.
  std::string quoted(const std::string& s) {
    if (s.size() < 2 || (s[0] != '\'' && s[0] != '"') || s.back() != s[0]) fail("STRING is not quoted");
    std::string out;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      if (s[i] != '\\') {
        out += s[i];
        continue;
      }
      if (++i + 1 >= s.size()) fail("STRING ends in an escape");
      const char c = s[i];
      if (c == 'n' || c == 'r' || c == 't') {
        out += c == 'n' ? '\n' : c == 'r' ? '\r' : '\t';
      } else if (c == 'x' && i + 3 < s.size() && std::isxdigit(uint8_t(s[i + 1])) && std::isxdigit(uint8_t(s[i + 2]))) {
        out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else if (c >= '0' && c <= '7') {
        int v = 0, k = 0;
        for (; k < 3 && i + 1 < s.size() && s[i] >= '0' && s[i] <= '7'; ++k, ++i) v = v * 8 + (s[i] - '0');
        --i;
        out += char(v);
      } else {
        out += c;  // \\ \' \" and unknown escapes keep the character
      }
    }
    return out;
  }
  // raw-unicode-escape: bytes are Latin-1 code points, \uXXXX and \UXXXXXXXX escape the rest.
  std::string rawUnicode(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t digits = s[i] == '\\' && i + 1 < s.size() ? (s[i + 1] == 'u' ? 4 : s[i + 1] == 'U' ? 8 : 0) : 0;
      if (digits && i + 1 + digits < s.size()) {
        const std::string hex = s.substr(i + 2, digits);
        if (hex.size() != digits || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
          fail("malformed \\u escape in UNICODE");
        const unsigned long c = std::stoul(hex, nullptr, 16);
        if (c > 0x10ffff) fail("code point past U+10FFFF in UNICODE");
        appendUtf8(out, uint32_t(c));
        i += 1 + digits;
      } else {
        appendUtf8(out, uint8_t(s[i]));
      }
    }
    return out;
  }

  uint32_t add(Value v) {
    if (values.size() >= kMaxPickleValues)
      fail("more than " + std::to_string(kMaxPickleValues) + " values (kMaxPickleValues; a model file has hundreds)");
    values.push_back(std::move(v));
    return uint32_t(values.size() - 1);
  }
  uint32_t number(Kind kind, int64_t v) {
    Value value{kind};
    value.integer = v;
    return add(std::move(value));
  }
  uint32_t text(Kind kind, std::string s) {
    Value v{kind};
    v.text = std::move(s);
    return add(std::move(v));
  }
  uint32_t container(Kind kind, std::vector<uint32_t> items) {
    Value v{kind};
    v.items = std::move(items);
    return add(std::move(v));
  }
  uint32_t object(const std::string& cls, uint32_t args) {
    Value v{Kind::Object};
    v.text = cls;
    v.args = args;
    return add(std::move(v));
  }
  void extend(Kind kind, std::vector<uint32_t> items) {
    Value& target = values[top()];
    if (target.kind != kind)
      fail("appending to a value that is not a " + std::string(kind == Kind::List   ? "list"
                                                               : kind == Kind::Dict ? "dict"
                                                                                    : "set"));
    target.items.insert(target.items.end(), items.begin(), items.end());
  }

  void push(uint32_t v) { m_stack.push_back(v); }
  size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
  uint32_t pop() {
    if (m_stack.size() <= floor()) fail("stack underflow");
    const uint32_t v = m_stack.back();
    m_stack.pop_back();
    return v;
  }
  uint32_t top() const {
    if (m_stack.size() <= floor()) fail("stack underflow");
    return m_stack.back();
  }
  std::vector<uint32_t> popMark() {
    if (m_marks.empty()) fail("no MARK to pop to");
    std::vector<uint32_t> items(m_stack.begin() + long(m_marks.back()), m_stack.end());
    m_stack.resize(m_marks.back());
    m_marks.pop_back();
    return items;
  }
  void memoize(uint64_t index) {
    if (m_memo.size() >= kMaxPickleValues && !m_memo.count(index)) fail("memo larger than kMaxPickleValues");
    m_memo[index] = top();
  }
  uint32_t recall(uint64_t index) {
    auto it = m_memo.find(index);
    if (it == m_memo.end()) fail("memo index " + std::to_string(index) + " was never stored");
    return it->second;
  }

  const Value& strAt(uint32_t v, const char* what) const {
    if (values[v].kind != Kind::Str && values[v].kind != Kind::Bytes) fail(std::string(what) + " is not a string");
    return values[v];
  }
  const std::string& classAt(uint32_t v) const {
    if (values[v].kind != Kind::Class) fail("calling a value that is not a class or function");
    return values[v].text;
  }
  uint32_t global(const std::string& module, const std::string& name) {
    auto it = knownGlobals().find(module + "." + name);
    if (it == knownGlobals().end())
      fail("refused class '" + module + "." + name +
           "': not one a model file uses (numpy arrays, chumpy Ch, scipy sparse matrices and Python's basic types; "
           "the unpickler runs no code)");
    Value v{Kind::Class};
    v.text = it->second;
    return add(std::move(v));
  }
  // A call of a known global with a tuple of arguments: every one builds data, none runs anything.
  uint32_t call(uint32_t callable, uint32_t args) {
    const std::string& fn = classAt(callable);
    if (values[args].kind != Kind::Tuple) fail("call arguments that are not a tuple");
    const std::vector<uint32_t> a = values[args].items;
    if (fn == "_reconstruct") {  // numpy: an empty array of the class in a[0], filled by BUILD
      return object("ndarray", args);
    }
    if (fn == "_reconstructor") {  // copy_reg: object.__new__(a[0]), filled by BUILD
      if (a.empty()) fail("_reconstructor without a class");
      return object(classAt(a[0]), args);
    }
    if (fn == "encode") {  // _codecs.encode(text, 'latin1'): how protocol 2 writes Python 3 bytes
      if (a.size() < 1 || values[a[0]].kind != Kind::Str) fail("_codecs.encode of something other than a str");
      if (a.size() > 1 && strAt(a[1], "the encoding").text != "latin1" && values[a[1]].text != "latin-1")
        fail("_codecs.encode with encoding '" + values[a[1]].text + "' (expected latin1)");
      return text(Kind::Bytes, latin1(values[a[0]].text));
    }
    return object(fn, args);  // dtype, scalar, _frombuffer, and classes called directly
  }
  std::string latin1(const std::string& utf8) {
    std::string out;
    for (size_t i = 0; i < utf8.size(); ++i) {
      const uint8_t c = uint8_t(utf8[i]);
      if (c < 0x80) {
        out += char(c);
      } else if ((c & 0xe0) == 0xc0 && i + 1 < utf8.size() && c <= 0xc3) {
        out += char((c & 0x1f) << 6 | (uint8_t(utf8[++i]) & 0x3f));
      } else {
        fail("_codecs.encode of a character outside Latin-1");
      }
    }
    return out;
  }

  const uint8_t* m_p;
  size_t m_n, m_at = 0, m_op = 0;
  const std::string& m_name;
  std::vector<uint32_t> m_stack;
  std::vector<size_t> m_marks;
  std::unordered_map<uint64_t, uint32_t> m_memo;
};

// ---- values to arrays ------------------------------------------------------------------------------------------

// A numeric dtype as "<f8" and friends (byte order '<', '>' or '|'), or "str" / "object" for what is not numbers.
struct DType {
  std::string name;
  bool numeric = false;
  size_t item = 0;
  bool swap = false;  // big-endian data
};

DType dtypeFromCode(std::string code, char order) {
  DType d;
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    order = code[0];
    code.erase(0, 1);
  }
  if (code.size() >= 2 && code.size() <= 3 && std::string("fiub").find(code[0]) != std::string::npos &&
      code.find_first_not_of("0123456789", 1) == std::string::npos) {
    d.item = size_t(std::stoul(code.substr(1)));
    const bool ok = code[0] == 'f'   ? (d.item == 4 || d.item == 8)
                    : code[0] == 'b' ? d.item == 1
                                     : (d.item == 1 || d.item == 2 || d.item == 4 || d.item == 8);
    if (ok) {
      d.numeric = true;
      d.swap = order == '>' && d.item > 1;
      d.name = std::string(1, d.item == 1 ? '|' : order == '>' ? '>' : '<') + code;
      return d;
    }
  }
  d.name = !code.empty() && (code[0] == 'U' || code[0] == 'S') ? "str" : code.empty() ? "object" : "|" + code;
  return d;
}

double elementAt(const uint8_t* p, const DType& d) {
  uint8_t b[8];
  std::memcpy(b, p, d.item);
  if (d.swap)
    for (size_t i = 0; i < d.item / 2; ++i) std::swap(b[i], b[d.item - 1 - i]);
  const char kind = d.name[1];
  auto as = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, b, sizeof v);
    return double(v);
  };
  if (kind == 'f') return d.item == 4 ? as(float()) : as(double());
  if (kind == 'i')
    return d.item == 1 ? as(int8_t()) : d.item == 2 ? as(int16_t()) : d.item == 4 ? as(int32_t()) : as(int64_t());
  return d.item == 1 ? as(uint8_t()) : d.item == 2 ? as(uint16_t()) : d.item == 4 ? as(uint32_t()) : as(uint64_t());
}

// The pickle's values, read as arrays on demand. `where` names the file and the key in every message.
struct Decoder {
  std::vector<Value> values;
  NpzLimits limits;
  uint64_t decodedBytes = 0;

  const Value& at(uint32_t v) const { return values[v]; }
  [[noreturn]] static void fail(const std::string& where, const std::string& message) {
    throw Error(where + ": " + message);
  }
  const Value* dictItem(uint32_t dict, const std::string& key) const {
    if (dict == kNoValue || at(dict).kind != Kind::Dict) return nullptr;
    const auto& items = at(dict).items;
    for (size_t i = 0; i + 1 < items.size(); i += 2)
      if ((at(items[i]).kind == Kind::Str || at(items[i]).kind == Kind::Bytes) && at(items[i]).text == key)
        return &at(items[i + 1]);
    return nullptr;
  }
  uint32_t indexOf(const Value* v) const { return v ? uint32_t(v - values.data()) : kNoValue; }
  // The elements of a shape, the product checked: each dimension may pass on its own while the product wraps.
  static uint64_t elementsOf(const std::vector<size_t>& shape, const std::string& where) {
    uint64_t n = 1;
    for (size_t d : shape) n = checkedProduct({n, d}, where + ": an array's shape");
    if (n > (uint64_t(1) << 40)) fail(where, "an array of " + std::to_string(n) + " elements (more than 2^40)");
    return n;
  }
  std::vector<size_t> shapeOf(uint32_t tuple, const std::string& where) const {
    if (tuple == kNoValue || (at(tuple).kind != Kind::Tuple && at(tuple).kind != Kind::List))
      fail(where, "an array's shape is not a tuple");
    std::vector<size_t> shape;
    for (uint32_t d : at(tuple).items) {
      if (at(d).kind != Kind::Int || at(d).integer < 0 || at(d).integer > (int64_t(1) << 40))
        fail(where, "an array's shape holds something other than a dimension");
      shape.push_back(size_t(at(d).integer));
    }
    if (shape.size() > 8) fail(where, "more than 8 dimensions");
    elementsOf(shape, where);  // refuses a shape whose product wraps
    return shape;
  }
  DType dtypeOf(uint32_t dtype, const std::string& where) const {
    const Value& d = at(dtype);
    if (d.kind != Kind::Object || d.text != "dtype" || d.args == kNoValue || at(d.args).items.empty() ||
        at(at(d.args).items[0]).kind == Kind::Int)
      fail(where, "an array's dtype is not a numpy dtype");
    const Value& code = at(at(d.args).items[0]);
    char order = '<';
    if (d.state != kNoValue && at(d.state).kind == Kind::Tuple && at(d.state).items.size() > 1) {
      const Value& o = at(at(d.state).items[1]);
      if ((o.kind == Kind::Str || o.kind == Kind::Bytes) && o.text.size() == 1) order = o.text[0];
    }
    return dtypeFromCode(code.text, order == '=' ? '<' : order);
  }

  // What an ndarray holds: its dtype, shape, order and data (a bytes value, or a list for object arrays).
  struct ArrayParts {
    DType dtype;
    std::vector<size_t> shape;
    bool fortran = false;
    uint32_t data = kNoValue;
  };
  ArrayParts arrayParts(const Value& v, const std::string& where) const {
    ArrayParts p;
    if (v.text == "_frombuffer") {  // protocol 5: _frombuffer(buffer, dtype, shape, order)
      const auto& a = at(v.args).items;
      if (a.size() != 4) fail(where, "numpy _frombuffer with " + std::to_string(a.size()) + " arguments");
      p.dtype = dtypeOf(a[1], where);
      p.shape = shapeOf(a[2], where);
      p.fortran = at(a[3]).text == "F";
      p.data = a[0];
      return p;
    }
    if (v.state == kNoValue || at(v.state).kind != Kind::Tuple) fail(where, "a numpy array without its state");
    std::vector<uint32_t> s = at(v.state).items;
    if (s.size() == 5) s.erase(s.begin());  // the version
    if (s.size() != 4) fail(where, "a numpy array state of " + std::to_string(s.size()) + " items");
    p.shape = shapeOf(s[0], where);
    p.dtype = dtypeOf(s[1], where);
    p.fortran = at(s[2]).kind == Kind::Bool && at(s[2]).integer;
    p.data = s[3];
    return p;
  }

  // The array a value stands for, without decoding: dtype and shape. Unreadable values get "str" or "object".
  NpzEntry describe(uint32_t v, const std::string& key, int depth = 0) const {
    NpzEntry e;
    e.key = key;
    const std::string where = "key '" + key + "'";
    const Value& x = at(v);
    switch (x.kind) {
      case Kind::Int:
      case Kind::Bool:
      case Kind::Float:
        e.dtype = x.kind == Kind::Float ? "<f8" : x.kind == Kind::Int ? "<i8" : "|b1";
        e.readable = true;
        e.bytes = 8;
        return e;
      case Kind::Str:
      case Kind::Bytes:
        e.dtype = "str";
        return e;
      case Kind::List: {
        const bool numbers = allNumbers(v);
        e.dtype = numbers ? "<f8" : "object";
        e.shape = {x.items.size()};
        e.readable = numbers;
        e.bytes = 8 * x.items.size();
        return e;
      }
      case Kind::Object:
        break;
      default:
        e.dtype = "object";
        return e;
    }
    if (depth > 2) fail(where, "objects nested too deeply");
    if (x.text == "ndarray" || x.text == "_frombuffer") {
      const ArrayParts p = arrayParts(x, where);
      e.dtype = p.dtype.name;
      e.shape = p.shape;
      e.readable = p.dtype.numeric;
      e.bytes = elementsOf(p.shape, where) * 8;  // held as doubles
      return e;
    }
    if (x.text == "Ch") {  // chumpy: the array is its 'x'
      const Value* inner = dictItem(x.state, "x");
      if (!inner) fail(where, "a chumpy Ch object without its 'x' array");
      return describe(indexOf(inner), key, depth + 1);
    }
    if (x.text == "csc" || x.text == "csr") {
      const Value* shape = dictItem(x.state, "_shape");
      if (!shape) shape = dictItem(x.state, "shape");
      if (!shape) fail(where, "a scipy sparse matrix without its shape");
      e.shape = shapeOf(indexOf(shape), where);
      if (e.shape.size() != 2) fail(where, "a sparse matrix of " + std::to_string(e.shape.size()) + " dimensions");
      e.dtype = "<f8";
      e.readable = true;
      e.bytes = elementsOf(e.shape, where) * 8;
      return e;
    }
    if (x.text == "scalar") {
      const auto& a = at(x.args).items;
      if (a.size() != 2) fail(where, "a numpy scalar with " + std::to_string(a.size()) + " arguments");
      const DType d = dtypeOf(a[0], where);
      e.dtype = d.name;
      e.readable = d.numeric;
      e.bytes = d.item;
      return e;
    }
    e.dtype = "object";
    return e;
  }

  // Whether a list holds only numbers, worked out once per list: many keys may name one memoised list, and walking
  // it for each would make describing a file quadratic in its size.
  mutable std::map<uint32_t, bool> numberLists;
  bool allNumbers(uint32_t list) const {
    const auto known = numberLists.find(list);
    if (known != numberLists.end()) return known->second;
    bool numbers = true;
    for (uint32_t i : at(list).items)
      numbers &= at(i).kind == Kind::Int || at(i).kind == Kind::Float || at(i).kind == Kind::Bool;
    return numberLists[list] = numbers;
  }

  // Counts `bytes` against the limits before they are allocated.
  void charge(uint64_t bytes, const std::string& where) {
    if (bytes > limits.maxEntryBytes)
      fail(where, std::to_string(bytes >> 20) + " MiB decoded, over the limit of " +
                      std::to_string(limits.maxEntryBytes >> 20) +
                      " MiB an entry (ARMATURE_READ_BUDGET_MIB raises it)");
    if (decodedBytes + bytes > limits.maxTotalBytes)
      fail(where, "would bring the bytes decoded from the pickle to " + std::to_string((decodedBytes + bytes) >> 20) +
                      " MiB, over the limit of " + std::to_string(limits.maxTotalBytes >> 20) +
                      " MiB (ARMATURE_READ_BUDGET_MIB raises it)");
    decodedBytes += bytes;
  }

  NpyArray ndarray(const Value& v, const std::string& where) {
    const ArrayParts p = arrayParts(v, where);
    if (!p.dtype.numeric) fail(where, "dtype '" + p.dtype.name + "' is not numbers");
    const Value& data = at(p.data);
    if (data.kind != Kind::Bytes && data.kind != Kind::Str) fail(where, "an array's data is not bytes");
    NpyArray a;
    a.dtype = p.dtype.name;
    a.shape = p.shape;
    const size_t count = elementsOf(p.shape, where);
    if (data.text.size() != count * p.dtype.item)
      fail(where, "shape " + a.shapeString() + " of " + a.dtype + " needs " + std::to_string(count * p.dtype.item) +
                      " data bytes, found " + std::to_string(data.text.size()) + " (truncated or corrupt)");
    charge(count * sizeof(double), where);  // held as doubles, whatever the dtype
    a.values.resize(count);
    const auto* src = reinterpret_cast<const uint8_t*>(data.text.data());
    const size_t nd = p.shape.size();
    std::vector<size_t> fstride(nd, 1), idx(nd, 0);
    for (size_t d = 1; d < nd; ++d) fstride[d] = fstride[d - 1] * p.shape[d - 1];
    for (size_t i = 0; i < count; ++i) {
      size_t from = i;
      if (p.fortran && nd > 1) {  // the first index varies fastest: walk C order with a running multi-index
        from = 0;
        for (size_t d = 0; d < nd; ++d) from += idx[d] * fstride[d];
        for (size_t d = nd; d-- > 0;) {
          if (++idx[d] < p.shape[d]) break;
          idx[d] = 0;
        }
      }
      a.values[i] = elementAt(src + from * p.dtype.item, p.dtype);
    }
    return a;
  }

  NpyArray sparse(const Value& v, const NpzEntry& e, const std::string& where) {
    auto part = [&](const char* name) {
      const Value* x = dictItem(v.state, name);
      if (!x || x->kind != Kind::Object) fail(where, std::string("a sparse matrix without its '") + name + "' array");
      return decode(indexOf(x), where + " '" + name + "'", 1);
    };
    const size_t rows = e.shape[0], cols = e.shape[1];
    charge(elementsOf(e.shape, where) * sizeof(double), where);  // the dense result, before its parts are decoded
    const NpyArray data = part("data"), indices = part("indices"), indptr = part("indptr");
    const bool csc = v.text == "csc";
    const size_t outer = csc ? cols : rows, inner = csc ? rows : cols;
    if (indptr.size() != outer + 1 || indices.size() != data.size() || indptr.values[0] != 0 ||
        indptr.values[outer] != double(data.size()))
      fail(where, "a " + std::string(csc ? "csc" : "csr") + " matrix whose index arrays do not fit its shape " +
                      std::to_string(rows) + "x" + std::to_string(cols) + " and " + std::to_string(data.size()) +
                      " values");
    NpyArray a;
    a.dtype = "<f8";
    a.shape = e.shape;
    a.values.assign(rows * cols, 0.0);
    for (size_t o = 0; o < outer; ++o) {
      const double begin = indptr.values[o], end = indptr.values[o + 1];
      if (!(0 <= begin && begin <= end && end <= double(data.size())))
        fail(where, "a sparse matrix whose indptr decreases or passes its " + std::to_string(data.size()) +
                        " values at " + std::to_string(o));
      for (size_t k = size_t(begin); k < size_t(end); ++k) {
        const double in = indices.values[k];
        if (!(in >= 0 && in < double(inner)))
          fail(where, "a sparse matrix index " + std::to_string(in) + " outside [0, " + std::to_string(inner) + ")");
        const size_t r = csc ? size_t(in) : o, c = csc ? o : size_t(in);
        a.values[r * cols + c] += data.values[k];  // duplicates add up, as scipy's toarray()
      }
    }
    return a;
  }

  NpyArray decode(uint32_t v, const std::string& where, int depth = 0) {
    const NpzEntry e = describe(v, "", depth);
    const Value& x = at(v);
    if (!e.readable) fail(where, "a " + e.dtype + " value, not numbers");
    NpyArray a;
    a.dtype = e.dtype;
    a.shape = e.shape;
    switch (x.kind) {
      case Kind::Int:
      case Kind::Bool:
        a.values = {double(x.integer)};
        return a;
      case Kind::Float:
        a.values = {x.real};
        return a;
      case Kind::List:
        charge(8 * x.items.size(), where);
        for (uint32_t i : x.items) a.values.push_back(at(i).kind == Kind::Float ? at(i).real : double(at(i).integer));
        return a;
      default:
        break;
    }
    if (x.text == "Ch") return decode(indexOf(dictItem(x.state, "x")), where, depth + 1);
    if (x.text == "csc" || x.text == "csr") return sparse(x, e, where);
    if (x.text == "scalar") {
      const Value& bytes = at(at(x.args).items[1]);
      const DType d = dtypeOf(at(x.args).items[0], where);
      if ((bytes.kind != Kind::Bytes && bytes.kind != Kind::Str) || bytes.text.size() != d.item)
        fail(where, "a numpy scalar whose data is not " + std::to_string(d.item) + " bytes");
      a.values = {elementAt(reinterpret_cast<const uint8_t*>(bytes.text.data()), d)};
      return a;
    }
    return ndarray(x, where);
  }
};

}  // namespace

NpzReader readPickle(std::vector<char> bytes, const std::string& name, NpzLimits limits) {
  auto decoder = std::make_shared<Decoder>();
  decoder->limits = limits;
  uint32_t top;
  {
    Unpickler u(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
    top = u.run();
    decoder->values = std::move(u.values);
  }
  bytes = {};  // the values hold copies of what they need
  const Value& dict = decoder->at(top);
  if (dict.kind != Kind::Dict)
    throw Error(name + ": expected a pickled dict of arrays (a model or parameter file), found another value");
  std::vector<NpzEntry> entries;
  std::map<std::string, uint32_t> byKey;
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const Value& key = decoder->at(dict.items[i]);
    if (key.kind != Kind::Str && key.kind != Kind::Bytes) continue;  // not a name: nothing a reader could ask for
    byKey[key.text] = dict.items[i + 1];
  }
  for (const auto& [key, value] : byKey) {
    try {
      entries.push_back(decoder->describe(value, key));
    } catch (const Error& e) {
      throw Error(name + ": " + e.what());
    }
  }
  auto decode = [decoder, byKey, name](const NpzEntry& e) {
    return decoder->decode(byKey.at(e.key), name + ": key '" + e.key + "'");
  };
  return NpzReader(std::move(entries), std::move(decode), name);
}

}  // namespace armature
