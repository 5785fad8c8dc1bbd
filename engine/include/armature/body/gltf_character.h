#pragma once
// Rigged glTF 2.0 characters in (.glb or .gltf, read with tinygltf): the first skinned mesh primitive, its skin
// (joints, inverse bind matrices, JOINTS_0/1 + WEIGHTS_0/1: up to 8 influences) and every animation's channels on
// the skin's joints, sampled as glTF defines LINEAR (slerp for rotations), STEP and CUBICSPLINE interpolation.
// The joints form a JointForest; sampled locals feed joint propagation (armature/ops/joint_propagation.h).
#include <cstdint>
#include <string>
#include <vector>

#include "armature/ops/joint_forest.h"

namespace armature {

struct GltfChannel {
  enum class Path : uint8_t { Translation, Rotation, Scale };
  enum class Interpolation : uint8_t { Linear, Step, CubicSpline };
  uint32_t joint = 0;  // index into the skin's joints
  Path path = Path::Translation;
  Interpolation interpolation = Interpolation::Linear;
  std::vector<float> times;   // increasing
  std::vector<float> values;  // per key 3 or 4 floats; CUBICSPLINE: in-tangent, value, out-tangent per key
};

struct GltfClip {
  std::string name;
  double seconds = 0;  // the last key's time over all channels
  std::vector<GltfChannel> channels;
};

struct GltfCharacter {
  std::string source;
  std::vector<float> vertices;          // (V,3) bind pose
  std::vector<uint32_t> indices;        // (F,3) triangles
  uint32_t influences = 4;              // 4 or 8
  std::vector<uint16_t> joints;         // (V,K) skin joint indices
  std::vector<float> weights;           // (V,K), normalised to sum 1 per vertex
  std::vector<int32_t> parents;         // (J) the nearest ancestor node that is a skin joint, or -1
  std::vector<std::string> jointNames;  // (J)
  std::vector<double> inverseBind;      // (J,12) row-major 3×4
  std::vector<double> restTrs;          // (J,10) translation, rotation (x, y, z, w), scale of each joint's node
  // For a root joint: the global transform of its ancestors (nodes outside the skin, not animated), (J,12).
  std::vector<double> rootParent;
  std::vector<GltfClip> clips;
  // What the loader changed or a user should know, one sentence each: weights rescaled to sum 1, several
  // animations of which one plays at a time. The viewer and the CLI print them.
  std::vector<std::string> notes;
  uint32_t jointCount() const { return uint32_t(parents.size()); }
  uint32_t vertexCount() const { return uint32_t(vertices.size() / 3); }
};

// Throws armature::Error naming the file for what it cannot use: no skinned mesh, a skin joint index past the skin,
// weights that are negative or sum to zero, a non-triangle primitive, inverse bind matrices of the wrong count.
// The file is untrusted (docs/readers.md): external buffers are opened only inside the file's own folder (after
// resolving symlinks and ".."), images are never opened or decoded, JSON nested past kMaxGltfJsonDepth is refused
// before parsing, every accessor is sized with overflow checks within armature/read_limits.h's budgets, and every
// number that becomes a position, weight, index, transform or key time must be finite and in range.
GltfCharacter loadGltfCharacter(const std::string& path);
// The same from a file's bytes (`binary`: a .glb; else .gltf text). External files are looked for in `folder` alone,
// or refused where `folder` is empty; `name` is what messages call the source.
GltfCharacter readGltfCharacter(const std::vector<unsigned char>& bytes, bool binary, const std::string& name,
                                const std::string& folder);

// JSON deeper than this is refused before tinygltf's recursive parser sees it (a glTF nests about ten deep).
inline constexpr uint32_t kMaxGltfJsonDepth = 128;

// Every joint's local transform (J,12) at `seconds` into clip `clip` (clamped to the clip), as 3×4 affine matrices
// T·R·S (a root's with its ancestors' transform in front); joints without a channel keep their rest TRS.
std::vector<double> sampleGltfLocals(const GltfCharacter& character, uint32_t clip, double seconds);

// A batch of poses by the double reference (joint propagation, then linear blend skinning): locals (B,J,12) as
// sampleGltfLocals gives them → posed vertices (B,V,3) and joint positions (B,J,3). `forest`: the character's.
struct GltfPoseRef {
  std::vector<double> vertices, joints;
};
GltfPoseRef poseGltfCharacterRef(const GltfCharacter& character, const JointForest& forest,
                                 const std::vector<double>& locals, uint32_t batch);

}  // namespace armature
