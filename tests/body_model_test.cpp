#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "armature/body/synth.h"
#include "armature/error.h"
#include "support/body_fixtures.h"
#include "support/compare.h"
#include "support/temp_path.h"

using namespace armature;
using namespace armature::test;

namespace {

// |a - b| / |b| over whole vectors.
double relativeError(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / std::max(den, 1e-300));
}

double loss(const BodyModel& m, const BodyParams& p, const std::vector<double>& gv, const std::vector<double>& gj) {
  auto o = bodyForwardRef(m, p);
  double l = 0;
  for (size_t i = 0; i < gv.size(); ++i) l += gv[i] * o.vertices[i];
  for (size_t i = 0; i < gj.size(); ++i) l += gj[i] * o.joints[i];
  return l;
}

// Central differences of the scalar loss over every entry of `field`.
std::vector<double> finiteDifferences(const BodyModel& m, BodyParams p, std::vector<double> BodyParams::*field,
                                      const std::vector<double>& gv, const std::vector<double>& gj, double h) {
  std::vector<double> out((p.*field).size());
  for (size_t i = 0; i < out.size(); ++i) {
    double x = (p.*field)[i];
    (p.*field)[i] = x + h;
    double lp = loss(m, p, gv, gj);
    (p.*field)[i] = x - h;
    double lm = loss(m, p, gv, gj);
    (p.*field)[i] = x;
    out[i] = (lp - lm) / (2 * h);
  }
  return out;
}

void expectGradientsMatch(const BodyModel& m, const BodyParams& p, std::mt19937_64& rng) {
  std::normal_distribution<double> n;
  std::vector<double> gv(p.batch * m.vertexCount * 3), gj(p.batch * m.jointCount * 3);
  for (auto& x : gv) x = n(rng);
  for (auto& x : gj) x = n(rng);
  auto g = bodyBackwardRef(m, p, gv, gj);
  // h = 1e-5: truncation O(h²) ~ 1e-10 and rounding ~ 1e-16 / h ~ 1e-11 relative, far under 1e-6.
  const double h = 1e-5;
  EXPECT_LT(relativeError(g.pose, finiteDifferences(m, p, &BodyParams::pose, gv, gj, h)), 1e-6) << "pose";
  EXPECT_LT(relativeError(g.betas, finiteDifferences(m, p, &BodyParams::betas, gv, gj, h)), 1e-6) << "betas";
  EXPECT_LT(relativeError(g.expression, finiteDifferences(m, p, &BodyParams::expression, gv, gj, h)), 1e-6)
      << "expression";
  EXPECT_LT(relativeError(g.transl, finiteDifferences(m, p, &BodyParams::transl, gv, gj, h)), 1e-6) << "transl";
}

}  // namespace

TEST(BodyReference, ForwardMatchesHandWorkedThreeJointChain) {
  // Joints at the three vertices (identity regressor); vertex 2 hangs off joint 1 at (2, 0.5, 0).
  BodyModel m;
  m.vertexCount = 3, m.jointCount = 3, m.shapeCount = 1, m.exprCount = 0, m.faceCount = 1;
  m.vTemplate = {0, 0, 0, 1, 0, 0, 2, 0.5, 0};
  m.faces = {0, 1, 2};
  m.shapeDirs = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  m.shapeDirs[0 * 3 + 1] = 1;  // beta moves vertex 0 (the root joint) up by beta
  m.poseDirs.assign(3 * 3 * 18, 0);
  m.jRegressor = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  m.weights = {1, 0, 0, 0, 1, 0, 0, 1, 0};
  m.parents = {-1, 0, 1};
  BodyParams p = BodyParams::zeros(m, 1, 1, 0);
  p.pose = {0, 0, 0, 0, 0, M_PI / 2, 0, 0, 0};  // joint 1: +90° about z
  p.transl = {0.1, 0.2, 0.3};
  p.betas = {0.5};
  auto o = bodyForwardRef(m, p);
  // Rest joints: (0,0.5,0), (1,0,0), (2,0.5,0). Joint 2 and vertex 2 rotate about joint 1:
  // R·(1, 0.5, 0) = (-0.5, 1, 0) → (0.5, 1, 0). Vertex 0 is the root's: (0, 0.5, 0). Vertex 1 sits on joint 1.
  std::vector<double> wantJ = {0.1, 0.7, 0.3, 1.1, 0.2, 0.3, 0.6, 1.2, 0.3};
  std::vector<double> wantV = {0.1, 0.7, 0.3, 1.1, 0.2, 0.3, 0.6, 1.2, 0.3};
  // smplx's Rodrigues adds 1e-8 to each component before the norm: errors of order 1e-8.
  EXPECT_TRUE(allClose(o.joints, wantJ, {1e-7, 0}));
  EXPECT_TRUE(allClose(o.vertices, wantV, {1e-7, 0}));
}

