// The interactive viewer: the GLFW window, frames in flight, the main panel (backend switch, crowd, draw modes,
// model loading), the GPU frame-time overlay and the scripted GUI test. The swapchain is app/swapchain.h, the
// posing panels and mouse camera app/pose_panels.h. Frame order follows imgui's example: poll → resize → new frame →
// panels → render → submit → present, with two frames in flight.
#include <volk.h>
#define GLFW_INCLUDE_NONE
#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "app/avatar_scene.h"
#include "app/character_scene.h"
#include "app/composite_scene.h"
#include "app/imgui_layer.h"
#include "app/keyframes.h"
#include "app/pose_drag.h"
#include "app/poses.h"
#include "app/pose_panels.h"
#include "app/profiler.h"
#include "app/recorder.h"
#include "app/renderer.h"
#include "app/swapchain.h"
#include "app/viewer.h"
#include "armature/body/synth.h"
#include "armature/device.h"

namespace armature::app {

namespace {

constexpr uint32_t kFramesInFlight = 2;

// The GUI tests' measure of change between two RGBA8 screenshots: pixels whose red and green move by more than 24
// together (none when the sizes differ).
size_t changedPixels(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size() && a.size() == b.size(); i += 4)
    n += std::abs(int(a[i]) - int(b[i])) + std::abs(int(a[i + 1]) - int(b[i + 1])) > 24;
  return n;
}

struct Frame {
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkSemaphore acquired = VK_NULL_HANDLE, rendered = VK_NULL_HANDLE;
};

class Viewer {
 public:
  explicit Viewer(const ViewerOptions& o) : m_options(o) {}
  int run();

 private:
  void createWindow();
  void createSwapchain();
  void panels();
  void statusLine();
  void frameAll(CameraView view);
  void overlay();
  void motionPanel(AvatarScene& avatar);
  void keysPanel(AvatarScene& avatar);
  void filePanel();
  void savePose(const std::string& path);
  void loadPose(const std::string& path);
  void runCaught(const std::function<void()>& action);
  void handleCamera();
  void handleDrag();
  void onKey(int key, int action);
  void drawFrame();
  bool saveScreenshot(const std::string& path);
  void loadModel(const std::string& path);
  void setBackend(Backend b);

