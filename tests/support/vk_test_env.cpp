#include "support/vk_test_env.h"

#include <cstdlib>
#include <map>
#include <memory>

namespace armature::test {

bool vulkanRequired() {
  const char* v = std::getenv("ARMATURE_REQUIRE_VULKAN");
  return v && *v && *v != '0';
}

namespace {
std::unique_ptr<vk::Context> ctx;
std::string error;
bool tried = false;
std::unique_ptr<Device> vulkanDevice, cudaOnlyDevice;
// Vulkan-only devices on contexts that hide features, by the mask's bits.
std::map<unsigned, std::pair<std::unique_ptr<vk::Context>, std::unique_ptr<Device>>> lesserDevices;

vk::ContextOptions validatedOptions() {
  vk::ContextOptions options;
  options.validation = true;
  options.onMessage = [](vk::MessageSeverity, const char* message) {
    ADD_FAILURE() << "Vulkan validation: " << message;
  };
  return options;
}

// Destroys the shared context (and the devices on it) when the tests end, before static destruction: NVIDIA's
// driver crashes if the device is destroyed after its own exit handlers have run.
struct ReleaseContext : ::testing::Environment {
  void TearDown() override {
    lesserDevices.clear();
    vulkanDevice.reset();
    cudaOnlyDevice.reset();
    ctx.reset();
  }
};
[[maybe_unused]] ::testing::Environment* const kRelease = ::testing::AddGlobalTestEnvironment(new ReleaseContext);
}  // namespace

vk::Context* vulkanContext(std::string* why) {
  if (!tried) {
    tried = true;
    try {
      ctx = std::make_unique<vk::Context>(validatedOptions());
      std::printf("[vulkan] testing on '%s' (%s)\n", ctx->info().name.c_str(), vk::deviceTypeName(ctx->info().type));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!ctx && why) *why = error;
  return ctx.get();
}

Device* testDevice(Backend backend, std::string* why) {
  if (vk::Context* vulkan = vulkanContext(why)) {
    if (!vulkanDevice) vulkanDevice = std::make_unique<Device>(vulkan);
    if (vulkanDevice->has(backend)) return vulkanDevice.get();
  }
  if (backend == Backend::Vulkan) return nullptr;
  // CUDA on a GPU that the Vulkan device is not (lavapipe beside a CUDA device, or no Vulkan at all).
  if (!cudaOnlyDevice) cudaOnlyDevice = std::make_unique<Device>(nullptr);
  if (auto reason = cudaOnlyDevice->unavailable(backend)) {
    if (why) *why = *reason;
    return nullptr;
  }
  return cudaOnlyDevice.get();
}

Device& vulkanDeviceHiding(const vk::ContextOptions::Hidden& hide) {
  const unsigned key = unsigned(hide.int64Atomics) | unsigned(hide.subgroupSums) << 1 | unsigned(hide.float64) << 2;
  auto& [context, device] = lesserDevices[key];
  if (!device) {
    vk::ContextOptions options = validatedOptions();
    options.hide = hide;
    context = std::make_unique<vk::Context>(options);
    device = std::make_unique<Device>(context.get(), Sharing::VulkanOnly);
  }
  return *device;
}

std::vector<BackendPath> OnBackend::paths(const vk::ContextOptions::Hidden& vary,
                                          const vk::ContextOptions::Hidden& always) {
  const bool none = !always.int64Atomics && !always.subgroupSums && !always.float64;
  if (backend() != Backend::Vulkan) return {{"", none ? m_device : nullptr}};
  const vk::PhysicalDeviceInfo& info = m_device->vulkan()->info();
  // Only features the device has can be hidden; each subset of `vary` once.
  const bool has[3] = {info.int64Atomics, info.subgroupSums, info.float64};
  const bool varies[3] = {vary.int64Atomics, vary.subgroupSums, vary.float64};
  const bool fixed[3] = {always.int64Atomics, always.subgroupSums, always.float64};
  const char* names[3] = {", without 64-bit atomics", ", without subgroup sums", ", without doubles"};
  std::vector<BackendPath> out;
  for (unsigned subset = 0; subset < 8; ++subset) {
    bool hide[3], valid = true;
    std::string name;
    for (int f = 0; f < 3; ++f) {
      const bool chosen = subset >> f & 1;
      if (chosen && !(varies[f] && has[f])) valid = false;
      hide[f] = (chosen || fixed[f]) && has[f];
      if (hide[f]) name += names[f];
    }
    if (!valid) continue;
    const bool any = hide[0] || hide[1] || hide[2];
    out.push_back({name, any ? &vulkanDeviceHiding({hide[0], hide[1], hide[2]}) : m_device});
  }
  return out;
}

void OnBackend::SetUp() {
  std::string why;
  m_device = testDevice(GetParam(), &why);
  if (!m_device && GetParam() == Backend::Vulkan && vulkanRequired())
    FAIL() << "Vulkan required (ARMATURE_REQUIRE_VULKAN): " << why;
  if (!m_device) GTEST_SKIP() << backendName(GetParam()) << ": " << why;
}

void OnBackend::expectRejected(const std::function<void(const Exec&)>& work, const std::string& message) {
  try {
    run(work);
    ADD_FAILURE() << "no error; expected '" << message << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

std::string backendParamName(const ::testing::TestParamInfo<Backend>& info) { return backendName(info.param); }

}  // namespace armature::test