TEST(BodyReference, RodriguesMatchesClosedForm) {
  double r[3] = {0.3, -0.4, 1.2};
  auto R = rodrigues(r);
  double a = std::sqrt(0.09 + 0.16 + 1.44);
  // Orthonormal with det 1, and the axis is fixed.
  double det =
      R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
  EXPECT_NEAR(det, 1, 1e-7);
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(R[size_t(i) * 3] * r[0] + R[size_t(i) * 3 + 1] * r[1] + R[size_t(i) * 3 + 2] * r[2], r[i], 1e-7);
  EXPECT_NEAR((R[0] + R[4] + R[8] - 1) / 2, std::cos(a), 1e-7);
}

TEST(BodyReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(::armature::test::rng()());
  for (bool shuffled : {false, true}) {
    BodyModel m = randomBodyModel(31, 7, 5, 3, rng, shuffled);
    expectGradientsMatch(m, randomBodyParams(m, 2, 5, 3, rng), rng);
  }
}

TEST(BodyReference, BackwardMatchesFiniteDifferencesNearZeroRotation) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(23, 6, 3, 2, rng);
  for (double scale : {0.0, 1e-9, 1e-6}) {
    BodyParams p = randomBodyParams(m, 1, 3, 2, rng, scale);
    SCOPED_TRACE("pose scale " + std::to_string(scale));
    expectGradientsMatch(m, p, rng);
  }
}

TEST(BodyReference, RejectsBadParameters) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(10, 4, 3, 2, rng);
  BodyParams p = randomBodyParams(m, 2, 3, 2, rng);
  BodyParams wrong = p;
  wrong.pose.pop_back();
  EXPECT_THROW(bodyForwardRef(m, wrong), Error);
  wrong = p;
  wrong.betas[1] = NAN;
  try {
    bodyForwardRef(m, wrong);
    ADD_FAILURE() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("betas"), std::string::npos) << e.what();
  }
  wrong = p;
  wrong.shapeComponents = 4;
  EXPECT_THROW(bodyForwardRef(m, wrong), Error);
}

