#pragma once
// The default avatar: a synthetic, SMPL-X-compatible body model with the real dimensions (10,475 vertices,
// 20,908 faces, 55 joints, 300 shape + 100 expression directions, 486 pose correctives), deterministic per seed.
//
// Construction: an implicit humanoid (capsules and ellipsoids per bone, smoothly unioned) is polygonised by
// marching tetrahedra and reduced by topology-preserving edge collapses to exactly 10,136 body vertices; two
// closed icosphere eyeballs (162 vertices each) and 15 interior marker vertices (on joints, referenced by no
// face) complete the count. Why markers: a closed surface of genus 0 with c components has F = 2V - 4c faces,
// and 20,908 = 2·10,475 - 42 has no such solution, so exactly 15 vertices cannot be on the surfaces.
#include <cstdint>

#include "armature/body/body_model.h"

namespace armature {

struct SynthOptions {
  uint64_t seed = 0;
  double gridStep = 0.005;  // metres; the polygonisation grid before reduction
};

BodyModel synthesizeBodyModel(const SynthOptions& options = {});

// Sizes of the default avatar.
constexpr uint32_t kSynthVertices = 10475, kSynthFaces = 20908, kSynthMarkers = 15, kSynthEyeVertices = 162;

}  // namespace armature
