#include "armature/body/body_model.h"

#include <functional>
#include <map>

#include <cmath>

#include "armature/error.h"

namespace armature {

const std::vector<std::string>& smplxJointNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {
        "pelvis",       "left_hip",    "right_hip",       "spine1",          "left_knee",  "right_knee",  "spine2",
        "left_ankle",   "right_ankle", "spine3",          "left_foot",       "right_foot", "neck",        "left_collar",
        "right_collar", "head",        "left_shoulder",   "right_shoulder",  "left_elbow", "right_elbow", "left_wrist",
        "right_wrist",  "jaw",         "left_eye_smplhf", "right_eye_smplhf"};
    for (const char* side : {"left", "right"})
      for (const char* finger : {"index", "middle", "pinky", "ring", "thumb"})
        for (int k = 1; k <= 3; ++k) n.push_back(std::string(side) + "_" + finger + std::to_string(k));
    return n;
  }();
  return names;
}

const std::vector<int32_t>& smplxParents() {
  static const std::vector<int32_t> parents = [] {
    std::vector<int32_t> p = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 15, 15, 15};
    for (int wrist : {20, 21})
      for (int finger = 0; finger < 5; ++finger) {
        int first = int(p.size());
        p.push_back(wrist);
        p.push_back(first);
        p.push_back(first + 1);
      }
    return p;
  }();
  return parents;
}

const char* BodyModel::kindName() const {
  if (jointCount == 55) return "SMPL-X";
  if (jointCount == 52) return "SMPL+H";
  if (jointCount == 24) return "SMPL";
  if (jointCount == 16) return "MANO";
  return "custom";
}

std::vector<int32_t> BodyModel::topologicalOrder() const {
  std::vector<int32_t> order;
  std::vector<std::vector<int32_t>> children(jointCount);
  for (uint32_t j = 0; j < jointCount; ++j)
    if (parents[j] >= 0) children[size_t(parents[j])].push_back(int32_t(j));
  for (uint32_t j = 0; j < jointCount; ++j)
    if (parents[j] < 0) order.push_back(int32_t(j));
  for (size_t i = 0; i < order.size(); ++i)
    for (int32_t c : children[size_t(order[i])]) order.push_back(c);
  return order;
}

namespace {

struct Reader {
  // The entry `key`, decoded on first use (null if the archive has none); `keys`: every entry, for messages.
  std::function<const NpyArray*(const std::string&)> find;
  std::vector<std::string> keys;
  const std::string& name;

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw Error(name + ": key '" + key + "': " + msg);
  }
  const NpyArray& need(const std::string& key) const {
    if (auto* a = find(key)) return *a;
    std::string have;
    for (const std::string& k : keys) have += (have.empty() ? "" : ", ") + k;
    throw Error(name + ": missing key '" + key + "' (the file has: " + (have.empty() ? "nothing" : have) + ")");
  }
  // expected dims; 0 = any
  void shape(const std::string& key, const NpyArray& a, std::vector<size_t> want) const {
    bool ok = a.shape.size() == want.size();
    for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i] == 0 || want[i] == a.shape[i];
    if (!ok) {
      std::string w = "(";
      for (size_t i = 0; i < want.size(); ++i)
        w += (i ? ", " : "") + (want[i] ? std::to_string(want[i]) : std::string("*"));
      fail(key, "expected shape " + w + (want.size() == 1 ? ",)" : ")") + ", found " + a.shapeString());
    }
  }
  std::vector<double> floats(const std::string& key, const NpyArray& a) const {
    if (a.dtype[1] != 'f') fail(key, "expected a float dtype (<f4 or <f8), found " + a.dtype);
    for (size_t i = 0; i < a.values.size(); ++i)
      if (!std::isfinite(a.values[i]))
        fail(key,
             "expected finite values, found " + std::to_string(a.values[i]) + " at flat index " + std::to_string(i));
    return a.values;
  }
  std::vector<int32_t> ints(const std::string& key, const NpyArray& a, double lo, double hi) const {
    if (a.dtype[1] != 'i' && a.dtype[1] != 'u') fail(key, "expected an integer dtype, found " + a.dtype);
    std::vector<int32_t> out(a.values.size());
    for (size_t i = 0; i < a.values.size(); ++i) {
      double v = a.values[i];
      if (v < lo || v >= hi)
        fail(key, "expected values in [" + std::to_string(int64_t(lo)) + ", " + std::to_string(int64_t(hi)) +
                      "), found " + detail::format("%.0f", v) + " at flat index " + std::to_string(i));
      out[i] = int32_t(v);
    }
    return out;
  }
};

}  // namespace