  ViewerOptions m_options;
  GLFWwindow* m_window = nullptr;
  std::unique_ptr<vk::Context> m_ctx;
  VkSurfaceKHR m_surface = VK_NULL_HANDLE;
  std::unique_ptr<Swapchain> m_swap;
  Frame m_frames[kFramesInFlight];
  std::unique_ptr<ImGuiLayer> m_ui;
  OverlayState m_overlayState;
  std::unique_ptr<Scene> m_scene;
  AvatarScene* body() const { return findScene<AvatarScene>(m_scene.get()); }  // null for a glTF character alone
  std::unique_ptr<Renderer> m_renderer;
  std::unique_ptr<vk::GpuTimer> m_timer;
  Profiler m_profiler;
  Camera m_camera;
  DrawSettings m_draw;
  bool m_vsync = true, m_showOverlay = true, m_resize = false;
  bool m_computeRaster = false;  // draw through the project's rasteriser (visibility buffer) instead of the hardware
  uint64_t m_frameIndex = 0;
  double m_animTime = 0;
  double m_uiCpuMs = 0;  // building this frame's panels and overlay
  int64_t m_uiStartNs = 0;
  std::string m_status;
  char m_modelPath[512] = {}, m_motionPath[512] = {};
  char m_screenshotPath[512] = "armature.png", m_posePath[512] = "pose.npz";
  float m_speed = 1.f;  // the timeline's playback speed
  uint32_t m_avatars = 1;
  int m_activeShape = 10, m_activeExpr = 10;
  std::vector<PoseGroup> m_groups;
  std::string m_pendingScreenshot;
  float m_layoutProbe = 0;      // the backend selector's top this frame (the gui test checks it stays put)
  float m_panelRight = 0;       // where the main panel ends, as a fraction of the window's width
  bool m_screenshotUi = false;  // screenshots and recordings include the panels and overlay
  std::unique_ptr<VideoRecorder> m_recorder;  // recording the view, every frame
  char m_videoPath[512] = "armature.mp4";
  std::unique_ptr<vk::Buffer> m_shot;
  std::vector<uint8_t> m_lastScreenshot;
  std::vector<int> m_taps;           // keys pressed since the last frame, in order (a held key's repeats are not taps)
  std::unique_ptr<PoseDrag> m_drag;  // posing by dragging (a body model's scene only)
  int m_ikIterations = 8;            // IK steps per frame while dragging
  std::optional<Span> m_ikStage;     // this frame's IK (PoseDrag::lastStep), for the overlay
  Keyframes m_keys;                  // the keyed animation being made
  float m_keyTime = 0;               // where "set key" puts the next key
  char m_keysPath[512] = "keys.glb";
  int m_turnAxis = -1;    // the rotation ring being dragged (0 x, 1 y, 2 z), -1: none
  float m_turnAngle = 0;  // the mouse's angle about the joint on screen, last frame
  void frameOnce();
  int guiTest();
  int characterGuiTest();
  void cleanup();
};

void Viewer::createWindow() {
  if (!glfwInit()) throw Error("glfwInit failed (is there a display? use --headless without one)");
  glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
  m_window = glfwCreateWindow(int(m_options.width), int(m_options.height), "Armature viewer", nullptr, nullptr);
  if (!m_window) throw Error("cannot create a window");
  glfwSetWindowUserPointer(m_window, this);
  glfwSetFramebufferSizeCallback(
      m_window, [](GLFWwindow* w, int, int) { static_cast<Viewer*>(glfwGetWindowUserPointer(w))->m_resize = true; });
  // Installed before ImGui's, which chains to it. Taps are counted as GLFW delivers them, not polled once a frame:
  // at a few frames a second a tap between two frames still counts, and a held key toggles once.
  glfwSetKeyCallback(m_window, [](GLFWwindow* w, int key, int, int action, int) {
    static_cast<Viewer*>(glfwGetWindowUserPointer(w))->onKey(key, action);
  });
  uint32_t n = 0;
  const char** exts = glfwGetRequiredInstanceExtensions(&n);
  vk::ContextOptions co;
  for (uint32_t i = 0; i < n; ++i) co.instanceExtensions.push_back(exts[i]);
  co.swapchain = true;
  m_ctx = std::make_unique<vk::Context>(co);
  VK_CHECK(glfwCreateWindowSurface(m_ctx->instance(), m_window, nullptr, &m_surface));
  VkBool32 present = VK_FALSE;
  vkGetPhysicalDeviceSurfaceSupportKHR(m_ctx->physicalDevice(), m_ctx->queueFamily(), m_surface, &present);
  if (!present) throw Error("the chosen Vulkan queue cannot present to this window");
}

// The renderer's pass is built for the surface's format before the swapchain's framebuffers are made for it.
void Viewer::createSwapchain() {
  if (!m_swap) m_swap = std::make_unique<Swapchain>(*m_ctx, m_surface);
  if (!m_renderer)
    m_renderer = std::make_unique<Renderer>(*m_ctx, m_swap->chooseFormat(), VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                                            m_scene->faces(), m_scene->parents());
  int w = 0, h = 0;
  glfwGetFramebufferSize(m_window, &w, &h);
  m_swap->create({uint32_t(w), uint32_t(h)}, m_vsync, m_renderer->renderPass());
}

void Viewer::loadModel(const std::string& path) {
  if (m_ctx->device()) vkDeviceWaitIdle(m_ctx->device());
  Backend backend = m_scene ? m_scene->backend() : Backend::Vulkan;
  std::unique_ptr<Scene> scene = openScene(*m_ctx, path, std::max(m_options.avatars, 64u), m_options.beside);
  configureScene(*scene, m_options);
  scene->animate = m_options.animate || !m_options.motion.empty();
  if (!m_options.motion.empty()) std::snprintf(m_motionPath, sizeof m_motionPath, "%s", m_options.motion.c_str());
  m_drag.reset();
  m_keys.clear();  // keys of the old model
  m_scene = std::move(scene);
  if (AvatarScene* b = body()) {
    m_drag = std::make_unique<PoseDrag>(*b);
    m_groups = poseGroups(b->model());
    m_activeShape = int(b->shapeComponents());
    m_activeExpr = int(b->exprComponents());
  }
  setBackend(backend);
  m_scene->setAvatars(std::min(m_avatars, m_scene->maxAvatars()));
  if (m_renderer) {  // a new mesh: new index buffer, same pass
    VkFormat format = m_swap->format();
    m_renderer = std::make_unique<Renderer>(*m_ctx, format, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, m_scene->faces(),
                                            m_scene->parents());
  }
  frameAvatars(m_camera, *m_scene, CameraView::Current);
  m_draw.vertexCount = m_scene->vertexCount();
  m_draw.jointCount = m_scene->jointCount();
  m_draw.floorY = m_scene->floorY();
  std::snprintf(m_modelPath, sizeof m_modelPath, "%s", path.c_str());
}

void Viewer::setBackend(Backend b) {
  try {
    m_scene->setBackend(b);
    m_status = "skinning: " + m_scene->backendStatus();
  } catch (const std::exception& e) {
    m_status = std::string("cannot use ") + backendName(b) + ": " + e.what();
  }
}

void Viewer::onKey(int key, int action) {
  if (action == GLFW_PRESS) m_taps.push_back(key);
}

void Viewer::handleCamera() {
  const ImGuiIO& io = ImGui::GetIO();
  m_ikStage.reset();
  if (m_drag) handleDrag();
  if (!io.KeyCtrl && !(m_drag && m_drag->dragging())) orbitCamera(m_camera);  // Ctrl + left mouse poses instead
  std::vector<int> taps;
  taps.swap(m_taps);
  if (io.WantCaptureKeyboard) return;  // typed into a text field
  for (int key : taps) {
    if (key == GLFW_KEY_SPACE) m_scene->animate = !m_scene->animate;
    if (key == GLFW_KEY_F1) m_showOverlay = !m_showOverlay;
    if (key == GLFW_KEY_F) frameAll(CameraView::Current);
    if (!m_drag) continue;
    const std::optional<uint32_t> joint = m_drag->selected();
    if (key == GLFW_KEY_Z && io.KeyCtrl) m_status = m_drag->undo() ? "undone" : "nothing to undo";
    if (key == GLFW_KEY_Y && io.KeyCtrl) m_status = m_drag->redo() ? "redone" : "nothing to redo";
    if (key == GLFW_KEY_P && joint) runCaught([&] { m_drag->togglePin(*joint); });
    if (key == GLFW_KEY_R && joint) m_drag->resetJoint(*joint);
    if (key == GLFW_KEY_K && body()) runCaught([&] { m_keys.set(m_keyTime, body()->shown()); });
  }
}

// Ctrl + left click picks the joint under the mouse and starts a drag; while the button is held the joint's
// target follows the mouse at its depth, and each frame runs m_ikIterations IK steps on the scene's backend.
void Viewer::handleDrag() {
  const ImGuiIO& io = ImGui::GetIO();
  const VkExtent2D extent = m_swap->extent();
  const ViewRay view{m_camera.viewProj(float(extent.width) / float(extent.height)), float(extent.width),
                     float(extent.height)};
  const float x = io.MousePos.x * io.DisplayFramebufferScale.x, y = io.MousePos.y * io.DisplayFramebufferScale.y;
  // The selected joint's rings (x red, y green, z blue), drawn over the frame; Ctrl + drag on one turns the joint.
  std::array<std::vector<std::array<float, 2>>, 3> rings;
  std::optional<std::array<float, 2>> centre;
  if (m_drag->selected() && !m_drag->dragging() && !body()->playing()) {
    centre = m_drag->pixelOf(view, *m_drag->selected());
    const ImU32 colours[3] = {IM_COL32(230, 70, 70, 220), IM_COL32(80, 200, 80, 220), IM_COL32(80, 120, 240, 220)};
    for (int k = 0; k < 3; ++k) {
      rings[size_t(k)] = m_drag->ring(view, k, 0.03 * m_camera.distance);
      std::vector<ImVec2> points;
      for (const auto& q : rings[size_t(k)])
        points.push_back({q[0] / io.DisplayFramebufferScale.x, q[1] / io.DisplayFramebufferScale.y});
      ImGui::GetForegroundDrawList()->AddPolyline(points.data(), int(points.size()), colours[k], 0,
                                                  m_turnAxis == k ? 3.f : 1.5f);
    }
  }
  auto angleAbout = [&](float px, float py) { return std::atan2(py - (*centre)[1], px - (*centre)[0]); };
  if (!io.WantCaptureMouse && io.KeyCtrl && ImGui::IsMouseClicked(ImGuiMouseButton_Left))
    runCaught([&] {
      m_turnAxis = -1;
      float nearest = 6;  // pixels
      for (int k = 0; k < 3; ++k)
        for (const auto& q : rings[size_t(k)])
          if (float d = std::hypot(q[0] - x, q[1] - y); d < nearest) nearest = d, m_turnAxis = k;
      if (m_turnAxis >= 0 && centre) {
        m_drag->beginRotate();
        m_turnAngle = angleAbout(x, y);
        return;
      }
      m_turnAxis = -1;
      const std::optional<uint32_t> joint = m_drag->pick(view, x, y);
      m_drag->select(joint);
      if (joint) m_drag->begin(view);
    });
  if (m_turnAxis >= 0) {
    const auto& ring = rings[size_t(m_turnAxis)];
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Left) || !centre || ring.size() < 2) {
      m_turnAxis = -1;
      return;
    }
    // The ring's direction on screen: a turn by +a moves its points the way its parameter runs.
    const float sense = (ring[0][0] - (*centre)[0]) * (ring[1][1] - (*centre)[1]) -
                                    (ring[0][1] - (*centre)[1]) * (ring[1][0] - (*centre)[0]) >=
                                0
                            ? 1.f
                            : -1.f;
    const float now = angleAbout(x, y);
    float delta = now - m_turnAngle;
    delta = std::remainder(delta, 2 * float(M_PI));
    m_turnAngle = now;
    if (delta != 0) m_drag->rotate(m_turnAxis, double(sense * delta));
    return;
  }
  if (!m_drag->dragging()) return;
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    m_drag->end();
    return;
  }
  m_drag->move(x, y);
  // Where the solve runs on the CPU (the double reference, or Vulkan on lavapipe) one iteration takes a good part
  // of a second: one a frame keeps the view responsive while the target moves.
  const bool slow = m_scene->backend() == Backend::Cpu || m_ctx->info().isCpu();
  runCaught([&] { m_drag->step(slow ? 1u : uint32_t(m_ikIterations)); });
  m_ikStage = m_drag->lastStep();
}

