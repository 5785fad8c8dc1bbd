#pragma once
// SMPL-family body models (SMPL, SMPL+H, SMPL-X) as the official .npz files store them, and the CPU reference
// of smplx's lbs() in double precision with its exact analytic backward.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "armature/body/npz.h"

namespace armature {

// Row-major arrays, in the file's layouts (V vertices, F faces, J joints).
struct BodyModel {
  std::string source;  // file path or "synthetic(seed)"
  uint32_t vertexCount = 0, faceCount = 0, jointCount = 0;
  uint32_t shapeCount = 0;         // shape directions available (SMPL-X v1.1: 300)
  uint32_t exprCount = 0;          // expression directions available (SMPL-X v1.1: 100; SMPL/SMPL+H: 0)
  std::vector<double> vTemplate;   // (V,3)
  std::vector<int32_t> faces;      // (F,3)
  std::vector<double> shapeDirs;   // (V,3,shapeCount)
  std::vector<double> exprDirs;    // (V,3,exprCount)
  std::vector<double> poseDirs;    // (V,3,P), P = (J-1)*9
  std::vector<double> jRegressor;  // (J,V)
  std::vector<double> weights;     // (V,J)
  std::vector<int32_t> parents;    // (J); -1 for the root
  std::vector<std::string> jointNames;
  // Optional parts (empty when the file lacks them).
  std::vector<double> handsComponentsL, handsComponentsR;  // (45,45): rows are PCA components
  std::vector<double> handsMeanL, handsMeanR;              // (45)
  std::vector<double> handComponents, handMean;            // a one-hand model's (MANO's): (45,45), (45)
  std::vector<int32_t> lmkFacesIdx;                        // (L)
  std::vector<double> lmkBaryCoords;                       // (L,3)
  // The face contour's landmarks per head turn (smplx's use_face_contour): A angles of C landmarks each.
  uint32_t contourAngles = 0, contourLandmarks = 0;
  std::vector<int32_t> dynLmkFacesIdx;   // (A,C)
  std::vector<double> dynLmkBaryCoords;  // (A,C,3)
  std::vector<double> vt;                // (T,2)
  std::vector<int32_t> ft;               // (F,3)
  // Padding vertices (interior markers) that no face references; the synthetic model has some.
  uint32_t poseFeatureCount() const { return (jointCount - 1) * 9; }
  bool hasHandPca() const { return !handsComponentsL.empty(); }
  const char* kindName() const;  // "SMPL-X", "SMPL+H", "SMPL", "MANO" or "custom"
  // Joints in an order where each parent comes before its children.
  std::vector<int32_t> topologicalOrder() const;
};

// Loads an official .npz (or the synthetic one). Throws armature::Error naming the file, the key, what was
// expected and what was found, for a missing key, wrong shape or dtype, corrupt zip, a kinematic table that is
// not a tree, or NaN/Inf in the data.
BodyModel loadBodyModel(const std::string& path);
BodyModel bodyModelFromNpz(const NpzArchive& npz, const std::string& name);
// The same from an opened archive, decoding only the entries the model uses (others, such as the object arrays of
// official archives, are never parsed).
BodyModel bodyModelFromNpz(NpzReader& npz);
// Writes the official layout (shapedirs holds shape then expression columns, as SMPL-X v1.1 with 300+100).
void saveBodyModel(const BodyModel& model, const std::string& path);
std::map<std::string, NpyWrite> bodyModelToNpz(const BodyModel& model);

// The 55 SMPL-X joint names and parents.
const std::vector<std::string>& smplxJointNames();
const std::vector<int32_t>& smplxParents();

// ---- lbs() reference, double precision -------------------------------------------------------------------

// Batched inputs. pose is the full axis-angle pose (B,J,3) in smplx's joint order (for SMPL-X: global orient,
// 21 body, jaw, left eye, right eye, 15 left hand, 15 right hand). betas (B,shapeComponents) and expression
// (B,exprComponents) use the first columns of the model's directions.
struct BodyParams {
  uint32_t batch = 1;
  uint32_t shapeComponents = 10, exprComponents = 10;
  std::vector<double> pose, betas, expression, transl;  // (B,J,3) (B,S) (B,E) (B,3)
  static BodyParams zeros(const BodyModel& m, uint32_t batch, uint32_t shape = 10, uint32_t expr = 10);
};

struct BodyOutput {
  std::vector<double> vertices;  // (B,V,3)
  std::vector<double> joints;    // (B,J,3), posed joint locations plus transl (smplx's J_transformed + transl)
};

struct BodyGrads {
  std::vector<double> pose, betas, expression, transl;  // same shapes as BodyParams
};

// Checks shapes, component counts and finiteness; throws armature::Error naming the argument.
void validateBodyParams(const BodyModel& model, const BodyParams& params);

// lbs(): shape/expression blend → joint regression → Rodrigues → pose correctives → kinematic chain → linear blend
// skinning → translation.
BodyOutput bodyForwardRef(const BodyModel& model, const BodyParams& params);
// Exact gradients of <gradVertices, vertices> + <gradJoints, joints> (either gradient may be empty = zero).
BodyGrads bodyBackwardRef(const BodyModel& model, const BodyParams& params, const std::vector<double>& gradVertices,
                          const std::vector<double>& gradJoints);

// smplx's Rodrigues: angle = ||r + 1e-8||, R = I + sin(angle) K + (1 - cos(angle)) K², K = skew(r / angle).
std::array<double, 9> rodrigues(const double r[3]);
// d<gradR, R(r)>/dr.
std::array<double, 3> rodriguesBackward(const double r[3], const double gradR[9]);
// lbs()'s first steps: the template plus the first S shape and E expression directions' blend (V,3), and the joint
// regressor applied to such vertices (J,3): the rest joints.
std::vector<double> shapedVertices(const BodyModel& model, const double* betas, uint32_t S, const double* expression,
                                   uint32_t E);
std::vector<double> regressJoints(const BodyModel& model, const std::vector<double>& vertices);

// ---- SMPL-X parameterisation (SMPLX.forward's options) --------------------------------------------------
struct SmplxPoseOptions {
  bool usePca = true;  // hand poses as PCA coefficients (needs the model's hand PCA)
  uint32_t numPcaComps = 6;
  bool flatHandMean = false;  // false: add the model's mean hand pose
};
struct SmplxPose {
  std::vector<double> globalOrient, bodyPose, jaw, leye, reye;  // (B,3) (B,63) (B,3) (B,3) (B,3)
  std::vector<double> leftHand, rightHand;                      // (B,numPcaComps) with PCA, else (B,45)
};
// Full (B,55,3) pose from the SMPL-X parts, as SMPLX.forward builds it; and the backward of that map.
std::vector<double> smplxFullPose(const BodyModel& m, const SmplxPose& p, const SmplxPoseOptions& o, uint32_t batch);
SmplxPose smplxFullPoseBackward(const BodyModel& m, const std::vector<double>& gradFullPose, const SmplxPoseOptions& o,
                                uint32_t batch);

}  // namespace armature
