// The .pkl releases, read by the restricted unpickler: models in the released structure (chumpy Ch, scipy csc,
// strings) for SMPL, MANO and SMPL-X in both Python 2's and Python 3's protocols, parameter files, protocol 0 text,
// and pickles that must be refused: classes that would run code, truncations and corruptions, size claims and
// value floods, each within the memory bound checked in a forked child.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "armature/body/motion.h"
#include "armature/body/pickle.h"
#include "armature/error.h"
#include "support/archive_checks.h"
#include "support/body_fixtures.h"
#include "support/pickle_writer.h"
#include "support/temp_path.h"

using namespace armature;
using namespace armature::test;

namespace {

std::string writePickle(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = tempPath(name);
  writeFile(path, std::vector<char>(bytes.begin(), bytes.end()));
  return path;
}

NpzReader pickleReader(const std::vector<uint8_t>& bytes, const std::string& name = "test.pkl") {
  return readPickle(std::vector<char>(bytes.begin(), bytes.end()), name);
}

// The error a pickle gets, or "" when it loads.
std::string pickleError(const std::vector<uint8_t>& bytes) {
  try {
    NpzReader reader = pickleReader(bytes);
    reader.readAll();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

// A model pickled as released (v_template and shapedirs in chumpy Ch, J_regressor a csc matrix, bs_style and bs_type
// strings) loads field for field as its .npz, for SMPL-X, SMPL and MANO, in protocol 2 (Python 2's cPickle, as the
// releases were written) and protocol 4 (Python 3).
TEST(Pickle, ReleasedModelLayoutsLoadLikeTheirNpz) {
  for (uint32_t joints : {55u, 24u, 16u})
    for (int protocol : {2, 4}) {
      SCOPED_TRACE("joints " + std::to_string(joints) + ", protocol " + std::to_string(protocol));
      std::mt19937_64 rng(joints + uint64_t(protocol));
      const BodyModel m = randomBodyModel(61, joints, 10, joints == 55 ? 10 : 0, rng);
      const std::string npzPath = tempPath("released.npz");
      saveBodyModel(m, npzPath);
      const BodyModel fromNpz = loadBodyModel(npzPath);
      const std::string pklPath = writePickle("released.pkl", pickleBodyModel(m, protocol));
      const BodyModel fromPkl = loadBodyModel(pklPath);
      EXPECT_EQ(fromPkl.vTemplate, fromNpz.vTemplate);
      EXPECT_EQ(fromPkl.shapeDirs, fromNpz.shapeDirs);
      EXPECT_EQ(fromPkl.exprDirs, fromNpz.exprDirs);
      EXPECT_EQ(fromPkl.poseDirs, fromNpz.poseDirs);
      EXPECT_EQ(fromPkl.jRegressor, fromNpz.jRegressor);  // the sparse matrix made dense
      EXPECT_EQ(fromPkl.weights, fromNpz.weights);
      EXPECT_EQ(fromPkl.parents, fromNpz.parents);
      EXPECT_EQ(fromPkl.faces, fromNpz.faces);
      EXPECT_STREQ(fromPkl.kindName(), joints == 55 ? "SMPL-X" : joints == 24 ? "SMPL" : "MANO");
      BodyParams p = randomBodyParams(fromNpz, 2, fromNpz.shapeCount, fromNpz.exprCount, rng);
      EXPECT_EQ(bodyForwardRef(fromPkl, p).vertices, bodyForwardRef(fromNpz, p).vertices);

      NpzReader reader = openArrayFile(pklPath);
      const NpzEntry* style = reader.find("bs_style");
      ASSERT_NE(style, nullptr);
      EXPECT_EQ(style->dtype, "str");
      EXPECT_FALSE(style->readable);
      EXPECT_THROW(reader.read("bs_style"), Error);
      const NpzEntry* regressor = reader.find("J_regressor");
      ASSERT_NE(regressor, nullptr);
      EXPECT_EQ(regressor->shape, (std::vector<size_t>{joints, 61}));
      EXPECT_TRUE(regressor->readable);
      EXPECT_EQ(reader.find("v_template")->dtype, "<f4");  // the Ch's array, described without decoding
      std::filesystem::remove(npzPath);
      std::filesystem::remove(pklPath);
    }
}

// SMPLify-X's result files are pickled dicts of float32 arrays; as .pkl they give the motion their .npz gives.
TEST(Pickle, ParameterFilesGiveTheMotionTheirNpzGives) {
  std::mt19937_64 rng(11);
  const BodyModel model = randomBodyModel(40, 55, 10, 10, rng);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::map<std::string, NpyWrite> params;
  for (const auto& [key, width] : std::vector<std::pair<std::string, size_t>>{{"global_orient", 3},
                                                                              {"body_pose", 63},
                                                                              {"left_hand_pose", 45},
                                                                              {"right_hand_pose", 45},
                                                                              {"jaw_pose", 3},
                                                                              {"leye_pose", 3},
                                                                              {"reye_pose", 3},
                                                                              {"betas", 10},
                                                                              {"expression", 10},
                                                                              {"transl", 3}}) {
    NpyWrite a{{1, width}, NpyType::F32, std::vector<double>(width)};
    for (double& x : a.values) x = double(float(u(rng)));
    params[key] = a;
  }
  const std::string npzPath = tempPath("smplifyx.npz");
  writeNpz(npzPath, params);
  const Motion expected = loadMotion(npzPath, model);
  for (int protocol : {2, 4}) {
    PickleWriter w(protocol);
    w.op('}');
    w.op('(');
    for (const auto& [key, array] : params) {
      w.str(key);
      w.array(array);
    }
    w.str("camera_translation");  // what else SMPLify-X writes: ignored
    w.array({{1, 3}, NpyType::F32, {0, 0, 5}});
    w.op('u');
    const std::string pklPath = writePickle("smplifyx.pkl", w.bytes());
    const Motion m = loadMotion(pklPath, model);
    EXPECT_EQ(m.frames, 1u);
    EXPECT_EQ(m.pose, expected.pose);
    EXPECT_EQ(m.transl, expected.transl);
    EXPECT_EQ(m.betas, expected.betas);
    EXPECT_EQ(m.expression, expected.expression);
    std::filesystem::remove(pklPath);
  }
  std::filesystem::remove(npzPath);
}

// Protocol 0 (text opcodes) and Python's basic types: numbers, booleans, unicode, lists, and an array whose data is
// an escaped STRING; also a big-endian and a Fortran-order array in protocol 2.
TEST(Pickle, TextProtocolAndBasicTypes) {
  const std::string text =
      "(dp0\nS'scale'\np1\nF2.5\nsS'count'\np2\nI7\nsS'flag'\np3\nI01\nsS'name'\np4\nV\\u00e9t\\u00e9\np5\n"
      "sS'list'\np6\n(lp7\nI1\naF2.5\naL3L\nasS'array'\np8\ncnumpy.core.multiarray\n_reconstruct\np9\n"
      "(cnumpy\nndarray\np10\n(I0\ntp11\nS'b'\np12\ntp13\nRp14\n(I1\n(I2\ntp15\ncnumpy\ndtype\np16\n"
      "(S'f8'\np17\nI00\nI01\ntp18\nRp19\n(I3\nS'<'\np20\nNNNI-1\nI-1\nI0\ntp21\nbI00\n"
      "S'\\x00\\x00\\x00\\x00\\x00\\x00\\xf0?\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\xc0'\np22\ntp23\nbsS'again'"
      "\np24\ng7\ns.";
  NpzReader reader = pickleReader(std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_EQ(reader.read("scale").values, std::vector<double>{2.5});
  EXPECT_EQ(reader.read("count").values, std::vector<double>{7});
  EXPECT_EQ(reader.read("flag").dtype, "|b1");
  EXPECT_EQ(reader.read("flag").values, std::vector<double>{1});
  EXPECT_EQ(reader.find("name")->dtype, "str");
  EXPECT_EQ(reader.read("list").values, (std::vector<double>{1, 2.5, 3}));
  const NpyArray array = reader.read("array");
  EXPECT_EQ(array.shape, std::vector<size_t>{2});
  EXPECT_EQ(array.values, (std::vector<double>{1, -2}));
  EXPECT_EQ(reader.read("again").values, (std::vector<double>{1, 2.5, 3}));  // the memoised list, recalled by GET
  EXPECT_EQ(reader.entries().size(), 7u);

  PickleWriter w(2);
  w.op('}');
  w.op('(');
  w.str("big");
  w.array({3}, "f8", {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0x08, 0, 0, 0, 0, 0, 0}, false,
          '>');
  w.str("fortran");  // [[1, 2, 3], [4, 5, 6]] stored column by column
  w.array({2, 3}, "i2", {1, 0, 4, 0, 2, 0, 5, 0, 3, 0, 6, 0}, true);
  w.op('u');
  NpzReader more = pickleReader(w.bytes());
  EXPECT_EQ(more.read("big").values, (std::vector<double>{1, 2, -3}));
  EXPECT_EQ(more.read("fortran").values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

// Classes outside the model files' set, and opcodes that would reach outside the data, are refused by name before
// anything is called.
TEST(Pickle, ClassesThatWouldRunCodeAreRefused) {
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"}, {"builtins", "eval"}, {"posix", "system"}, {"numpy", "load"}, {"subprocess", "Popen"}}) {
    for (int protocol : {2, 4}) {
      PickleWriter w(protocol);
      w.global(module, name);
      w.op('(');
      w.str("touch /tmp/armature-pwned");
      w.op('t');
      w.op('R');
      const std::string error = pickleError(w.bytes());
      EXPECT_NE(error.find("refused class '" + module + "." + name + "'"), std::string::npos) << error;
      EXPECT_NE(error.find("test.pkl"), std::string::npos) << error;
    }
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/armature-pwned"));
  for (uint8_t op : {uint8_t('Q'), uint8_t(0x82), uint8_t(0x97)}) {
    PickleWriter w(4);
    w.op('N');
    w.op(op);
    w.op(0);
    EXPECT_NE(pickleError(w.bytes()).find("refused"), std::string::npos) << pickleError(w.bytes());
  }
  PickleWriter list(2);
  list.op(']');
  EXPECT_NE(pickleError(list.bytes()).find("expected a pickled dict"), std::string::npos);
}

// A sparse matrix whose index arrays do not fit its values is refused before any index is used (a fuzzed
// corruption of this shape once read past the data).
TEST(Pickle, MalformedSparseMatricesAreRefused) {
  for (const std::vector<double>& indptr :
       {std::vector<double>{0, 100, 5}, std::vector<double>{0, 3, 1}, std::vector<double>{0, 2, 4}}) {
    PickleWriter w(2);
    w.op('}');
    w.op('(');
    w.str("J_regressor");
    w.object("scipy.sparse.csc", "csc_matrix", [&] {
      w.str("_shape");
      w.tuple({3, 2});
      w.str("data");
      w.array({{5}, NpyType::F64, {1, 2, 3, 4, 5}});
      w.str("indices");
      w.array({{5}, NpyType::I32, {0, 1, 2, 0, 1}});
      w.str("indptr");
      w.array({{3}, NpyType::I32, indptr});
    });
    w.op('u');
    const std::string error = pickleError(w.bytes());
    EXPECT_NE(error.find("'J_regressor'"), std::string::npos) << error;
    EXPECT_NE(error.find(" matrix "), std::string::npos) << error;
  }
}

// Every prefix of a released-layout pickle, and thousands of corruptions of it, give a model or an armature::Error:
// never a crash (the sanitizer build runs this too).
TEST(Pickle, TruncationsAndCorruptionsFailCleanly) {
  std::mt19937_64 rng(17);
  const BodyModel m = randomBodyModel(6, 24, 2, 0, rng);
  const std::vector<uint8_t> bytes = pickleBodyModel(m, 2);
  size_t refused = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      NpzReader reader = pickleReader(std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(n)));
      bodyModelFromNpz(reader);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused, bytes.size()) << "a truncated pickle loaded";
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> corrupt = bytes;
    for (int k = 0; k < 1 + trial % 4; ++k) corrupt[rng() % corrupt.size()] = uint8_t(rng());
    try {
      NpzReader reader = pickleReader(corrupt);
      bodyModelFromNpz(reader);
      reader.readAll();
    } catch (const Error&) {
    }
  }
}

// Claims and floods stay within the memory bound: an array whose shape claims 4 GiB over 16 bytes of data, a sparse
// matrix whose shape claims 320 GB dense, and two million empty lists (past kMaxPickleValues).
TEST(Pickle, SizeClaimsAndFloodsAreRefusedWithinTheMemoryBound) {
  PickleWriter claim(4);
  claim.op('}');
  claim.op('(');
  claim.str("v_template");
  claim.array({size_t(1) << 29, 2}, "f4", std::vector<uint8_t>(16, 0));
  claim.op('u');
  PickleWriter sparse(2);
  sparse.op('}');
  sparse.op('(');
  sparse.str("v_template");  // the first entry a model reads
  sparse.object("scipy.sparse.csc", "csc_matrix", [&] {
    sparse.str("_shape");
    sparse.tuple({200000, 200000});
    for (const char* part : {"data", "indices", "indptr"}) {
      sparse.str(part);
      sparse.array({{1}, NpyType::F64, {0}});
    }
  });
  sparse.op('u');
  PickleWriter flood(4);
  flood.op('(');
  for (int i = 0; i < 2000000; ++i) flood.op(']');
  flood.op('l');
  const std::vector<std::pair<std::vector<uint8_t>, std::string>> cases = {
      {claim.bytes(), "truncated or corrupt"},
      {sparse.bytes(), "MiB an entry (ARMATURE_READ_BUDGET_MIB raises it)"},
      {flood.bytes(), "kMaxPickleValues"}};
  for (const auto& [bytes, refusal] : cases) {
    const std::string path = writePickle("claim.pkl", bytes);
    const auto [status, peakMiB] = inChild([&] { return loadExpectingError(path, {"claim.pkl", refusal}, {}); });
    EXPECT_EQ(status, 0) << refusal;
    EXPECT_LT(peakMiB, kMemoryBoundMiB) << refusal;
    std::filesystem::remove(path);
  }
}
