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

// Destroys the shared context when the tests end, before static destruction: NVIDIA's driver crashes if the
// device is destroyed after its own exit handlers have run.
struct ReleaseContext : ::testing::Environment {
  void TearDown() override { ctx.reset(); }
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

}  // namespace armature::test