void Viewer::panels() {
  statusLine();
  ImGui::SetNextWindowPos({10, 10}, ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize({380, 640}, ImGuiCond_FirstUseEver);
  ImGui::Begin("Armature");
  m_panelRight = (ImGui::GetWindowPos().x + ImGui::GetWindowSize().x) / std::max(1.f, ImGui::GetIO().DisplaySize.x);
  ImGui::Text("device: %s%s", m_ctx->info().name.c_str(), m_ctx->info().isCpu() ? " (CPU)" : "");
  int backend = int(m_scene->backend());
  const char* names[] = {"CPU reference", "Vulkan compute", "CUDA (interop)"};
  if (ImGui::Combo("backend", &backend, names, 3)) setBackend(Backend(backend));
  m_layoutProbe = ImGui::GetItemRectMin().y;
  int raster = m_computeRaster ? 1 : 0;
  const char* rasterNames[] = {"hardware (graphics pipeline)", "compute (visibility buffer)"};
  if (ImGui::Combo("rasterizer", &raster, rasterNames, 2)) m_computeRaster = raster == 1;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "compute: the project's rasterizer (CUDA with the CUDA backend, Vulkan compute otherwise)\n"
        "writes face ids and barycentrics, then one fullscreen pass shades them");
  int avatars = int(m_scene->avatars());
  // Typed (Enter applies) or stepped by 1 and, with Ctrl, by 64: a slider over 1 … 4,096 moves by dozens a pixel.
  if (ImGui::InputInt("avatars", &avatars, 1, 64, ImGuiInputTextFlags_EnterReturnsTrue)) {
    avatars = std::clamp(avatars, 1, int(m_scene->maxAvatars()));
    runCaught([&] {
      m_scene->setAvatars(uint32_t(avatars));
      m_avatars = uint32_t(avatars);
      m_draw.avatars = m_avatars;
    });
  }
  ImGui::Checkbox("animate (space)", &m_scene->animate);
  ImGui::SameLine();
  ImGui::Checkbox("wireframe", &m_draw.wireframe);
  ImGui::SameLine();
  ImGui::Checkbox("ground", &m_draw.ground);
  ImGui::SameLine();
  ImGui::Checkbox("skeleton", &m_draw.skeleton);
  if (ImGui::Checkbox("vsync", &m_vsync)) m_resize = true;
  ImGui::SameLine();
  ImGui::Checkbox("profiler (F1)", &m_showOverlay);
  ImGui::InputText("model", m_modelPath, sizeof m_modelPath);
  ImGui::SameLine();
  if (ImGui::Button("load")) {
    runCaught([&] {
      loadModel(m_modelPath);
      createSwapchain();
    });
  }
  AvatarScene* avatar = body();
  if (avatar) motionPanel(*avatar);
  if (avatar && m_drag && ImGui::CollapsingHeader("drag to pose", ImGuiTreeNodeFlags_DefaultOpen)) {
    const std::optional<uint32_t> joint = m_drag->selected();
    ImGui::TextWrapped(
        "Ctrl + drag a joint (on the body or the skeleton) to move it, or one of its rings to turn it; "
        "P pins it, R resets it, Ctrl+Z / Ctrl+Y undo and redo. selected: %s; pins: %zu",
        joint ? avatar->model().jointNames[*joint].c_str() : "none", m_drag->pins().size());
    ImGui::SliderInt("IK steps per frame", &m_ikIterations, 1, 32);
    if (ImGui::Button("undo")) m_drag->undo();
    ImGui::SameLine();
    if (ImGui::Button("redo")) m_drag->redo();
    if (joint) {
      ImGui::SameLine();
      if (ImGui::Button("pin / unpin")) runCaught([&] { m_drag->togglePin(*joint); });
      ImGui::SameLine();
      if (ImGui::Button("reset joint")) m_drag->resetJoint(*joint);
    }
    if (ImGui::Button("mirror left → right")) m_drag->mirror(true);
    ImGui::SameLine();
    if (ImGui::Button("mirror right → left")) m_drag->mirror(false);
  }
  filePanel();
  if (!avatar) {  // a glTF character plays its own clip
    ImGui::End();
    return;
  }
  if (m_scene.get() == avatar) {  // the baked texture is a body model's alone, not a composite scene's
    bool baked = avatar->bake().has_value();
    const uint32_t size = m_options.bake ? m_options.bake : 1024;
    if (ImGui::Checkbox("baked texture", &baked))
      runCaught([&] {
        avatar->setBake(baked ? std::optional(AvatarScene::BakeSettings{size, m_options.bakeViews, size})
                              : std::nullopt);
      });
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "bake the avatar, painted by body part, from %u views of %u² every frame into a %u² texture\n"
          "(stages: bake views, bake samples, bake aggregate) and draw the crowd with it",
          m_options.bakeViews, size, size);
    if (!m_options.field.empty()) {
      bool shown = avatar->field() != nullptr;
      if (ImGui::Checkbox("field", &shown))
        runCaught([&] {
          avatar->setField(shown ? std::optional(loadBodyField(m_options.field, avatar->model())) : std::nullopt,
                           FieldSettings{.resolution = m_options.fieldResolution, .density = m_options.fieldDensity});
        });
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "%s on the avatar's joints: posed, binned and evaluated every frame (stages: field pose, "
            "field grid, field eval), ray-marched (field march)",
            m_options.field.c_str());
      if (avatar->field()) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(120);
        ImGui::SliderFloat("density", &avatar->fieldSettings().density, 0.1f, 200.0f, "%.1f /m",
                           ImGuiSliderFlags_Logarithmic);
        m_options.fieldDensity = avatar->fieldSettings().density;
      }
    }
  }
  ImGui::Separator();
  for (const auto& name : posePresetNames()) {
    if (ImGui::Button(name.c_str())) avatar->applyPose(posePreset(avatar->model(), name));
    ImGui::SameLine();
  }
  if (ImGui::Button("random")) {
    static std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    BodyParams& p = avatar->base();
    for (size_t i = 3; i < p.pose.size(); ++i) p.pose[i] = u(rng) * (i < 66 ? 1.0 : 0.6);
    for (auto& b : p.betas) b = 3 * u(rng);
  }
  ImGui::NewLine();
  posePanels(*avatar, m_groups, m_activeShape, m_activeExpr);
  ImGui::End();
}

