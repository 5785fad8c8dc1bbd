#include "armature/body/field_files.h"

#include <cmath>

#include "armature/error.h"
#include "armature/read_limits.h"

namespace armature {

namespace {

// The first non-finite value of `a`, named, or nothing.
void checkAllFinite(const NpyArray& a, const std::string& file, const char* key) {
  for (size_t i = 0; i < a.values.size(); ++i)
    ARM_CHECK(std::isfinite(a.values[i]), "%s: %s value %zu is %g, not finite", file.c_str(), key, i, a.values[i]);
}

const NpyArray& entry(NpzArchive& file, const std::string& name, const char* key, const char* holds) {
  auto it = file.find(key);
  ARM_CHECK(it != file.end(), "%s: %s; '%s' is missing", name.c_str(), holds, key);
  return it->second;
}

}  // namespace

VolumeFile readVolumeFile(NpzReader& reader) {
  const std::string& name = reader.name();
  const char* holds = "a volume file holds 'volume' (X,Y,Z) and 'bounds' (2,3)";
  NpzArchive file = reader.readAll();
  const NpyArray& v = entry(file, name, "volume", holds);
  const NpyArray& b = entry(file, name, "bounds", holds);
  ARM_CHECK(v.shape.size() == 3 && v.shape[0] >= 2 && v.shape[1] >= 2 && v.shape[2] >= 2,
            "%s: volume is %s, expected (X,Y,Z), each at least 2", name.c_str(), v.shapeString().c_str());
  ARM_CHECK(b.shape == (std::vector<size_t>{2, 3}), "%s: bounds is %s, expected (2,3)", name.c_str(),
            b.shapeString().c_str());
  checkAllFinite(v, name, "volume");
  checkAllFinite(b, name, "bounds");
  VolumeFile out;
  for (size_t k = 0; k < 3; ++k) {
    out.n[k] = v.shape[k];
    out.lo[k] = float(b.values[k]), out.hi[k] = float(b.values[3 + k]);
    ARM_CHECK(std::isfinite(out.lo[k]) && std::isfinite(out.hi[k]) && out.hi[k] > out.lo[k],
              "%s: bounds' axis %zu is [%g, %g], not an interval of floats", name.c_str(), k, b.values[k],
              b.values[3 + k]);
  }
  out.values = v.values;
  return out;
}

VolumeFile loadVolumeFile(const std::string& path) {
  NpzReader reader = openArrayFile(path);
  return readVolumeFile(reader);
}

FieldFile readFieldFile(NpzReader& reader) {
  const std::string& name = reader.name();
  const char* holds = "a field file holds 'means', 'cholesky' and 'weights'";
  // Attaching a Gaussian to a body is linear in its vertices: the count is bounded from the listing, before anything
  // is decoded.
  if (const NpzEntry* listed = reader.find("means"); listed && !listed->shape.empty())
    checkLimit(listed->shape[0], readLimits().gaussians, name + ": 'means'", "Gaussians",
               "ARMATURE_MAX_GAUSSIANS raises the limit");
  NpzArchive file = reader.readAll();
  auto columns = [&](const char* key, size_t width) {
    const NpyArray& a = entry(file, name, key, holds);
    ARM_CHECK(a.shape.size() == 2 && a.shape[1] == width, "%s: %s is %s, expected (N,%zu)", name.c_str(), key,
              a.shapeString().c_str(), width);
    checkAllFinite(a, name, key);
    for (double x : a.values)
      ARM_CHECK(std::abs(x) <= 3.4e38, "%s: %s holds %g, past a float's range", name.c_str(), key, x);
    return std::vector<float>(a.values.begin(), a.values.end());
  };
  FieldFile f{columns("means", 3), columns("cholesky", 6), columns("weights", 1)};
  const size_t N = f.weights.size();
  ARM_CHECK(f.means.size() == N * 3 && f.cholesky.size() == N * 6,
            "%s: means hold %zu Gaussians, cholesky %zu, weights %zu", name.c_str(), f.means.size() / 3,
            f.cholesky.size() / 6, N);
  ARM_CHECK(N >= 1, "%s: the field has no Gaussians", name.c_str());
  return f;  // N was bounded by the listing of 'means' (rank 2, checked above) before decoding
}

FieldFile loadFieldFile(const std::string& path) {
  NpzReader reader = openArrayFile(path);
  return readFieldFile(reader);
}

}  // namespace armature
