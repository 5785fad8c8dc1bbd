#include "support/vk_test_env.h"

#include <cstdlib>
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

// Destroys the shared context (and the devices on it) when the tests end, before static destruction: NVIDIA's
// driver crashes if the device is destroyed after its own exit handlers have run.
struct ReleaseContext : ::testing::Environment {
  void TearDown() override {
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
      vk::ContextOptions options;
      options.validation = true;
      options.onMessage = [](vk::MessageSeverity, const char* message) {
        ADD_FAILURE() << "Vulkan validation: " << message;
      };
      ctx = std::make_unique<vk::Context>(options);
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
