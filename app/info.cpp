#include "app/commands.h"

#include <cstdio>

#include "armature/cuda/runtime.h"
#include "armature/vk/context.h"
#ifdef ARMATURE_HAS_INTEROP
#include "armature/interop/interop.h"
#endif

namespace armature::app {

namespace {
const char* yesNo(bool b) { return b ? "yes" : "no"; }

std::string uuidString(const uint8_t* u) {
  char s[40];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
                u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return s;
}
}  // namespace

int runInfo() {
  int status = 0;
  std::printf("armature %s\n\n", ARMATURE_VERSION);
  std::printf("Vulkan\n");
  try {
    vk::Context ctx;
    std::printf("  instance version  %s\n", vk::versionString(ctx.instanceVersion()).c_str());
    for (const auto& d : ctx.allDevices()) {
      bool chosen = d.index == ctx.info().index;
      std::printf("  [%u]%s %s\n", d.index, chosen ? " (chosen)" : "", d.name.c_str());
      std::printf("      type %s, API %s, driver %s %s\n", vk::deviceTypeName(d.type),
                  vk::versionString(d.apiVersion).c_str(), d.driverName.c_str(), d.driverInfo.c_str());
      std::printf("      subgroup %u (shuffles %s), 64-bit atomics %s, timeline semaphores %s, push descriptors %s\n",
                  d.subgroupSize, yesNo(d.subgroupShuffle), yesNo(d.int64Atomics), yesNo(d.timelineSemaphore),
                  yesNo(d.pushDescriptor));
      std::printf("      external memory fd %s, external semaphore fd %s, timestamps %u bits @ %.3g ns\n",
                  yesNo(d.externalMemoryFd), yesNo(d.externalSemaphoreFd), d.timestampValidBits, d.timestampPeriodNs);
      std::printf("      device-local memory %.1f GiB, shared memory %u KiB, UUID %s\n",
                  d.deviceLocalBytes / 1073741824.0, d.maxComputeSharedMemory / 1024, uuidString(d.deviceUuid).c_str());
    }
    std::printf("  chosen device     %s%s\n", ctx.info().name.c_str(),
                ctx.info().isCpu() ? " (a CPU device: correct but slow)" : "");
    std::printf("  paths the ops take there:\n");
    const std::string paths = vk::describeContext(ctx);
    for (size_t start = paths.find('\n') + 1, end; start < paths.size(); start = end + 1) {
      end = paths.find('\n', start);
      std::printf("    %s\n", paths.substr(start, end - start).c_str());
    }
#ifdef ARMATURE_HAS_INTEROP
    std::printf("  CUDA interop      %s\n", interop::describe(interop::probe(ctx)).c_str());
#else
    std::printf("  CUDA interop      not built (needs ARMATURE_CUDA=ON)\n");
#endif
  } catch (const std::exception& e) {
    std::printf("  unavailable: %s\n", e.what());
    status = 1;
  }

  std::printf("\nCUDA\n");
#if !ARMATURE_HAS_CUDA
  std::printf("  not built (configure with ARMATURE_CUDA=ON and nvcc present)\n");
#else
  {
    auto rt = cuda::queryRuntime();
    auto ver = [](int v) {
      return v ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) : std::string("none");
    };
    std::printf("  driver %s, runtime %s\n", ver(rt.driverVersion).c_str(), ver(rt.runtimeVersion).c_str());
    if (!rt.error.empty()) std::printf("  no devices: %s\n", rt.error.c_str());
    for (const auto& d : rt.devices)
      std::printf("  [%d] %s, compute %d.%d, %d SMs, %.1f GiB, UUID %s\n", d.index, d.name.c_str(), d.computeMajor,
                  d.computeMinor, d.multiprocessors, d.totalBytes / 1073741824.0, uuidString(d.uuid).c_str());
  }
#endif
  return status;
}

}  // namespace armature::app