TEST(BodyReference, SmplxHandPcaAndMeanMatchTheLibrary) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(12, 55, 2, 2, rng);
  m.parents = smplxParents();
  std::normal_distribution<double> n;
  for (auto* c : {&m.handsComponentsL, &m.handsComponentsR}) {
    c->resize(45 * 45);
    for (auto& x : *c) x = n(rng);
  }
  for (auto* c : {&m.handsMeanL, &m.handsMeanR}) {
    c->resize(45);
    for (auto& x : *c) x = n(rng);
  }
  SmplxPoseOptions o{true, 6, false};
  SmplxPose sp;
  auto fill = [&](std::vector<double>& v, size_t k) {
    v.resize(k);
    for (auto& x : v) x = n(rng);
  };
  fill(sp.globalOrient, 3);
  fill(sp.bodyPose, 63);
  fill(sp.jaw, 3);
  fill(sp.leye, 3);
  fill(sp.reye, 3);
  fill(sp.leftHand, 6);
  fill(sp.rightHand, 6);
  auto full = smplxFullPose(m, sp, o, 1);
  ASSERT_EQ(full.size(), 165u);
  // Left hand joint 25's x component: Σ_c pca_c · components_l[c][0] + mean_l[0].
  double want = m.handsMeanL[0];
  for (int c = 0; c < 6; ++c) want += sp.leftHand[size_t(c)] * m.handsComponentsL[size_t(c) * 45];
  EXPECT_NEAR(full[75], want, 1e-12);
  EXPECT_EQ(full[66], sp.jaw[0]);
  // The backward is the transpose of this linear map: <g, full(p)> = <back(g), p> + <g, mean>.
  std::vector<double> g(165);
  for (auto& x : g) x = n(rng);
  auto back = smplxFullPoseBackward(m, g, o, 1);
  double lhs = 0, rhs = 0;
  for (int k = 0; k < 165; ++k) lhs += g[size_t(k)] * full[size_t(k)];
  for (int k = 0; k < 45; ++k)
    rhs += g[size_t(75 + k)] * m.handsMeanL[size_t(k)] + g[size_t(120 + k)] * m.handsMeanR[size_t(k)];
  auto dotv = [](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  rhs += dotv(back.globalOrient, sp.globalOrient) + dotv(back.bodyPose, sp.bodyPose) + dotv(back.jaw, sp.jaw) +
         dotv(back.leye, sp.leye) + dotv(back.reye, sp.reye) + dotv(back.leftHand, sp.leftHand) +
         dotv(back.rightHand, sp.rightHand);
  EXPECT_NEAR(lhs, rhs, 1e-9);
  // flat_hand_mean drops the mean; without PCA the hand pose passes through.
  auto flat = smplxFullPose(m,
                            {sp.globalOrient, sp.bodyPose, sp.jaw, sp.leye, sp.reye, std::vector<double>(45, 0.1),
                             std::vector<double>(45, 0.2)},
                            {false, 6, true}, 1);
  EXPECT_EQ(flat[75], 0.1);
  EXPECT_EQ(flat[164], 0.2);
}

// ---- files ------------------------------------------------------------------------------------------------

TEST(NpyFormat, ReadsEveryDtypeInCAndFortranOrder) {
  std::vector<double> values = {1, 2, 3, 4, 5, 6};
  for (NpyType t : {NpyType::F32, NpyType::F64, NpyType::I32, NpyType::I64, NpyType::U32})
    for (bool fortran : {false, true}) {
      auto bytes = encodeNpy({{2, 3}, t, values}, fortran);
      auto a = parseNpy(bytes.data(), bytes.size(), "test");
      EXPECT_EQ(a.shape, (std::vector<size_t>{2, 3}));
      EXPECT_EQ(a.values, values) << a.dtype << (fortran ? " fortran" : " C");
    }
  auto bytes = encodeNpy({{2, 3}, NpyType::F32, values});
  EXPECT_THROW(parseNpy(bytes.data(), bytes.size() - 1, "test"), Error);
}

namespace {
void expectLoadError(const std::map<std::string, NpyWrite>& arrays, const std::vector<std::string>& needles) {
  std::string path = tempPath("bad.npz");
  writeNpz(path, arrays);
  try {
    loadBodyModel(path);
    ADD_FAILURE() << "loaded a bad file; expected an error containing " << needles[0];
  } catch (const Error& e) {
    for (auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "message: " << e.what();
  }
  std::filesystem::remove(path);
}
}  // namespace

TEST(BodyModelFile, BadFilesGiveClearErrors) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(20, 5, 4, 0, rng);
  auto good = bodyModelToNpz(m);
  auto a = good;
  a.erase("weights");
  expectLoadError(a, {"bad.npz", "missing key 'weights'"});
  a = good;
  a["posedirs"].shape = {20, 3, 35};
  a["posedirs"].values.resize(20 * 3 * 35);
  expectLoadError(a, {"bad.npz", "'posedirs'", "expected shape (20, 3, 36)", "found (20, 3, 35)"});
  a = good;
  a["f"].type = NpyType::F32;
  expectLoadError(a, {"'f'", "expected an integer dtype", "found <f4"});
  a = good;
  a["v_template"].type = NpyType::I32;
  expectLoadError(a, {"'v_template'", "expected a float dtype"});
  a = good;
  a["shapedirs"].values[7] = NAN;
  expectLoadError(a, {"'shapedirs'", "expected finite values", "flat index 7"});
  a = good;
  a["kintree_table"].values[2] = 3, a["kintree_table"].values[3] = 2;  // 2 → 3 → 2: a cycle
  expectLoadError(a, {"'kintree_table'", "expected a tree"});
  a = good;
  a["kintree_table"].values[1] = -1;  // two roots
  expectLoadError(a, {"'kintree_table'", "exactly one root", "found 2"});
  a = good;
  a["f"].values[4] = 20;
  expectLoadError(a, {"'f'", "expected values in [0, 20)", "found 20"});
}

