#include "armature/ops/interpolate.h"

#include "armature/error.h"

namespace armature {

namespace {
// Checks shapes and indices; returns the attribute rows per image (N).
size_t checkInterpolate(size_t attrSize, uint32_t C, const std::vector<int32_t>& ids, size_t barySize,
                        const std::vector<int32_t>& faces, uint32_t imagePixels) {
  ARM_CHECK(C >= 1, "interpolate: channels must be >= 1");
  ARM_CHECK(imagePixels == 0 || (ids.size() % imagePixels == 0 && !ids.empty()),
            "interpolate: %zu pixels are not a whole number of %u-pixel images", ids.size(), imagePixels);
  const size_t images = imagePixels ? ids.size() / imagePixels : 1;
  ARM_CHECK(attrSize % (images * C) == 0, "interpolate: attr must be (%sN,C) with C=%u, got %zu values",
            imagePixels ? "B," : "", C, attrSize);
  ARM_CHECK(barySize == ids.size() * 3, "interpolate: barycentrics must be (H,W,3) for %zu pixels", ids.size());
  ARM_CHECK(faces.size() % 3 == 0, "interpolate: faces must be (M,3)");
  size_t N = attrSize / C / images, M = faces.size() / 3;
  for (size_t i = 0; i < ids.size(); ++i)
    ARM_CHECK(ids[i] >= 0 && size_t(ids[i]) <= M, "interpolate: findices[%zu] = %d outside [0, %zu]", i, ids[i], M);
  for (size_t i = 0; i < faces.size(); ++i)
    ARM_CHECK(faces[i] >= 0 && size_t(faces[i]) < N, "interpolate: faces[%zu][%zu] = %d outside [0, %zu)", i / 3, i % 3,
              faces[i], N);
  return N;
}
}  // namespace

size_t interpolateAttrCount(size_t pixels, uint32_t C, uint32_t vertexCount, uint32_t imagePixels) {
  ARM_CHECK(imagePixels == 0 || pixels % imagePixels == 0,
            "interpolate: %zu pixels are not a whole number of %u-pixel images", pixels, imagePixels);
  return (imagePixels ? pixels / imagePixels : 1) * vertexCount * C;
}

std::vector<double> interpolateRef(const std::vector<double>& attr, uint32_t C, const std::vector<int32_t>& ids,
                                   const std::vector<double>& bary, const std::vector<int32_t>& faces,
                                   uint32_t imagePixels) {
  const size_t N = checkInterpolate(attr.size(), C, ids, bary.size(), faces, imagePixels);
  std::vector<double> out(ids.size() * C, 0.0);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (!ids[p]) continue;
    size_t f = size_t(ids[p] - 1), base = imagePixels ? p / imagePixels * N * C : 0;
    for (int k = 0; k < 3; ++k)
      for (uint32_t c = 0; c < C; ++c)
        out[p * C + c] += bary[p * 3 + size_t(k)] * attr[base + size_t(faces[f * 3 + size_t(k)]) * C + c];
  }
  return out;
}

void interpolateBackwardRef(const std::vector<double>& attr, uint32_t C, const std::vector<int32_t>& ids,
                            const std::vector<double>& bary, const std::vector<int32_t>& faces,
                            const std::vector<double>& gradOut, std::vector<double>& gradAttr,
                            std::vector<double>& gradBary, uint32_t imagePixels) {
  const size_t N = checkInterpolate(attr.size(), C, ids, bary.size(), faces, imagePixels);
  ARM_CHECK(gradOut.size() == ids.size() * C, "interpolate backward: gradOut must be (H,W,C)");
  gradAttr.assign(attr.size(), 0.0);
  gradBary.assign(bary.size(), 0.0);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (!ids[p]) continue;
    size_t f = size_t(ids[p] - 1), base = imagePixels ? p / imagePixels * N * C : 0;
    for (int k = 0; k < 3; ++k) {
      size_t v = base + size_t(faces[f * 3 + size_t(k)]) * C;
      double gb = 0;
      for (uint32_t c = 0; c < C; ++c) {
        gradAttr[v + c] += bary[p * 3 + size_t(k)] * gradOut[p * C + c];
        gb += attr[v + c] * gradOut[p * C + c];
      }
      gradBary[p * 3 + size_t(k)] = gb;
    }
  }
}

}  // namespace armature