// The motion the avatars play: open a file, then a timeline (play/pause with "animate", scrub, speed; it loops).
void Viewer::motionPanel(AvatarScene& avatar) {
  ImGui::InputText("motion", m_motionPath, sizeof m_motionPath);
  ImGui::SameLine();
  if (ImGui::Button("open")) {
    runCaught([&] {
      avatar.setMotion(loadMotion(m_motionPath, avatar.model()));
      avatar.animate = true;
      m_animTime = 0;
      m_status = std::string(m_motionPath) + ": " + avatar.motion()->description;
    });
  }
  if (avatar.motion()) {
    ImGui::SameLine();
    if (ImGui::Button("close")) avatar.clearMotion();  // back to the base pose, which the controls then edit
  }
  if (const Motion* motion = avatar.motion()) {
    // Play, pause and step beside the timeline they drive.
    if (ImGui::Button(avatar.animate ? "pause" : "play")) avatar.animate = !avatar.animate;
    ImGui::SameLine();
    const double frame = 1.0 / motion->fps;
    if (ImGui::ArrowButton("##back", ImGuiDir_Left))
      avatar.animate = false, m_animTime = std::max(0.0, m_animTime - frame);
    ImGui::SameLine();
    if (ImGui::ArrowButton("##on", ImGuiDir_Right)) avatar.animate = false, m_animTime += frame;
    ImGui::SameLine();
    float at = float(m_animTime), length = float(avatar.clipSeconds());
    ImGui::SetNextItemWidth(160);
    if (ImGui::SliderFloat("time (s)", &at, 0.f, length, "%.2f")) m_animTime = at, avatar.update(m_animTime);
    ImGui::SliderFloat("speed", &m_speed, 0.f, 4.f, "%.2fx");
    ImGui::Text("frame %u of %u at %.0f fps", std::min(uint32_t(m_animTime * motion->fps), motion->frames - 1),
                motion->frames, motion->fps);
  }
  keysPanel(avatar);
}

constexpr double kKeysFps = 30;  // keys play and export at this rate

// Keys: the pose on screen keyed at a time, the timeline scrubbing through them (the pose follows, interpolated),
// played as a motion, and exported as a glb or smplx parameters.
void Viewer::keysPanel(AvatarScene& avatar) {
  if (!ImGui::CollapsingHeader("keys")) return;
  const float end = std::max(2.f, float(m_keys.last()) + 1.f);
  ImGui::SetNextItemWidth(220);
  if (ImGui::SliderFloat("key time (s)", &m_keyTime, 0.f, end, "%.2f") && !m_keys.empty() && !avatar.playing())
    runCaught([&] { avatar.applyPose(m_keys.sample(m_keyTime)); });
  const ImVec2 lo = ImGui::GetItemRectMin(), hi = ImGui::GetItemRectMax();
  for (const auto& [t, pose] : m_keys.keys()) {  // a tick under the slider per key
    const float x = lo.x + (hi.x - lo.x) * float(t) / end;
    ImGui::GetWindowDrawList()->AddTriangleFilled({x, hi.y - 6}, {x - 4, hi.y + 2}, {x + 4, hi.y + 2},
                                                  IM_COL32(250, 200, 60, 255));
  }
  if (ImGui::Button("set key (K)")) runCaught([&] { m_keys.set(m_keyTime, avatar.shown()); });
  ImGui::SameLine();
  if (ImGui::Button("delete key")) m_status = m_keys.remove(m_keyTime) ? "key deleted" : "no key at this time";
  ImGui::SameLine();
  if (ImGui::Button("play keys"))
    runCaught([&] {
      avatar.setMotion(m_keys.motion(avatar.model(), kKeysFps));
      avatar.animate = true, m_animTime = 0;
      m_status = std::to_string(m_keys.keys().size()) + " keys playing (close the motion to edit)";
    });
  ImGui::SetNextItemWidth(200);
  ImGui::InputText("##keys", m_keysPath, sizeof m_keysPath);
  ImGui::SameLine();
  if (ImGui::Button("export keys (.glb / .npz)"))
    runCaught([&] {
      writeKeyframes(m_keysPath, avatar.model(), m_keys, kKeysFps);
      m_status = std::string("wrote ") + m_keysPath;
    });
  ImGui::Text("%zu keys, %.2f s", m_keys.keys().size(), m_keys.last());
}