// The optional parts smplx reads: a one-hand model's PCA (MANO's hands_components and hands_mean) and the face
// contour's landmarks per head turn (dynamic_lmk_faces_idx (A,C), dynamic_lmk_bary_coords (A,C,3)).
TEST(BodyModelFile, OneHandPcaAndFaceContourRoundTrip) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(20, 5, 4, 0, rng);
  m.handComponents.assign(45 * 45, 0.25), m.handMean.assign(45, -0.5);
  m.contourAngles = 3, m.contourLandmarks = 2;
  for (int i = 0; i < 6; ++i) m.dynLmkFacesIdx.push_back(int32_t(rng() % m.faceCount));
  m.dynLmkBaryCoords.assign(6 * 3, 0.25);
  auto good = bodyModelToNpz(m);
  const std::string path = tempPath("contour.npz");
  writeNpz(path, good);
  const BodyModel l = loadBodyModel(path);
  std::filesystem::remove(path);
  EXPECT_EQ(l.handComponents, m.handComponents);
  EXPECT_EQ(l.handMean, m.handMean);
  EXPECT_EQ(l.dynLmkFacesIdx, m.dynLmkFacesIdx);
  EXPECT_EQ(l.dynLmkBaryCoords, m.dynLmkBaryCoords);
  EXPECT_EQ(l.contourAngles, 3u);
  EXPECT_EQ(l.contourLandmarks, 2u);
  auto a = good;
  a["dynamic_lmk_faces_idx"].values[1] = m.faceCount;
  expectLoadError(a, {"'dynamic_lmk_faces_idx'", "expected values in [0,"});
  a = good;
  a.erase("dynamic_lmk_bary_coords");
  expectLoadError(a, {"missing key 'dynamic_lmk_bary_coords'"});
  a = good;
  a["hands_mean"].shape = {44}, a["hands_mean"].values.resize(44);
  expectLoadError(a, {"'hands_mean'", "expected shape (45,)"});
}

TEST(BodyModelFile, CorruptArchivesAndPicklesGiveClearErrors) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(20, 5, 4, 0, rng);
  std::string path = tempPath("trunc.npz");
  saveBodyModel(m, path);
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  for (size_t keep : {bytes.size() / 2, size_t(30), size_t(0)}) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(keep));
    try {
      loadBodyModel(path);
      ADD_FAILURE() << "loaded a truncated file (" << keep << " bytes)";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("trunc.npz"), std::string::npos) << e.what();
    }
  }
  std::string flipped = bytes;
  for (size_t i = 200; i < flipped.size(); i += 97) flipped[i] = char(flipped[i] ^ 0x5a);
  std::ofstream(path, std::ios::binary).write(flipped.data(), std::streamsize(flipped.size()));
  EXPECT_THROW(loadBodyModel(path), Error);
  std::string pkl = tempPath("model.pkl");
  std::ofstream(pkl, std::ios::binary).write("\x80\x02}q\x00.", 6);  // an empty dict
  try {
    loadBodyModel(pkl);
    ADD_FAILURE() << "loaded an empty pickle";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.pkl: missing key 'v_template'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  std::filesystem::remove(pkl);
  EXPECT_THROW(loadBodyModel(tempPath("does_not_exist.npz")), Error);
}