namespace {
BodyModel bodyModelFrom(const Reader& r, const std::string& name) {
  BodyModel m;
  m.source = name;
  const auto& vt = r.need("v_template");
  r.shape("v_template", vt, {0, 3});
  m.vertexCount = uint32_t(vt.shape[0]);
  if (m.vertexCount == 0) r.fail("v_template", "expected at least one vertex, found 0");
  m.vTemplate = r.floats("v_template", vt);
  size_t V = m.vertexCount;

  const auto& kin = r.need("kintree_table");
  r.shape("kintree_table", kin, {2, 0});
  m.jointCount = uint32_t(kin.shape[1]);
  size_t J = m.jointCount;
  if (J == 0) r.fail("kintree_table", "expected at least one joint, found 0");
  if (kin.dtype[1] != 'i' && kin.dtype[1] != 'u')
    r.fail("kintree_table", "expected an integer dtype, found " + kin.dtype);
  m.parents.resize(J);
  for (size_t j = 0; j < J; ++j) {
    double p = kin.values[j], id = kin.values[J + j];
    if (id != double(j))
      r.fail("kintree_table", "expected row 1 to list joints 0..J-1 in order, found " + detail::format("%.0f", id) +
                                  " at column " + std::to_string(j));
    // The root's parent is stored as -1 (signed) or as the all-ones pattern (unsigned).
    bool root = p < 0 || p == 4294967295.0 || p == 18446744073709551615.0;
    if (!root && (p >= double(J) || p == double(j)))
      r.fail("kintree_table", "parent of joint " + std::to_string(j) + " is " + detail::format("%.0f", p) +
                                  ", expected -1 or a joint in [0, " + std::to_string(J) + ") other than itself");
    m.parents[j] = root ? -1 : int32_t(p);
  }
  int roots = 0;
  for (auto p : m.parents) roots += p < 0;
  if (roots != 1)
    r.fail("kintree_table", "expected a tree with exactly one root, found " + std::to_string(roots) + " roots");
  if (m.topologicalOrder().size() != J) r.fail("kintree_table", "expected a tree, found a cycle among the parents");

  const auto& f = r.need("f");
  r.shape("f", f, {0, 3});
  m.faceCount = uint32_t(f.shape[0]);
  m.faces = r.ints("f", f, 0, double(V));

  const auto& sd = r.need("shapedirs");
  r.shape("shapedirs", sd, {V, 3, 0});
  size_t S = sd.shape[2];
  auto shapedirs = r.floats("shapedirs", sd);
  // SMPL-X stores expression directions after the shape ones: 300+100 (v1.1) or 10+10 (v1.0), as smplx reads them.
  size_t shapeCols = S, exprStart = S;
  if (J == 55 && S >= 400)
    shapeCols = 300, exprStart = 300;
  else if (J == 55 && S == 20)
    shapeCols = 10, exprStart = 10;
  m.shapeCount = uint32_t(shapeCols);
  m.exprCount = uint32_t(S - exprStart);
  m.shapeDirs.resize(V * 3 * m.shapeCount);
  m.exprDirs.resize(V * 3 * m.exprCount);
  for (size_t vk = 0; vk < V * 3; ++vk) {
    for (size_t s = 0; s < m.shapeCount; ++s) m.shapeDirs[vk * m.shapeCount + s] = shapedirs[vk * S + s];
    for (size_t e = 0; e < m.exprCount; ++e) m.exprDirs[vk * m.exprCount + e] = shapedirs[vk * S + exprStart + e];
  }

  const auto& pd = r.need("posedirs");
  r.shape("posedirs", pd, {V, 3, (J - 1) * 9});
  m.poseDirs = r.floats("posedirs", pd);
  const auto& jr = r.need("J_regressor");
  r.shape("J_regressor", jr, {J, V});
  m.jRegressor = r.floats("J_regressor", jr);
  const auto& w = r.need("weights");
  r.shape("weights", w, {V, J});
  m.weights = r.floats("weights", w);

  if (auto* a = r.find("hands_componentsl")) {
    for (const char* key : {"hands_componentsl", "hands_componentsr"}) {
      auto& c = r.need(key);
      r.shape(key, c, {45, 45});
      (key[16] == 'l' ? m.handsComponentsL : m.handsComponentsR) = r.floats(key, c);
    }
    for (const char* key : {"hands_meanl", "hands_meanr"}) {
      auto& c = r.need(key);
      r.shape(key, c, {45});
      (key[10] == 'l' ? m.handsMeanL : m.handsMeanR) = r.floats(key, c);
    }
    (void)a;
  }
  if (r.find("hands_components")) {  // a one-hand model (MANO)
    auto& c = r.need("hands_components");
    r.shape("hands_components", c, {45, 45});
    m.handComponents = r.floats("hands_components", c);
    auto& mean = r.need("hands_mean");
    r.shape("hands_mean", mean, {45});
    m.handMean = r.floats("hands_mean", mean);
  }
  if (auto* a = r.find("dynamic_lmk_faces_idx")) {
    r.shape("dynamic_lmk_faces_idx", *a, {0, 0});
    m.dynLmkFacesIdx = r.ints("dynamic_lmk_faces_idx", *a, 0, m.faceCount);
    m.contourAngles = uint32_t(a->shape[0]), m.contourLandmarks = uint32_t(a->shape[1]);
    auto& b = r.need("dynamic_lmk_bary_coords");
    r.shape("dynamic_lmk_bary_coords", b, {a->shape[0], a->shape[1], 3});
    m.dynLmkBaryCoords = r.floats("dynamic_lmk_bary_coords", b);
  }
  if (auto* a = r.find("lmk_faces_idx")) {
    r.shape("lmk_faces_idx", *a, {0});
    m.lmkFacesIdx = r.ints("lmk_faces_idx", *a, 0, m.faceCount);
    auto& b = r.need("lmk_bary_coords");
    r.shape("lmk_bary_coords", b, {a->shape[0], 3});
    m.lmkBaryCoords = r.floats("lmk_bary_coords", b);
  }
  if (auto* a = r.find("vt")) {
    r.shape("vt", *a, {0, 2});
    m.vt = r.floats("vt", *a);
    if (auto* ft = r.find("ft")) {
      r.shape("ft", *ft, {0, 3});
      m.ft = r.ints("ft", *ft, 0, double(a->shape[0]));
    }
  }

  if (J == 55) {
    m.jointNames = smplxJointNames();
  } else if (J == 52 || J == 24) {
    m.jointNames.assign(smplxJointNames().begin(), smplxJointNames().begin() + 22);
    if (J == 24) {
      m.jointNames.push_back("left_hand");
      m.jointNames.push_back("right_hand");
    } else {
      m.jointNames.insert(m.jointNames.end(), smplxJointNames().begin() + 25, smplxJointNames().end());
    }
  } else if (J == 16) {  // MANO: the wrist, then the fingers in SMPL-X's order
    m.jointNames.push_back("wrist");
    for (auto it = smplxJointNames().begin() + 25; it != smplxJointNames().begin() + 40; ++it)
      m.jointNames.push_back(it->substr(5));  // without "left_"
  } else {
    for (size_t j = 0; j < J; ++j) m.jointNames.push_back("joint_" + std::to_string(j));
  }
  return m;
}

}  // namespace