// The camera presets, a screenshot of the next frame, and the pose saved or loaded as a parameter file in smplx's
// names (what loadMotion reads).
void Viewer::filePanel() {
  ImGui::TextUnformatted("camera");
  for (auto [label, view] : {std::pair{"front", CameraView::Front},
                             {"side", CameraView::Side},
                             {"top", CameraView::Top},
                             {"frame all (F)", CameraView::Current}}) {
    ImGui::SameLine();
    if (ImGui::Button(label)) frameAll(view);
  }
  ImGui::SetNextItemWidth(200);
  ImGui::InputText("png", m_screenshotPath, sizeof m_screenshotPath);
  ImGui::SameLine();
  if (ImGui::Button("screenshot")) {
    m_pendingScreenshot = m_screenshotPath;
    m_status = "screenshot: " + m_pendingScreenshot;
  }
  ImGui::SameLine();
  ImGui::Checkbox("with UI", &m_screenshotUi);
  ImGui::SetNextItemWidth(200);
  ImGui::InputText("video", m_videoPath, sizeof m_videoPath);
  ImGui::SameLine();
  if (!m_recorder && ImGui::Button("record"))
    runCaught([&] {
      m_recorder = std::make_unique<VideoRecorder>(m_videoPath, m_swap->extent().width, m_swap->extent().height, 60);
      m_status = "recording: " + m_recorder->description();
    });
  else if (m_recorder && ImGui::Button("stop")) {
    m_status = "recorded " + std::to_string(m_recorder->frames()) + " frames: " + m_recorder->description();
    m_recorder.reset();
  }
  if (!body()) return;
  ImGui::SetNextItemWidth(200);
  ImGui::InputText("pose", m_posePath, sizeof m_posePath);
  ImGui::SameLine();
  if (ImGui::Button("save")) runCaught([&] { savePose(m_posePath); });
  ImGui::SameLine();
  if (ImGui::Button("load##pose")) runCaught([&] { loadPose(m_posePath); });
}

void Viewer::savePose(const std::string& path) {
  writePoseParameters(path, body()->model(), body()->shown());  // what is on screen, a playing frame too
  m_status = "wrote " + path;
}

void Viewer::loadPose(const std::string& path) {
  AvatarScene& avatar = *body();
  const Motion pose = loadMotion(path, avatar.model());
  const BodyParams& base = avatar.base();
  avatar.applyPose(motionFrames(avatar.model(), pose, 0, 1, base.shapeComponents, base.exprComponents));
  avatar.clearMotion();  // the loaded pose, not a motion's frame, is what the avatars now hold
  avatar.animate = false;
  m_status = path + ": " + pose.description;
}

// A camera preset framing the avatars in the part of the view right of the main panel: the view backs off by
// the share the panel covers and its target moves left by half of it, so the crowd is whole and uncovered.
void Viewer::frameAll(CameraView view) {
  frameAvatars(m_camera, *m_scene, view);
  const float covered = std::clamp(m_panelRight, 0.f, 0.6f);
  if (covered <= 0) return;
  m_camera.distance /= 1 - covered;
  const VkExtent2D extent = m_swap->extent();
  const float aspect = float(extent.width) / float(std::max(1u, extent.height));
  const float shift = covered * m_camera.distance * std::tan(m_camera.fovY / 2) * aspect;  // world units
  m_camera.target[0] -= std::cos(m_camera.yaw) * shift;                                    // along the camera's left
  m_camera.target[2] += std::sin(m_camera.yaw) * shift;
}

// The status (the last action's result or error) on one line along the bottom of the window, whole on hover: a
// message of any length moves no control.
void Viewer::statusLine() {
  const ImGuiIO& io = ImGui::GetIO();
  const float height = ImGui::GetFrameHeightWithSpacing();
  ImGui::SetNextWindowPos({0, io.DisplaySize.y - height});
  ImGui::SetNextWindowSize({io.DisplaySize.x, height});
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  ImGui::TextUnformatted(m_status.c_str());
  if (ImGui::IsWindowHovered() && !m_status.empty()) ImGui::SetTooltip("%s", m_status.c_str());
  ImGui::End();
}

// Runs a panel's action; a failure becomes the status line.
void Viewer::runCaught(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    m_status = e.what();
  }
}

void Viewer::overlay() {
  if (!m_showOverlay) return;
  OverlayInfo info{m_ctx.get(), m_frameIndex, m_scene->avatars(), m_swap->extent(), m_options.profile};
  profilerOverlay(m_profiler, info, m_overlayState, m_status);
}