TEST(BodyModelFile, ReadsDeflatedAndFortranOrderArchives) {
  std::mt19937_64 rng(::armature::test::rng()());
  BodyModel m = randomBodyModel(20, 5, 4, 0, rng);
  for (auto& x : m.vTemplate) x = double(float(x));
  auto arrays = bodyModelToNpz(m);
  std::string path = tempPath("deflated.npz");
  writeNpz(path, arrays, /*deflate=*/true);
  EXPECT_EQ(loadBodyModel(path).vTemplate, m.vTemplate);
  // Fortran-order arrays inside an archive (numpy writes them for transposed arrays).
  NpzArchive npz = readNpz(path);
  auto fortran = encodeNpy(arrays["weights"], /*fortran=*/true);
  npz["weights"] = parseNpy(fortran.data(), fortran.size(), "weights");
  EXPECT_EQ(bodyModelFromNpz(npz, "mixed").weights, loadBodyModel(path).weights);
  std::filesystem::remove(path);
}

TEST(BodyModelFile, LoadsSmplAndSmplhLayouts) {
  std::mt19937_64 rng(::armature::test::rng()());
  for (uint32_t J : {24u, 52u}) {
    BodyModel m = randomBodyModel(30, J, 10, 0, rng);
    std::string path = tempPath("smpl.npz");
    saveBodyModel(m, path);
    BodyModel l = loadBodyModel(path);
    EXPECT_EQ(l.jointCount, J);
    EXPECT_EQ(l.shapeCount, 10u);
    EXPECT_EQ(l.exprCount, 0u);
    EXPECT_EQ(l.jointNames[21], "right_wrist");
    EXPECT_EQ(l.jointNames.back(), J == 24 ? "right_hand" : "right_thumb3");
    std::filesystem::remove(path);
  }
}

// ---- the default avatar -------------------------------------------------------------------------------------

class DefaultAvatar : public ::testing::Test {
 protected:
  // The build-time asset (generated by `armature model synth --seed 0`) when the build provides it; the
  // round-trip test below checks it equals a fresh synthesis.
  static void SetUpTestSuite() {
    const char* asset = std::getenv("ARMATURE_DEFAULT_MODEL");
    s_model = new BodyModel(asset && std::filesystem::exists(asset) ? loadBodyModel(asset) : synthesizeBodyModel({0}));
  }
  static void TearDownTestSuite() { delete s_model; }
  static BodyModel* s_model;
};
BodyModel* DefaultAvatar::s_model = nullptr;

TEST_F(DefaultAvatar, HasSmplxDimensions) {
  const BodyModel& m = *s_model;
  EXPECT_EQ(m.vertexCount, 10475u);
  EXPECT_EQ(m.faceCount, 20908u);
  EXPECT_EQ(m.jointCount, 55u);
  EXPECT_EQ(m.shapeCount, 300u);
  EXPECT_EQ(m.exprCount, 100u);
  EXPECT_EQ(m.poseFeatureCount(), 486u);
  EXPECT_EQ(m.parents, smplxParents());
  EXPECT_EQ(m.jointNames[22], "jaw");
  for (uint32_t v = 0; v < m.vertexCount; ++v) {
    double sum = 0;
    int nonzero = 0;
    for (uint32_t j = 0; j < 55; ++j) sum += m.weights[v * 55 + j], nonzero += m.weights[v * 55 + j] != 0;
    ASSERT_NEAR(sum, 1, 1e-6) << "vertex " << v;
    ASSERT_LE(nonzero, 4) << "vertex " << v;
  }
}

