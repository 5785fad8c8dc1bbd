#pragma once
// Pose sequences in: AMASS sequences (SMPL+H: poses (T,156); SMPL-X: poses (T,165) or the split root_orient /
// pose_body / pose_hand / pose_jaw / pose_eye keys) and smplx / SMPLify-X parameter files (global_orient,
// body_pose, left/right_hand_pose with or without PCA, jaw_pose, leye/reye_pose, betas, expression, transl), as
// .npz or .pkl. A sequence comes out in the target model's joint layout, at its own frame rate or resampled.
//
// Joint layouts are mapped between SMPL (24 joints), SMPL+H (52) and SMPL-X (55) by one rule: the 22 body joints
// are shared; SMPL+H's and SMPL-X's 30 finger joints are shared; a joint the source lacks stays zero (SMPL-X's jaw
// and eyes from SMPL+H, SMPL's two hand joints from either); a joint the target lacks is dropped (the fingers for
// SMPL, SMPL-X's jaw and eyes for SMPL+H).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "armature/body/body_model.h"

namespace armature {

enum class JointLayout { Smpl, SmplH, SmplX };
// The layout of a model with `joints` joints (24, 52 or 55); throws for any other count.
JointLayout jointLayoutOf(uint32_t joints);
// Where joint j of `from` goes in `to`: the index, or -1 where `to` has no such joint.
int mapJoint(JointLayout from, JointLayout to, uint32_t j);

struct Motion {
  double fps = 30;
  uint32_t frames = 0, jointCount = 0;  // jointCount: the target model's
  std::vector<double> pose;             // (T, J, 3) axis-angle
  std::vector<double> transl;           // (T, 3)
  std::vector<double> betas;            // the subject's shape (AMASS: 16 for SMPL+H, 16 or 10 for SMPL-X)
  std::vector<double> expression;       // (T, E), or empty
  std::string description;              // what was read, e.g. "AMASS SMPL+H sequence, 120 fps"
  bool zUp = false;                     // AMASS: its mocap world is z-up (smplx files: the model's own frame)
};

// Reads a sequence or a parameter file for `model`. Throws armature::Error naming the file and the key for a
// layout it does not recognise, a shape that does not fit the model, or non-finite values.
Motion loadMotion(const std::string& path, const BodyModel& model);
Motion readMotion(NpzReader& archive, const BodyModel& model);

// The motion at `fps`: frame k is at time k / fps, from the frames around it by spherical interpolation of each
// joint's rotation (the shorter arc) and linear interpolation of the translation and expression; frames past the
// last source frame are not produced.
Motion resampleMotion(const Motion& motion, double fps);

// The motion turned into a y-up world (a rotation of -90° about x applied to the root's rotation and to the
// translation) when it is z-up; unchanged otherwise. The body turns about its pelvis, so the result is the rotated
// motion up to a constant offset (the rest pelvis's, R·J0 − J0).
Motion yUp(const Motion& motion);

// A motion of params.batch frames at `fps` (frame t is params' row t; the shape is row 0's) as a parameter file
// loadMotion reads back to the same frames: for SMPL-X smplx's names (global_orient, body_pose, jaw_pose,
// leye_pose, reye_pose, left/right_hand_pose as full rotations less the model's mean hand, betas, expression,
// transl), (T, k) each; for SMPL global_orient, body_pose (69), betas, transl; for SMPL+H AMASS's poses (156),
// trans, betas; and mocap_frame_rate. An .npz of float64; throws armature::Error naming the path.
void writeMotionParameters(const std::string& path, const BodyModel& model, const BodyParams& frames, double fps);
// One pose (params batch 1): writeMotionParameters of one frame.
void writePoseParameters(const std::string& path, const BodyModel& model, const BodyParams& params);

// The unit quaternion (w, x, y, z) of an axis-angle rotation vector.
std::array<double, 4> quaternionFromAxisAngle(const double* r);

// Frames [first, first + count) as a batch of body parameters with S shape and E expression components (the
// motion's betas and expression, truncated or zero-padded).
BodyParams motionFrames(const BodyModel& model, const Motion& motion, uint32_t first, uint32_t count, uint32_t S,
                        uint32_t E);

}  // namespace armature