void Viewer::drawFrame() {
  Frame& fr = m_frames[m_frameIndex % kFramesInFlight];
  VkDevice dev = m_ctx->device();
  // This frame slot's previous submission (two frames ago); the other slot is waited for below, before the
  // shared scene buffers are written.
  VkResult wr = vkWaitForFences(dev, 1, &fr.fence, VK_TRUE, 10'000'000'000ull);
  if (wr == VK_TIMEOUT) throw Error("the GPU did not finish a frame within 10 s");
  VK_CHECK(wr);
  uint32_t imageIndex = 0;
  VkResult ar =
      vkAcquireNextImageKHR(dev, m_swap->handle(), 10'000'000'000ull, fr.acquired, VK_NULL_HANDLE, &imageIndex);
  if (ar == VK_ERROR_OUT_OF_DATE_KHR) {
    m_resize = true;
    return;
  }
  if (ar != VK_SUBOPTIMAL_KHR) VK_CHECK(ar);
  VK_CHECK(vkResetFences(dev, 1, &fr.fence));

  const int64_t t0 = steadyNowNs();
  m_animTime += m_scene->animate ? ImGui::GetIO().DeltaTime * m_speed : 0.0;
  if (m_scene->clipSeconds() > 0) m_animTime = std::fmod(m_animTime, m_scene->clipSeconds());  // loop
  m_scene->update(m_animTime);
  VK_CHECK(vkResetCommandPool(dev, fr.pool, 0));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CHECK(vkBeginCommandBuffer(fr.cmd, &bi));
  FrameRecord rec;
  rec.startHostNs = t0;
  // GPU zones of the frame that last used this timer slot arrive now: file them under that frame.
  if (auto previous = m_timer->beginFrame(fr.cmd, m_frameIndex); previous && m_frameIndex >= kFramesInFlight)
    m_profiler.attachGpu(m_frameIndex - kFramesInFlight, vulkanSpans(*previous));
  // The scene's parameter, position and visibility buffers are one set, not one per frame in flight: before this
  // frame writes them (the host for Vulkan's parameters and the CPU backend, CUDA for its outputs), the other frame
  // must be done reading them. (A ring of those buffers would keep the CPU a frame ahead; interop::FrameRing is
  // that protocol for the CUDA side.)
  for (uint32_t k = 1; k < kFramesInFlight; ++k) {
    Frame& other = m_frames[(m_frameIndex + k) % kFramesInFlight];
    VkResult w = vkWaitForFences(dev, 1, &other.fence, VK_TRUE, 10'000'000'000ull);
    if (w == VK_TIMEOUT) throw Error("the GPU did not finish a frame within 10 s");
    VK_CHECK(w);
  }
  m_scene->skin(fr.cmd, m_timer.get());
  m_draw.visibility = {};
  if (m_computeRaster) {
    try {
      m_draw.visibility = m_scene->rasterize(
          fr.cmd, m_timer.get(), m_camera.viewProj(float(m_swap->extent().width) / float(m_swap->extent().height)),
          m_swap->extent());
    } catch (const std::exception& e) {
      m_computeRaster = false;  // e.g. a crowd too large for it: back to the hardware rasteriser
      m_status = std::string("compute raster: ") + e.what();
    }
  }
  m_draw.joints = m_scene->joints();
  m_draw.texture = m_scene->texture();
  m_draw.field = m_scene->volume();
  FrameTarget target{m_swap->framebuffer(imageIndex), m_swap->extent(),
                     m_swap->transferDst() ? m_swap->image(imageIndex) : VK_NULL_HANDLE};
  const bool capture = !m_pendingScreenshot.empty() || m_recorder;
  const bool ui = !capture || m_screenshotUi;  // a screenshot's or a recording's frame leaves the UI out unless asked
  recordFrame(
      *m_renderer, *m_timer, fr.cmd, target, m_camera, m_scene->positions(), m_draw,
      [&](VkCommandBuffer c) { return ui ? m_ui->layer(c, m_swap->extent()) : UiLayer{}; },
      [&](VkCommandBuffer c) {
        if (ui) m_ui->draw(c);
      });
  for (const Span& span : m_scene->ownTimes()) rec.add(span);
  rec.add({"ui (cpu)", m_uiCpuMs, m_uiStartNs, Track::Cpu});
  if (m_ikStage) rec.add(*m_ikStage);
  if (capture) {
    size_t bytes = size_t(m_swap->extent().width) * m_swap->extent().height * 4;
    if (!m_shot || m_shot->size() < bytes)
      m_shot =
          std::make_unique<vk::Buffer>(*m_ctx, bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, vk::MemoryKind::HostVisible);
    m_swap->recordReadback(fr.cmd, imageIndex, m_shot->handle());
  }
  VK_CHECK(vkEndCommandBuffer(fr.cmd));
  // The image is first written by a colour attachment or, for a compute-shaded frame, by a copy.
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &fr.acquired;
  si.pWaitDstStageMask = &stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &fr.cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &fr.rendered;
  VK_CHECK(vkQueueSubmit(m_ctx->queue(), 1, &si, fr.fence));
  VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  pi.waitSemaphoreCount = 1;
  pi.pWaitSemaphores = &fr.rendered;
  pi.swapchainCount = 1;
  pi.pSwapchains = m_swap->handlePtr();
  pi.pImageIndices = &imageIndex;
  VkResult pr = vkQueuePresentKHR(m_ctx->queue(), &pi);
  if (pr == VK_ERROR_OUT_OF_DATE_KHR || pr == VK_SUBOPTIMAL_KHR)
    m_resize = true;
  else
    VK_CHECK(pr);
  rec.cpuMs = double(steadyNowNs() - t0) * 1e-6;
  m_profiler.add(std::move(rec));
  if (capture) {
    // The copy was recorded after the pass; wait for this frame only (a screenshot, or a recording, which runs at
    // what the read-back allows) and write the PNG or the video frame.
    VK_CHECK(vkWaitForFences(dev, 1, &fr.fence, VK_TRUE, 10'000'000'000ull));
    const VkExtent2D extent = m_swap->extent();
    auto px = m_shot->download<uint8_t>(size_t(extent.width) * extent.height * 4);
    bool bgra = m_swap->format() == VK_FORMAT_B8G8R8A8_UNORM || m_swap->format() == VK_FORMAT_B8G8R8A8_SRGB;
    for (size_t i = 0; i < px.size(); i += 4) {
      if (bgra) std::swap(px[i], px[i + 2]);
      px[i + 3] = 255;
    }
    if (m_recorder) {
      if (m_recorder->width() == extent.width && m_recorder->height() == extent.height) {
        runCaught([&] { m_recorder->add(px); });
      } else {
        m_status = "recording stopped: the window changed size (" + m_recorder->description() + ")";
        m_recorder.reset();
      }
    }
    if (!m_pendingScreenshot.empty()) {
      if (!stbi_write_png(m_pendingScreenshot.c_str(), int(extent.width), int(extent.height), 4, px.data(),
                          int(extent.width) * 4))
        throw Error(m_pendingScreenshot + ": cannot write PNG");
      m_lastScreenshot = std::move(px);
      m_pendingScreenshot.clear();
    }
  }
  ++m_frameIndex;
}

void Viewer::frameOnce() {
  glfwPollEvents();
  int w = 0, h = 0;
  glfwGetFramebufferSize(m_window, &w, &h);
  if (w == 0 || h == 0) {  // minimised: nothing to draw, nothing to wait for
    glfwWaitEventsTimeout(0.1);
    return;
  }
  if (m_resize || !m_swap || !m_swap->handle()) {
    vkDeviceWaitIdle(m_ctx->device());
    createSwapchain();
    m_resize = false;
    if (!m_swap->handle()) return;
  }
  m_uiStartNs = steadyNowNs();
  m_ui->newFrame();
  handleCamera();
  panels();
  overlay();
  m_ui->endFrame();
  m_uiCpuMs = double(steadyNowNs() - m_uiStartNs) * 1e-6;
  drawFrame();
}

// Scripted smoke test: renders, takes a screenshot, moves the left shoulder through the value its slider edits,
// renders again, and checks that the avatar moved (the two screenshots differ in enough pixels).
int Viewer::guiTest() {
  std::string dir = m_options.guiTest;
  if (!body()) return characterGuiTest();
  AvatarScene& avatar = *body();
  for (int i = 0; i < 4; ++i) frameOnce();
  m_pendingScreenshot = dir + "/gui_before.png";
  frameOnce();
  auto before = m_lastScreenshot;
  avatar.base().pose[16 * 3 + 2] = 1.3;  // left_shoulder z: the "Body" panel's slider value
  for (int i = 0; i < 3; ++i) frameOnce();
  m_pendingScreenshot = dir + "/gui_after.png";
  frameOnce();
  auto after = m_lastScreenshot;
  if (before.empty() || before.size() != after.size()) {
    std::fprintf(stderr, "gui test: screenshots missing\n");
    return 1;
  }
  const size_t changed = changedPixels(before, after);
  std::printf("gui test: %zu of %zu pixels changed after moving the left shoulder\n", changed, before.size() / 4);
  // The pose through a parameter file: saved, reset, loaded back.
  const std::vector<double> posed = avatar.base().pose;
  savePose(dir + "/gui_pose.npz");
  avatar.applyPose(posePreset(avatar.model(), "t-pose"));
  loadPose(dir + "/gui_pose.npz");
  double poseError = 0;
  for (size_t i = 0; i < posed.size(); ++i) poseError = std::max(poseError, std::abs(avatar.base().pose[i] - posed[i]));
  std::printf("gui test: pose saved and loaded back, largest difference %.3g rad\n", poseError);
  // Saved while the walk loop plays, the file holds the frame on screen, not the base pose under it.
  avatar.animate = true;
  avatar.update(0.7);
  const BodyParams walking = avatar.shown();
  savePose(dir + "/gui_walk.npz");
  loadPose(dir + "/gui_walk.npz");  // stops the loop: the base pose is now the saved frame
  double walkError = 0;
  for (size_t i = 0; i < walking.pose.size(); ++i)
    walkError = std::max(walkError, std::abs(avatar.base().pose[i] - walking.pose[i]));
  std::printf("gui test: a playing frame saved and loaded back, largest difference %.3g rad\n", walkError);
  poseError = std::max(poseError, walkError);
  // Camera presets: the front and top views of the same frame differ.
  frameAvatars(m_camera, *m_scene, CameraView::Front);
  m_pendingScreenshot = dir + "/gui_front.png";
  frameOnce();
  const auto front = m_lastScreenshot;
  frameAvatars(m_camera, *m_scene, CameraView::Top);
  m_pendingScreenshot = dir + "/gui_top.png";
  frameOnce();
  size_t viewsDiffer = 0;
  for (size_t i = 0; i < front.size() && m_lastScreenshot.size() == front.size(); i += 4)
    viewsDiffer += std::abs(int(front[i]) - int(m_lastScreenshot[i])) > 24;
  std::printf("gui test: front and top views differ at %zu pixels\n", viewsDiffer);
  frameAvatars(m_camera, *m_scene, CameraView::Current);
  // Switched live to the compute rasteriser, the same frame looks the same (edges may differ by a pixel). Without
  // the skeleton the compute-shaded frame has no render pass, so its UI comes as the cached layer: this compares
  // that composite with ImGui drawing straight into the hardware path's pass.
  m_draw.skeleton = false;
  frameOnce();
  m_pendingScreenshot = dir + "/gui_plain.png";
  frameOnce();
  after = m_lastScreenshot;
  m_computeRaster = true;
  frameOnce();
  m_pendingScreenshot = dir + "/gui_compute.png";
  frameOnce();
  auto compute = m_lastScreenshot;
  const size_t differ = changedPixels(compute, after);
  std::printf("gui test: compute rasteriser differs from the hardware one at %zu of %zu pixels%s\n", differ,
              after.size() / 4, m_computeRaster ? "" : (" (it failed: " + m_status + ")").c_str());
  // Keys between two frames, as GLFW delivers them: a tap of Space held long enough to repeat toggles once; two
  // taps toggle twice; F1 taps the overlay.
  const bool animating = m_scene->animate, overlayShown = m_showOverlay;
  for (int action : {GLFW_PRESS, GLFW_REPEAT, GLFW_REPEAT, GLFW_RELEASE}) onKey(GLFW_KEY_SPACE, action);
  onKey(GLFW_KEY_F1, GLFW_PRESS), onKey(GLFW_KEY_F1, GLFW_RELEASE);
  frameOnce();
  const bool tappedOnce = m_scene->animate != animating && m_showOverlay != overlayShown;
  for (int action : {GLFW_PRESS, GLFW_RELEASE, GLFW_PRESS, GLFW_RELEASE}) onKey(GLFW_KEY_SPACE, action);
  onKey(GLFW_KEY_F1, GLFW_PRESS);
  frameOnce();
  const bool keys = tappedOnce && m_scene->animate != animating && m_showOverlay == overlayShown;
  std::printf("gui test: keys between frames %s\n", keys ? "toggle once per tap" : "were lost or repeated");
  m_scene->animate = animating;
  // A long message moves no control: the backend selector sits where it sat before the message.
  const float selectorBefore = m_layoutProbe;
  m_status = "an error message long enough to wrap several times in the panel's width: " + std::string(400, 'x') +
             "\nand a second line";
  frameOnce();
  const bool layoutStill = selectorBefore > 0 && m_layoutProbe == selectorBefore;
  std::printf("gui test: a long message %s the controls\n", layoutStill ? "does not move" : "moves");
  std::string json = dir + "/gui_profile.json";
  m_profiler.writeChromeTrace(json);
  bool moved = changed > before.size() / 4 / 200;  // at least 0.5% of the image
  bool agree = m_computeRaster && compute.size() == after.size() && differ < after.size() / 4 / 100;  // under 1%
  const bool poseBack = poseError<1e-9, viewsChange = viewsDiffer> front.size() / 4 / 100;
  return moved && agree && poseBack && viewsChange && keys && layoutStill ? 0 : 1;
}

// The glTF character's smoke test: its clip's first frame, then a quarter second into the clip (each member at its
// own phase) must look different; then the compute rasteriser draws that frame as the hardware does.
int Viewer::characterGuiTest() {
  const std::string dir = m_options.guiTest;
  m_draw.skeleton = false;
  m_showOverlay = false;  // its numbers change from frame to frame
  m_scene->animate = true;
  m_speed = 0;  // the clip stands still but at m_animTime
  auto shoot = [&](const std::string& name) {
    frameOnce();
    m_pendingScreenshot = dir + "/" + name;
    frameOnce();
    return m_lastScreenshot;
  };
  const auto start = shoot("gltf_start.png");
  m_animTime = 0.25;
  const auto later = shoot("gltf_later.png");
  m_computeRaster = true;
  const auto compute = shoot("gltf_compute.png");
  const size_t pixels = start.size() / 4, moved = changedPixels(start, later),
               rasterDiffer = changedPixels(later, compute);
  std::printf(
      "gui test (glTF): %zu of %zu pixels changed a quarter second into the clip; the compute rasteriser "
      "differs from the hardware one at %zu%s\n",
      moved, pixels, rasterDiffer, m_computeRaster ? "" : (" (it failed: " + m_status + ")").c_str());
  const bool ok = !start.empty() && moved > pixels / 200 && m_computeRaster && compute.size() == later.size() &&
                  rasterDiffer < pixels / 100;
  return ok ? 0 : 1;
}

void Viewer::cleanup() {
  if (!m_ctx) return;
  vkDeviceWaitIdle(m_ctx->device());
  m_ui.reset();
  for (auto& f : m_frames) {
    if (f.pool) vkDestroyCommandPool(m_ctx->device(), f.pool, nullptr);
    if (f.fence) vkDestroyFence(m_ctx->device(), f.fence, nullptr);
    if (f.acquired) vkDestroySemaphore(m_ctx->device(), f.acquired, nullptr);
    if (f.rendered) vkDestroySemaphore(m_ctx->device(), f.rendered, nullptr);
  }
  m_shot.reset();
  m_timer.reset();
  m_swap.reset();
  m_renderer.reset();
  m_scene.reset();
  if (m_surface) vkDestroySurfaceKHR(m_ctx->instance(), m_surface, nullptr);
  m_ctx.reset();
  if (m_window) glfwDestroyWindow(m_window);
  glfwTerminate();
}

int Viewer::run() {
  int status = 0;
  try {
    createWindow();
    loadModel(m_options.model.empty() ? defaultModelPath() : m_options.model);
    m_avatars = m_options.avatars;
    m_scene->setAvatars(m_avatars);
    m_draw.avatars = m_avatars;
    m_draw.wireframe = m_options.wireframe;
    m_draw.skeleton = m_options.skeleton;
    m_computeRaster = m_options.raster == "compute";
    std::string backend = m_options.backend;
    setBackend(chooseBackend(backend));
    createSwapchain();
    const VkExtent2D extent = m_swap->extent();
    const std::array<float, 16> viewProj = m_camera.viewProj(float(extent.width) / float(extent.height));
    runCaught([&] { warmUp(*m_ctx, *m_scene, m_computeRaster ? &viewProj : nullptr, extent); });
    m_timer = std::make_unique<vk::GpuTimer>(*m_ctx, kFramesInFlight, 16);
    for (auto& f : m_frames) {
      VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
      pci.queueFamilyIndex = m_ctx->queueFamily();
      VK_CHECK(vkCreateCommandPool(m_ctx->device(), &pci, nullptr, &f.pool));
      VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      ai.commandPool = f.pool;
      ai.commandBufferCount = 1;
      VK_CHECK(vkAllocateCommandBuffers(m_ctx->device(), &ai, &f.cmd));
      VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
      VK_CHECK(vkCreateFence(m_ctx->device(), &fi, nullptr, &f.fence));
      VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
      VK_CHECK(vkCreateSemaphore(m_ctx->device(), &si, nullptr, &f.acquired));
      VK_CHECK(vkCreateSemaphore(m_ctx->device(), &si, nullptr, &f.rendered));
    }
    m_ui = std::make_unique<ImGuiLayer>(*m_ctx, m_swap->format(), m_window);
    if (!m_options.guiTest.empty()) {
      status = guiTest();
    } else {
      if (!m_options.profile.empty()) m_profiler.streamTrace(m_options.profile);
      while (!glfwWindowShouldClose(m_window)) frameOnce();
      m_profiler.finishTrace();
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return status;
}

}  // namespace

int runWindow(const ViewerOptions& options) { return Viewer(options).run(); }

}  // namespace armature::app
