// A joint forest analysed on the GPU: the passes of shaders/shared/joint_propagation_setup.h (shaders/joint_propagation_setup.comp,
// cuda/src/joint_setup.cu), planned and read back.
#include "ops/joint_setup.h"

#include <bit>

#include "armature/error.h"
#include "armature/ops/joint_propagation.h"
#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "buckets.h"
#include "dispatch.h"

namespace armature {

namespace {

uint32_t ceilLog2(uint32_t n) { return n <= 1 ? 0 : uint32_t(std::bit_width(n - 1)); }

}  // namespace

void DeviceJointForest::analyseOnDevice(Device& device, Backend setup, const std::vector<int32_t>& parents) {
  const char* op = "DeviceJointForest";
  const uint32_t N = m_joints, sortSize = std::bit_ceil(N);
  ARM_CHECK(N <= (1u << 26), "%s: %u joints, at most 2^26 for the analysis on the GPU", op, N);
  device.require(setup);
  const JointsSetupLayout l = jointsSetupLayout(N, sortSize);
  const JointsSetupTables t = jointsSetupTables(N);
  m_tables = device.allocate(ElementType::UInt32, t.words);
  m_tables.upload(parents.data(), parents.size() * sizeof(int32_t), t.parents * 4);
  DeviceBuffer words = device.allocate(ElementType::UInt32, l.words);
  words.fill(0);  // the counts, the atomics' starting values, the status
  device.run(setup, [&](const Exec& exec) {
    uint32_t half = 0;  // the jump chains' current half
    auto pass = [&](uint32_t mode, uint32_t items, uint32_t block = 0, uint32_t stride = 0) {
      const JointsSetupPass p{{mode, N, sortSize, items, block, stride, half, 0}, words, m_tables};
      dispatch(op, exec, p, &vk::jointsSetupPass, ARM_CUDA_BACKEND(jointsSetupPass));
    };
    auto sort = [&] {
      for (uint32_t block = 2; block <= sortSize; block <<= 1)
        for (uint32_t stride = block / 2; stride > 0; stride >>= 1)
          pass(JOINTS_SETUP_BITONIC, sortSize / 2, block, stride);
    };
    auto jump = [&](uint32_t items, uint32_t rounds) {
      for (uint32_t r = 0; r < rounds; ++r, half ^= 1u) pass(JOINTS_SETUP_JUMP, items);
    };
    auto scan = [&](uint32_t buckets, uint32_t counts, uint32_t starts, uint32_t sums) {
      scanBuckets(op, exec, BucketLists{words, buckets, counts, starts, 0, sums});
    };
    pass(JOINTS_SETUP_KEYS, sortSize);
    sort();
    scan(N + 1, l.childCounts, l.childStarts, l.childSums);
    pass(JOINTS_SETUP_EULER, N);
    jump(2 * N, ceilLog2(2 * N) + 1);  // a list of 2N events: 2^rounds > 2N
    pass(JOINTS_SETUP_SUBTREE, N);
    pass(JOINTS_SETUP_HEAVY, N);
    pass(JOINTS_SETUP_TOPS, N);
    half = 0;
    jump(N, ceilLog2(N) + 1);
    pass(JOINTS_SETUP_GENERATIONS, N);
    half ^= 1u;
    jump(N, ceilLog2(JOINTS_SETUP_MAX_GENERATIONS) + 1);
    pass(JOINTS_SETUP_PATH_KEYS, sortSize);
    sort();
    pass(JOINTS_SETUP_PATHS, N);
    scan(N, l.pathCounts, l.pathStarts, l.pathSums);
    pass(JOINTS_SETUP_ORDER, N);
    scan(N, l.lightCounts, l.lightStarts, l.lightSums);
    pass(JOINTS_SETUP_LIGHT, N + 1);
  });
  std::vector<uint32_t> status(JOINTS_SETUP_STATUS_WORDS);
  words.download(status.data(), status.size() * 4, size_t(l.status) * 4);
  if (status[JOINTS_SETUP_STATUS_CYCLE]) {
    JointForest named(parents);  // throws, naming the cycle
    throw Error(std::string(op) + ": the GPU found a cycle that the host did not");
  }
  m_widestFanOut = status[JOINTS_SETUP_STATUS_FAN_OUT];
  for (uint32_t g = 0; g < JOINTS_SETUP_MAX_GENERATIONS && status[JOINTS_SETUP_STATUS_PATHS + g]; ++g) {
    m_paths += status[JOINTS_SETUP_STATUS_PATHS + g];
    m_generationStart.push_back(m_generationStart.back() + status[JOINTS_SETUP_STATUS_JOINTS + g]);
  }
  ARM_CHECK(m_generationStart.back() == N, "%s: the GPU's analysis placed %u of %u joints", op,
            m_generationStart.back(), N);
}

void vk::jointsSetupPass(const Exec& exec, const JointsSetupPass& p) {
  VkCommandBuffer cmd = exec.commandBuffer();
  computeBarrier(cmd);
  dispatch(cmd, exec.context().program(shaders::joint_propagation_setup, JOINTS_SETUP_BINDINGS, sizeof p.push),
           groupCount(p.push.items, JOINTS_SETUP_THREADS), {p.words.vulkan(), p.tables.vulkan()}, p.push);
}

}  // namespace armature