TEST_F(DefaultAvatar, SurfacesAreClosedAndManifold) {
  const BodyModel& m = *s_model;
  // Every directed edge once, and its reverse once: closed, consistently oriented, no edge shared thrice.
  std::map<std::pair<int, int>, int> directed;
  for (uint32_t f = 0; f < m.faceCount; ++f)
    for (int c = 0; c < 3; ++c) directed[{m.faces[f * 3 + size_t(c)], m.faces[f * 3 + size_t((c + 1) % 3)]}]++;
  for (auto& [e, n] : directed) {
    ASSERT_EQ(n, 1) << "edge " << e.first << "-" << e.second << " used " << n << " times in one direction";
    ASSERT_EQ(directed.count({e.second, e.first}), 1u) << "edge " << e.first << "-" << e.second << " is a boundary";
  }
  std::set<int32_t> used(m.faces.begin(), m.faces.end());
  EXPECT_EQ(used.size(), size_t(kSynthVertices - kSynthMarkers));
  // Euler characteristic of body + two eyeballs: 3 spheres → V - E + F = 6.
  long chi = long(used.size()) - long(directed.size() / 2) + long(m.faceCount);
  EXPECT_EQ(chi, 6);
}

TEST_F(DefaultAvatar, ShapeAndExpressionMoveTheRightVertices) {
  const BodyModel& m = *s_model;
  BodyParams p = BodyParams::zeros(m, 1);
  auto rest = bodyForwardRef(m, p);
  // Height: the first shape direction makes the body taller, smoothly.
  p.betas[0] = 2;
  auto tall = bodyForwardRef(m, p);
  auto extent = [](const std::vector<double>& v) {
    double lo = 1e9, hi = -1e9;
    for (size_t i = 1; i < v.size(); i += 3) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    return hi - lo;
  };
  EXPECT_GT(extent(tall.vertices), extent(rest.vertices) * 1.05);
  // Expression moves only the face.
  p = BodyParams::zeros(m, 1);
  p.expression[1] = 3;
  auto smile = bodyForwardRef(m, p);
  double maxMove = 0, maxBelowNeck = 0;
  for (uint32_t v = 0; v < m.vertexCount; ++v) {
    double d = 0;
    for (int k = 0; k < 3; ++k) d += std::pow(smile.vertices[v * 3 + size_t(k)] - rest.vertices[v * 3 + size_t(k)], 2);
    maxMove = std::max(maxMove, std::sqrt(d));
    if (m.vTemplate[v * 3 + 1] < 0.45) maxBelowNeck = std::max(maxBelowNeck, std::sqrt(d));
  }
  EXPECT_GT(maxMove, 0.005);
  EXPECT_LT(maxBelowNeck, 1e-6);
}

TEST_F(DefaultAvatar, IsDeterministicAndRoundTripsThroughTheFile) {
  BodyModel m = synthesizeBodyModel({0});
  std::string path = tempPath("default.npz");
  saveBodyModel(m, path);
  BodyModel l = loadBodyModel(path);
  EXPECT_EQ(l.vTemplate, m.vTemplate);
  EXPECT_EQ(l.faces, m.faces);
  EXPECT_EQ(l.shapeDirs, m.shapeDirs);
  EXPECT_EQ(l.exprDirs, m.exprDirs);
  EXPECT_EQ(l.poseDirs, m.poseDirs);
  EXPECT_EQ(l.jRegressor, m.jRegressor);
  EXPECT_EQ(l.weights, m.weights);
  EXPECT_EQ(l.parents, m.parents);
  EXPECT_EQ(l.handsComponentsL, m.handsComponentsL);
  EXPECT_EQ(l.handsMeanR, m.handsMeanR);
  EXPECT_EQ(l.lmkFacesIdx, m.lmkFacesIdx);
  EXPECT_EQ(l.vt, m.vt);
  EXPECT_EQ(l.ft, m.ft);
  std::filesystem::remove(path);
  // The build-time asset was generated from the same seed: identical.
  EXPECT_EQ(s_model->vTemplate, m.vTemplate);
  EXPECT_EQ(s_model->poseDirs, m.poseDirs);
  EXPECT_EQ(s_model->shapeDirs, m.shapeDirs);
}