BodyModel bodyModelFromNpz(const NpzArchive& npz, const std::string& name) {
  Reader r{[&](const std::string& key) -> const NpyArray* {
             auto it = npz.find(key);
             return it == npz.end() ? nullptr : &it->second;
           },
           {},
           name};
  for (const auto& [key, array] : npz) r.keys.push_back(key);
  return bodyModelFrom(r, name);
}

BodyModel bodyModelFromNpz(NpzReader& npz) {
  std::map<std::string, NpyArray> decoded;  // only the entries the model uses
  Reader r{[&](const std::string& key) -> const NpyArray* {
             if (auto it = decoded.find(key); it != decoded.end()) return &it->second;
             if (!npz.find(key)) return nullptr;
             return &(decoded[key] = npz.read(key));
           },
           {},
           npz.name()};
  for (const NpzEntry& e : npz.entries()) r.keys.push_back(e.key);
  return bodyModelFrom(r, npz.name());
}

BodyModel loadBodyModel(const std::string& path) {
  NpzReader npz = openArrayFile(path);
  return bodyModelFromNpz(npz);
}

std::map<std::string, NpyWrite> bodyModelToNpz(const BodyModel& m) {
  size_t V = m.vertexCount, J = m.jointCount, S = m.shapeCount + m.exprCount;
  std::map<std::string, NpyWrite> out;
  out["v_template"] = {{V, 3}, NpyType::F32, m.vTemplate};
  out["f"] = {{m.faceCount, 3}, NpyType::U32, std::vector<double>(m.faces.begin(), m.faces.end())};
  std::vector<double> sd(V * 3 * S);
  for (size_t vk = 0; vk < V * 3; ++vk) {
    for (size_t s = 0; s < m.shapeCount; ++s) sd[vk * S + s] = m.shapeDirs[vk * m.shapeCount + s];
    for (size_t e = 0; e < m.exprCount; ++e) sd[vk * S + m.shapeCount + e] = m.exprDirs[vk * m.exprCount + e];
  }
  out["shapedirs"] = {{V, 3, S}, NpyType::F32, std::move(sd)};
  out["posedirs"] = {{V, 3, (J - 1) * 9}, NpyType::F32, m.poseDirs};
  out["J_regressor"] = {{J, V}, NpyType::F32, m.jRegressor};
  out["weights"] = {{V, J}, NpyType::F32, m.weights};
  std::vector<double> kin(2 * J);
  for (size_t j = 0; j < J; ++j) kin[j] = m.parents[j], kin[J + j] = double(j);
  out["kintree_table"] = {{2, J}, NpyType::I64, std::move(kin)};
  if (m.hasHandPca()) {
    out["hands_componentsl"] = {{45, 45}, NpyType::F32, m.handsComponentsL};
    out["hands_componentsr"] = {{45, 45}, NpyType::F32, m.handsComponentsR};
    out["hands_meanl"] = {{45}, NpyType::F32, m.handsMeanL};
    out["hands_meanr"] = {{45}, NpyType::F32, m.handsMeanR};
  }
  if (!m.handComponents.empty()) {
    out["hands_components"] = {{45, 45}, NpyType::F32, m.handComponents};
    out["hands_mean"] = {{45}, NpyType::F32, m.handMean};
  }
  if (!m.dynLmkFacesIdx.empty()) {
    out["dynamic_lmk_faces_idx"] = {{m.contourAngles, m.contourLandmarks},
                                    NpyType::I64,
                                    std::vector<double>(m.dynLmkFacesIdx.begin(), m.dynLmkFacesIdx.end())};
    out["dynamic_lmk_bary_coords"] = {{m.contourAngles, m.contourLandmarks, 3}, NpyType::F32, m.dynLmkBaryCoords};
  }
  if (!m.lmkFacesIdx.empty()) {
    out["lmk_faces_idx"] = {
        {m.lmkFacesIdx.size()}, NpyType::I64, std::vector<double>(m.lmkFacesIdx.begin(), m.lmkFacesIdx.end())};
    out["lmk_bary_coords"] = {{m.lmkFacesIdx.size(), 3}, NpyType::F32, m.lmkBaryCoords};
  }
  if (!m.vt.empty()) {
    out["vt"] = {{m.vt.size() / 2, 2}, NpyType::F32, m.vt};
    out["ft"] = {{m.ft.size() / 3, 3}, NpyType::U32, std::vector<double>(m.ft.begin(), m.ft.end())};
  }
  return out;
}

void saveBodyModel(const BodyModel& m, const std::string& path) {
  ARM_CHECK(m.shapeCount + m.exprCount > 0, "saveBodyModel: the model has no shape directions");
  writeNpz(path, bodyModelToNpz(m));
}

}  // namespace armature
