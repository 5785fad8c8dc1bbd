#include "app/pose_drag.h"

#include <glm/gtc/type_ptr.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "app/rotation.h"

namespace armature::app {

// The IK of each GPU backend, made on the first drag there (each uploads the model's skinning tables).
struct PoseDrag::Solvers {
  std::unique_ptr<Device> vulkanDevice, cudaDevice;
  std::unique_ptr<IkSolver> vulkan, cuda;
  uint32_t shape = 0, expr = 0;
};

namespace {
glm::dmat4 matrixOf(const ViewRay& v) { return glm::dmat4(glm::make_mat4(v.viewProj.data())); }

// Pixel (x, y) at NDC depth z, back into the world.
glm::dvec3 unproject(const ViewRay& v, double x, double y, double z) {
  const glm::dvec4 p = glm::inverse(matrixOf(v)) * glm::dvec4(2 * x / v.width - 1, 2 * y / v.height - 1, z, 1);
  return glm::dvec3(p) / p.w;
}

// The ray's distance to triangle (a, b, c) and the barycentrics of the hit (Möller–Trumbore), or infinity.
double hitTriangle(const glm::dvec3& o, const glm::dvec3& d, const glm::dvec3& a, const glm::dvec3& b,
                   const glm::dvec3& c, double& u, double& v) {
  const glm::dvec3 e1 = b - a, e2 = c - a, p = glm::cross(d, e2);
  const double det = glm::dot(e1, p);
  if (std::abs(det) < 1e-14) return INFINITY;
  const glm::dvec3 s = o - a, q = glm::cross(s, e1);
  u = glm::dot(s, p) / det, v = glm::dot(d, q) / det;
  if (u < 0 || v < 0 || u + v > 1) return INFINITY;
  const double t = glm::dot(e2, q) / det;
  return t > 0 ? t : INFINITY;
}
}  // namespace

PoseDrag::PoseDrag(AvatarScene& scene) : m_scene(scene), m_solvers(std::make_unique<Solvers>()) {}
PoseDrag::~PoseDrag() = default;

BodyParams PoseDrag::body() const {
  const BodyParams& b = m_scene.base();
  BodyParams p = BodyParams::zeros(m_scene.model(), 1, m_scene.shapeComponents(), m_scene.exprComponents());
  std::copy_n(b.pose.begin(), p.pose.size(), p.pose.begin());
  std::copy_n(b.betas.begin(), p.betas.size(), p.betas.begin());
  std::copy_n(b.expression.begin(), p.expression.size(), p.expression.begin());
  std::copy_n(b.transl.begin(), 3, p.transl.begin());
  return p;
}

// Avatar 0's joints where they are drawn: the base pose at its place in the crowd (params() holds it there).
std::vector<double> PoseDrag::worldJoints(const BodyParams& b) const {
  std::vector<double> joints = bodyForwardRef(m_scene.model(), b).joints;
  for (size_t j = 0; j < joints.size(); ++j) joints[j] += m_scene.params().transl[j % 3] - b.transl[j % 3];
  return joints;
}

std::optional<std::array<float, 2>> PoseDrag::pixelOf(const ViewRay& view, uint32_t joint) const {
  const std::vector<double> joints = worldJoints(body());
  const glm::dvec4 c = matrixOf(view) * glm::dvec4(joints[3 * joint], joints[3 * joint + 1], joints[3 * joint + 2], 1);
  if (c.w <= 0) return std::nullopt;
  return std::array<float, 2>{float((c.x / c.w + 1) / 2 * view.width), float((c.y / c.w + 1) / 2 * view.height)};
}

std::optional<uint32_t> PoseDrag::pick(const ViewRay& view, float x, float y) const {
  if (m_scene.playing()) return std::nullopt;
  const BodyModel& model = m_scene.model();
  const BodyParams b = body();
  const BodyOutput out = bodyForwardRef(model, b);
  const glm::dvec3 shift(m_scene.params().transl[0] - b.transl[0], m_scene.params().transl[1] - b.transl[1],
                         m_scene.params().transl[2] - b.transl[2]);
  const glm::dvec3 origin = unproject(view, x, y, 0), direction = glm::normalize(unproject(view, x, y, 1) - origin);
  auto vertex = [&](int32_t i) {
    return glm::dvec3(out.vertices[3 * size_t(i)], out.vertices[3 * size_t(i) + 1], out.vertices[3 * size_t(i) + 2]) +
           shift;
  };
  double nearest = INFINITY;
  int32_t corner = -1;
  for (size_t f = 0; f + 2 < model.faces.size(); f += 3) {
    double u = 0, v = 0;
    const double t = hitTriangle(origin, direction, vertex(model.faces[f]), vertex(model.faces[f + 1]),
                                 vertex(model.faces[f + 2]), u, v);
    if (t < nearest) {
      nearest = t;
      const double w[3] = {1 - u - v, u, v};
      corner = model.faces[f + size_t(std::max_element(w, w + 3) - w)];
    }
  }
  if (corner >= 0) {
    const double* w = model.weights.data() + size_t(corner) * model.jointCount;
    return uint32_t(std::max_element(w, w + model.jointCount) - w);
  }
  std::optional<uint32_t> best;
  double bestDistance = 12;  // pixels
  for (uint32_t j = 0; j < model.jointCount; ++j)
    if (auto p = pixelOf(view, j)) {
      const double d = std::hypot((*p)[0] - x, (*p)[1] - y);
      if (d < bestDistance) bestDistance = d, best = j;
    }
  return best;
}

void PoseDrag::togglePin(uint32_t joint) {
  const auto it = std::find(m_pins.begin(), m_pins.end(), joint);
  if (it != m_pins.end())
    m_pins.erase(it);
  else if (m_pins.size() + 1 < ikMaxTargets)
    m_pins.push_back(joint);
  else
    throw Error("at most " + std::to_string(ikMaxTargets - 1) + " pins");
}

void PoseDrag::remember() {
  m_undo.push_back(m_scene.base());
  m_redo.clear();
}

void PoseDrag::begin(const ViewRay& view) {
  ARM_CHECK(m_selected, "drag: no joint selected");
  ARM_CHECK(!m_scene.playing(), "drag: stop the motion or the walk first (the pose on screen is not the base pose)");
  remember();
  const BodyParams b = body();
  const std::vector<double> joints = worldJoints(b), local = bodyForwardRef(m_scene.model(), b).joints;
  const uint32_t j = *m_selected;
  const glm::dvec4 c = matrixOf(view) * glm::dvec4(joints[3 * j], joints[3 * j + 1], joints[3 * j + 2], 1);
  m_view = view, m_depth = float(c.z / c.w);
  m_problem = {};
  m_problem.targets.push_back({j, {local[3 * j], local[3 * j + 1], local[3 * j + 2]}, 1.0});
  for (uint32_t pin : m_pins)
    if (pin != j) m_problem.targets.push_back({pin, {local[3 * pin], local[3 * pin + 1], local[3 * pin + 2]}, 1.0});
  m_dragging = true, m_started = false;
}

void PoseDrag::move(float x, float y) {
  if (!m_dragging) return;
  const glm::dvec3 world = unproject(m_view, x, y, m_depth);
  const BodyParams& b = m_scene.base();
  for (int c = 0; c < 3; ++c)  // into the model's space: the crowd's place off, the base translation kept
    m_problem.targets[0].position[size_t(c)] = world[c] - (m_scene.params().transl[size_t(c)] - b.transl[size_t(c)]);
}

void PoseDrag::step(uint32_t iterations) {
  if (!m_dragging || iterations == 0) return;
  BodyParams b = body();
  const Backend backend = m_scene.backend();
  if (backend == Backend::Cpu) {
    for (uint32_t i = 0; i < iterations; ++i) ikStepRef(m_scene.model(), b, m_problem);
  } else {
    Solvers& s = *m_solvers;
    if (s.shape != m_scene.shapeComponents() || s.expr != m_scene.exprComponents()) {
      s.vulkan.reset(), s.cuda.reset();
      s.shape = m_scene.shapeComponents(), s.expr = m_scene.exprComponents();
    }
    std::unique_ptr<Device>& device = backend == Backend::Cuda ? s.cudaDevice : s.vulkanDevice;
    std::unique_ptr<IkSolver>& solver = backend == Backend::Cuda ? s.cuda : s.vulkan;
    if (!device)
      device = std::make_unique<Device>(backend == Backend::Cuda ? nullptr : &m_scene.context(), Sharing::VulkanOnly);
    if (!solver) {
      solver = std::make_unique<IkSolver>(*device, backend, m_scene.model(), s.shape, s.expr);
      m_started = false;
    }
    device->run(backend, [&](const Exec& exec) {
      if (!m_started)
        solver->start(exec, b, m_problem);
      else
        solver->moveTargets(exec, m_problem.targets);
      solver->iterate(exec, iterations);
    });
    solver->download(b);
  }
  m_started = true;
  std::copy(b.pose.begin(), b.pose.end(), m_scene.base().pose.begin());
}

void PoseDrag::end() { m_dragging = false; }

std::vector<std::array<float, 2>> PoseDrag::ring(const ViewRay& view, int axis, double radius, int segments) const {
  if (!m_selected || axis < 0 || axis > 2) return {};
  const BodyParams b = body();
  const std::vector<double> joints = worldJoints(b);
  const uint32_t j = *m_selected;
  glm::dquat global(1, 0, 0, 0);  // the joint's frame: its chain's rotations, root first
  std::vector<uint32_t> chain;
  for (int32_t k = int32_t(j); k >= 0; k = m_scene.model().parents[size_t(k)]) chain.push_back(uint32_t(k));
  for (auto k = chain.rbegin(); k != chain.rend(); ++k) global = global * rotationOf(&b.pose[3 * *k]);
  const glm::dmat3 frame = glm::mat3_cast(global);
  const glm::dvec3 centre(joints[3 * j], joints[3 * j + 1], joints[3 * j + 2]);
  const glm::dvec3 u = frame[(axis + 1) % 3], w = frame[(axis + 2) % 3];  // the plane the axis is normal to
  std::vector<std::array<float, 2>> points;
  for (int i = 0; i <= segments; ++i) {
    const double a = 2 * M_PI * i / segments;
    const glm::dvec3 p = centre + radius * (std::cos(a) * u + std::sin(a) * w);
    const glm::dvec4 c = matrixOf(view) * glm::dvec4(p, 1);
    if (c.w <= 0) return {};
    points.push_back({float((c.x / c.w + 1) / 2 * view.width), float((c.y / c.w + 1) / 2 * view.height)});
  }
  return points;
}

void PoseDrag::beginRotate() {
  ARM_CHECK(m_selected, "turn: no joint selected");
  ARM_CHECK(!m_scene.playing(), "turn: stop the motion or the walk first (the pose on screen is not the base pose)");
  remember();
}

void PoseDrag::rotate(int axis, double radians) {
  ARM_CHECK(m_selected && axis >= 0 && axis <= 2, "turn: no joint selected, or axis %d", axis);
  double* r = &m_scene.base().pose[3 * size_t(*m_selected)];
  glm::dvec3 e(0);
  e[axis] = 1;
  const glm::dvec3 turned = axisAngleOf(rotationOf(r) * glm::angleAxis(radians, e));
  for (int c = 0; c < 3; ++c) r[c] = turned[c];
}

void PoseDrag::mirror(bool leftOntoRight) {
  const std::vector<std::string>& names = m_scene.model().jointNames;
  const std::string from = leftOntoRight ? "left_" : "right_", to = leftOntoRight ? "right_" : "left_";
  remember();
  BodyParams& b = m_scene.base();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].rfind(from, 0) != 0) continue;
    const auto twin = std::find(names.begin(), names.end(), to + names[i].substr(from.size()));
    if (twin == names.end()) continue;
    const size_t k = size_t(twin - names.begin());
    b.pose[3 * k] = b.pose[3 * i], b.pose[3 * k + 1] = -b.pose[3 * i + 1], b.pose[3 * k + 2] = -b.pose[3 * i + 2];
  }
}

bool PoseDrag::undo() {
  if (m_undo.empty()) return false;
  m_redo.push_back(m_scene.base());
  m_scene.base() = m_undo.back();
  m_undo.pop_back();
  return true;
}

bool PoseDrag::redo() {
  if (m_redo.empty()) return false;
  m_undo.push_back(m_scene.base());
  m_scene.base() = m_redo.back();
  m_redo.pop_back();
  return true;
}

void PoseDrag::resetJoint(uint32_t joint) {
  ARM_CHECK(joint < m_scene.model().jointCount, "reset: joint %u of %u", joint, m_scene.model().jointCount);
  remember();
  std::fill_n(m_scene.base().pose.begin() + 3 * long(joint), 3, 0.0);
}

}  // namespace armature::app
