#pragma once
// A Gaussian field moving with a body: a fitted field (`armature fit-field`'s file, in the model's rest frame)
// whose Gaussians are each attached to one joint, and what the viewer needs to pose it every frame on the host side
// (the joints' local transforms, and a box that holds the posed field). The GPU side is AvatarScene's field mode.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "armature/body/body_model.h"
#include "armature/ops/joint_forest.h"

namespace armature::app {

struct BodyField {
  std::string source;
  std::vector<float> means, cholesky, weights;  // (N,3), (N,6) anisotropic parameters, (N,1): the file's
  std::vector<int32_t> joints;                  // (N): the joint each Gaussian follows
  uint32_t size() const { return uint32_t(joints.size()); }
};

// Reads a field file (means (N,3), cholesky (N,6), weights (N,1), as fit-field writes them; checked, with errors
// naming the file and the array) and attaches each Gaussian to the joint that weighs most at the model's rest vertex
// nearest its mean: the joint that moves the surface it was fitted to.
BodyField loadBodyField(const std::string& path, const BodyModel& model);
BodyField attachField(std::vector<float> means, std::vector<float> cholesky, std::vector<float> weights,
                      const BodyModel& model, std::string source = "");

// One avatar's joints in a pose, as the field follows them: J = the regressed rest joints of (betas, expression);
// local transforms [R(pose_j) | J_j − J_parent] (the root's: [R | J_0 + transl]) and inverse binds [I | −J_j], each
// (J,12) row-major 3×4, so that global × inverse bind is smplx's skinning transform of joint j (posed space = rest
// space moved by it). Also the posed joints' positions (J,3), on the host, for the box.
struct FieldJoints {
  std::vector<float> locals, inverseBinds;
  std::vector<double> posed;
};
// `skeleton` is the model's parents' forest; `restJoints` regressJoints over shapedVertices (body_model.h).
FieldJoints fieldJoints(const BodyModel& model, const JointForest& skeleton, const double* pose,
                        const std::vector<double>& restJoints, const double transl[3]);

// A box holding every posed Gaussian's support (where its weight's term reaches `epsilon`): each joint's Gaussians
// stay within a ball around it whose radius the pose does not change.
struct FieldReach {
  std::vector<double> radius;  // (J): 0 for a joint without Gaussians
};
FieldReach fieldReach(const BodyField& field, const std::vector<double>& restJoints, float epsilon);
void fieldBox(const FieldReach& reach, const std::vector<double>& posedJoints, float lo[3], float hi[3]);

}  // namespace armature::app
