#pragma once
// A body model and a motion as binary glTF 2.0 (.glb): the shaped avatar as a skinned mesh (one node per joint in the
// model's hierarchy, inverse bind matrices, 4 or 8 influences per vertex) and the motion as its animation (a
// rotation channel per joint, a translation channel on the root, linear interpolation), so Blender, three.js or any
// glTF viewer plays it.
//
// What glTF skinning cannot express, and the export therefore leaves out:
//   - the pose-corrective blend shapes (they depend on the pose through rotation matrices, not on a joint each);
//   - expression changing over time (the first frame's is baked into the mesh, like the shape);
//   - influences past the K kept per vertex (the largest K weights are kept and renormalised).
// gltfSkin() evaluates what a viewer computes from the file, to measure the export against our own skinning.
#include <cstdint>
#include <string>
#include <vector>

#include "armature/body/body_model.h"
#include "armature/body/motion.h"

namespace armature {

// The skinned mesh in the bind pose, in the floats the file stores.
struct GltfRig {
  uint32_t influences = 4;        // K: 4 (JOINTS_0/WEIGHTS_0) or 8 (and JOINTS_1/WEIGHTS_1)
  std::vector<float> vertices;    // (V,3) template + shape + the first frame's expression
  std::vector<float> normals;     // (V,3) of the bind pose
  std::vector<float> joints;      // (J,3) rest joint locations (the regressor on the shaped mesh)
  std::vector<uint16_t> indices;  // (V,K) influence joints, largest weight first
  std::vector<float> weights;     // (V,K) summing to 1
  double maxDroppedWeight = 0;    // the largest total weight a vertex lost to the K limit
};
GltfRig gltfRig(const BodyModel& model, const std::vector<double>& betas, const std::vector<double>& expression,
                uint32_t influences);

// The animation: frame k at time k / fps, a unit quaternion (x, y, z, w) per joint and the root's translation.
struct GltfAnimation {
  double fps = 30;
  uint32_t frames = 0;
  std::vector<float> rotations;        // (T,J,4)
  std::vector<float> rootTranslation;  // (T,3): the root joint's rest location plus the motion's transl
};
GltfAnimation gltfAnimation(const BodyModel& model, const GltfRig& rig, const Motion& motion, uint32_t first,
                            uint32_t count);

// What a glTF viewer draws at animation frame `frame`: (V,3), from the rig and animation as stored.
std::vector<double> gltfSkin(const BodyModel& model, const GltfRig& rig, const GltfAnimation& animation,
                             uint32_t frame);

// Writes the .glb; throws armature::Error naming the path when it cannot.
void writeGlb(const std::string& path, const BodyModel& model, const GltfRig& rig, const GltfAnimation& animation);

}  // namespace armature
