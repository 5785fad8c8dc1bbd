#include "armature/ops/skinning.h"

#include "dispatch.h"
#include "skinning_backend.h"

namespace armature {

namespace {
using MakeSkinning = std::unique_ptr<SkinningBackend> (*)(Device&, const SkinningTables&, uint32_t,
                                                          const SkinningTuning&);
}  // namespace

Skinning::Skinning(Device& device, Backend backend, const BodyModel& model, uint32_t S, uint32_t E, uint32_t maxBatch,
                   const SkinningTuning& tuning)
    : m_backend(backend), m_maxBatch(maxBatch) {
  ARM_CHECK(maxBatch >= 1 && maxBatch <= 65535, "skinning: maxBatch %u outside [1, 65535] (one workgroup per item)",
            maxBatch);
  const MakeSkinning make =
      backendFunction<MakeSkinning>("skinning", backend, &vk::makeSkinning, ARM_CUDA_BACKEND(makeSkinning));
  device.require(backend);
  const SkinningTables tables = buildSkinningTables(model, S, E);  // checks the model and the component counts
  m_dims = tables;
  m_impl = make(device, tables, maxBatch, tuning);
  m_tuning = m_impl->setTuning(tuning);
}

Skinning::~Skinning() = default;

namespace {
// Shape or expression coefficients (or their gradients): absent is fine where the skinning uses none (SMPL, SMPL+H
// and MANO have no expressions), so callers need no dummy buffers.
void checkCoefficients(const OpChecks& check, const char* name, const DeviceView& v, size_t count) {
  if (count == 0)
    check.optionalView(name, v, ElementType::Float32, 0);
  else
    check.view(name, v, ElementType::Float32, count);
}
}  // namespace

void Skinning::forward(const Exec& exec, const SkinningForwardArgs& a) {
  ARM_CHECK(exec.backend() == m_backend, "skinning forward: an exec for %s on a %s skinning object",
            backendName(exec.backend()), backendName(m_backend));
  ARM_CHECK(a.batch >= 1 && a.batch <= m_maxBatch, "skinning forward: batch %u outside [1, %u]", a.batch, m_maxBatch);
  const SkinningDims& t = m_dims;
  const size_t B = a.batch;
  OpChecks check("skinning forward", exec);
  check.view("pose", a.pose, ElementType::Float32, B * t.jointCount * 3);
  checkCoefficients(check, "betas", a.betas, B * t.shapeCount);
  checkCoefficients(check, "expression", a.expression, B * t.exprCount);
  check.view("transl", a.transl, ElementType::Float32, B * 3);
  check.view("vertices", a.vertices, ElementType::Float32, B * t.vertexCount * 3);
  check.view("joints", a.joints, ElementType::Float32, B * t.jointCount * 3);
  m_impl->forward(exec, a);
  m_lastBatch = a.batch;
}

void Skinning::backward(const Exec& exec, const SkinningBackwardArgs& a) {
  ARM_CHECK(exec.backend() == m_backend, "skinning backward: an exec for %s on a %s skinning object",
            backendName(exec.backend()), backendName(m_backend));
  ARM_CHECK(m_lastBatch != 0, "skinning backward: no forward before it (it reads what the forward kept)");
  ARM_CHECK(a.batch == m_lastBatch, "skinning backward: batch %u, but the last forward had %u", a.batch, m_lastBatch);
  const SkinningDims& t = m_dims;
  const size_t B = a.batch;
  OpChecks check("skinning backward", exec);
  check.view("pose", a.pose, ElementType::Float32, B * t.jointCount * 3);
  check.view("gradVertices", a.gradVertices, ElementType::Float32, B * t.vertexCount * 3);
  check.optionalView("gradJoints", a.gradJoints, ElementType::Float32, B * t.jointCount * 3);
  check.view("gradPose", a.gradPose, ElementType::Float32, B * t.jointCount * 3);
  checkCoefficients(check, "gradBetas", a.gradBetas, B * t.shapeCount);
  checkCoefficients(check, "gradExpression", a.gradExpression, B * t.exprCount);
  check.view("gradTransl", a.gradTransl, ElementType::Float32, B * 3);
  m_impl->backward(exec, a);
}

const SkinningTuning& Skinning::setTuning(const SkinningTuning& tuning) { return m_tuning = m_impl->setTuning(tuning); }
size_t Skinning::deviceBytes() const { return m_impl->deviceBytes(); }
size_t Skinning::l2ResidentBytes() const { return m_impl->l2ResidentBytes(); }

}  // namespace armature
