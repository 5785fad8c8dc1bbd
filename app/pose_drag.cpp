#include "app/pose_drag.h"

#include <glm/gtc/type_ptr.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "app/rotation.h"
#include "armature/clock.h"
#include "armature/vk/timer.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/cuda/runtime.h"
#endif

namespace armature::app {

// The IK of each GPU backend, made on the first drag there (each uploads the model's skinning tables).
struct PoseDrag::Solvers {
  std::unique_ptr<Device> vulkanDevice, cudaDevice;
  std::unique_ptr<IkSolver> vulkan, cuda;
  uint32_t shape = 0, expr = 0;
  std::unique_ptr<vk::GpuTimer> timer;  // the Vulkan solve's "ik" zone
#ifdef ARMATURE_HAS_INTEROP
  std::unique_ptr<cuda::EventTimer> events;  // the CUDA solve's
#endif
  uint64_t steps = 0;
};

namespace {
glm::dmat4 matrixOf(const ViewRay& v) { return glm::dmat4(glm::make_mat4(v.viewProj.data())); }

// Where a world point lands in the view, in pixels; nullopt behind the camera.
std::optional<std::array<float, 2>> project(const ViewRay& v, const glm::dvec3& p) {
  const glm::dvec4 c = matrixOf(v) * glm::dvec4(p, 1);
  if (c.w <= 0) return std::nullopt;
  return std::array<float, 2>{float((c.x / c.w + 1) / 2 * v.width), float((c.y / c.w + 1) / 2 * v.height)};
}

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

// Avatar 0's place in the crowd: what takes its model space (base parameters) to where it is drawn.
glm::dvec3 PoseDrag::offset() const {
  const std::vector<double>&drawn = m_scene.params().transl, &base = m_scene.base().transl;
  return {drawn[0] - base[0], drawn[1] - base[1], drawn[2] - base[2]};
}

// The reference forward of avatar 0's base parameters, computed again only when they change: the window asks for
// joints every frame a joint is selected (its rings), and the forward of a full body takes milliseconds.
const BodyOutput& PoseDrag::forward() const {
  const BodyParams b = body();
  if (!m_forward || b.pose != m_forwardOf.pose || b.betas != m_forwardOf.betas ||
      b.expression != m_forwardOf.expression || b.transl != m_forwardOf.transl) {
    m_forward = bodyForwardRef(m_scene.model(), b);
    m_forwardOf = b;
  }
  return *m_forward;
}

glm::dvec3 PoseDrag::jointAt(uint32_t joint) const {
  const std::vector<double>& j = forward().joints;
  return glm::dvec3(j[3 * joint], j[3 * joint + 1], j[3 * joint + 2]);
}

std::optional<std::array<float, 2>> PoseDrag::pixelOf(const ViewRay& view, uint32_t joint) const {
  return project(view, jointAt(joint) + offset());
}

std::optional<uint32_t> PoseDrag::pick(const ViewRay& view, float x, float y) const {
  if (m_scene.playing()) return std::nullopt;
  const BodyModel& model = m_scene.model();
  const std::vector<double>& vertices = forward().vertices;
  const glm::dvec3 shift = offset();
  const glm::dvec3 origin = unproject(view, x, y, 0), direction = glm::normalize(unproject(view, x, y, 1) - origin);
  auto vertex = [&](int32_t i) {
    return glm::dvec3(vertices[3 * size_t(i)], vertices[3 * size_t(i) + 1], vertices[3 * size_t(i) + 2]) + shift;
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
  const uint32_t j = *m_selected;
  const glm::dvec4 c = matrixOf(view) * glm::dvec4(jointAt(j) + offset(), 1);
  m_view = view, m_depth = float(c.z / c.w);
  m_problem = {};
  auto where = [&](uint32_t joint) -> IkTarget {
    const glm::dvec3 p = jointAt(joint);
    return {joint, {p.x, p.y, p.z}, 1.0};
  };
  m_problem.targets.push_back(where(j));  // the dragged joint first, then the pins where they are
  for (uint32_t pin : m_pins)
    if (pin != j) m_problem.targets.push_back(where(pin));
  m_dragging = true, m_started = false;
}

void PoseDrag::move(float x, float y) {
  if (!m_dragging) return;
  const glm::dvec3 target = unproject(m_view, x, y, m_depth) - offset();  // into the model's space
  m_problem.targets[0].position = {target.x, target.y, target.z};
}

void PoseDrag::step(uint32_t iterations) {
  if (!m_dragging || iterations == 0) return;
  m_lastStep.reset();  // a queue without timestamps leaves it so
  BodyParams b = body();
  const Backend backend = m_scene.backend();
  if (backend == Backend::Cpu) {
    const int64_t startNs = steadyNowNs();
    for (uint32_t i = 0; i < iterations; ++i) ikStepRef(m_scene.model(), b, m_problem);
    m_lastStep = Span{"ik", double(steadyNowNs() - startNs) * 1e-6, startNs, Track::Cpu};
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
    const uint64_t n = s.steps++;
    if (backend == Backend::Vulkan && !s.timer) s.timer = std::make_unique<vk::GpuTimer>(m_scene.context(), 2, 2);
#ifdef ARMATURE_HAS_INTEROP
    if (backend == Backend::Cuda && !s.events) s.events = std::make_unique<cuda::EventTimer>();
#endif
    device->run(backend, [&](const Exec& exec) {
      uint32_t zone = 0;
      if (backend == Backend::Vulkan) {
        s.timer->beginFrame(exec.commandBuffer(), n);
        zone = s.timer->beginZone(exec.commandBuffer(), "ik");
      }
#ifdef ARMATURE_HAS_INTEROP
      if (backend == Backend::Cuda) s.events->start(exec.stream());
#endif
      if (!m_started)
        solver->start(exec, b, m_problem);
      else
        solver->moveTargets(exec, m_problem.targets);
      solver->iterate(exec, iterations);
      if (backend == Backend::Vulkan) s.timer->endZone(exec.commandBuffer(), zone);
#ifdef ARMATURE_HAS_INTEROP
      if (backend == Backend::Cuda) s.events->stop(exec.stream());
#endif
    });
    solver->download(b);
    if (backend == Backend::Vulkan) {
      for (const vk::ZoneTime& z : s.timer->waitFrame(n))
        m_lastStep = Span{"ik", z.milliseconds, z.beginHostNs, Track::VulkanQueue};
    }
#ifdef ARMATURE_HAS_INTEROP
    if (backend == Backend::Cuda)
      m_lastStep = Span{"ik", double(s.events->milliseconds()), s.events->startHostNs(), Track::CudaStream};
#endif
  }
  m_started = true;
  std::copy(b.pose.begin(), b.pose.end(), m_scene.base().pose.begin());
}

void PoseDrag::end() { m_dragging = false, m_lastStep.reset(); }

std::vector<std::array<float, 2>> PoseDrag::ring(const ViewRay& view, int axis, double radius, int segments) const {
  if (!m_selected || axis < 0 || axis > 2) return {};
  const uint32_t j = *m_selected;
  const std::vector<double>& pose = m_scene.base().pose;
  glm::dquat global(1, 0, 0, 0);  // the joint's frame: its chain's rotations, root first
  std::vector<uint32_t> chain;
  for (int32_t k = int32_t(j); k >= 0; k = m_scene.model().parents[size_t(k)]) chain.push_back(uint32_t(k));
  for (auto k = chain.rbegin(); k != chain.rend(); ++k) global = global * rotationOf(&pose[3 * *k]);
  const glm::dmat3 frame = glm::mat3_cast(global);
  const glm::dvec3 centre = jointAt(j) + offset();
  const glm::dvec3 u = frame[(axis + 1) % 3], w = frame[(axis + 2) % 3];  // the plane the axis is normal to
  std::vector<std::array<float, 2>> points;
  for (int i = 0; i <= segments; ++i) {
    const double a = 2 * M_PI * i / segments;
    const auto pixel = project(view, centre + radius * (std::cos(a) * u + std::sin(a) * w));
    if (!pixel) return {};
    points.push_back(*pixel);
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

// Moves the current pose onto `to` and the last of `from` into the scene (undo: from the undo stack to the redo one).
bool PoseDrag::restore(std::vector<BodyParams>& from, std::vector<BodyParams>& to) {
  if (from.empty()) return false;
  to.push_back(m_scene.base());
  m_scene.base() = std::move(from.back());
  from.pop_back();
  return true;
}

bool PoseDrag::undo() { return restore(m_undo, m_redo); }
bool PoseDrag::redo() { return restore(m_redo, m_undo); }

void PoseDrag::resetJoint(uint32_t joint) {
  ARM_CHECK(joint < m_scene.model().jointCount, "reset: joint %u of %u", joint, m_scene.model().jointCount);
  remember();
  std::fill_n(m_scene.base().pose.begin() + 3 * long(joint), 3, 0.0);
}

}  // namespace armature::app
