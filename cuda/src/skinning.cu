// Body skinning on CUDA: the host side (tables on the device, launch choices, streams, the L2 policy). Forward, up
// to 8 items: one kernel (forwardFewKernel) in which a block per item runs the joint chain and publishes its
// transforms through device-side flags, while the other blocks build the items' pose features themselves, stream
// the blend matrix (pose correctives and shape/expression blends in one product) and skin their own vertex groups.
// More items: (1) the chain, one block per item, beside (2) a GEMM for the product (register-tiled fp32, or tensor
// cores at fp32 accuracy beyond 64 items), then (3) one thread per vertex skins with the sparse weights. Backward
// mirrors it with fixed-order reductions. Kernels: skinning_forward.h, skinning_backward.h, gemm.h.
#include "armature/ops/skinning.h"
#include "check.h"
#include "gemm.h"
#include "ops/skinning_backend.h"
#include "skinning_backward.h"
#include "skinning_forward.h"

#include <algorithm>
#include <vector>

namespace armature::cuda {

namespace {
unsigned blocks(size_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }
}  // namespace

// A CUDA event without timing (fork/join between the caller's stream and the chain's).
struct SyncEvent {
  cudaEvent_t handle = nullptr;
  SyncEvent() { CUDA_CHECK(cudaEventCreateWithFlags(&handle, cudaEventDisableTiming)); }
  ~SyncEvent() { cudaEventDestroy(handle); }
  SyncEvent(const SyncEvent&) = delete;
  SyncEvent& operator=(const SyncEvent&) = delete;
};

// A fused forward kernel's launch shape: threads, dynamic shared memory, blocks resident on the whole GPU.
struct FusedLaunch {
  unsigned threads = 0;
  size_t shared = 0;
  int capacity = 0;
  template <typename Kernel>
  static FusedLaunch of(Kernel kernel, unsigned threads, size_t shared, int smCount, int sharedLimit) {
    if (shared > size_t(sharedLimit)) return {};  // unusable (capacity 0): forward() takes another kernel
    if (shared > 48 * 1024)
      CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    int perSm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, int(threads), shared));
    return {threads, shared, perSm * smCount};
  }
};

struct Skinning::Impl {
  Stream chainStream;  // the joint chain runs here, beside the blend product (setChainOverlap)
  bool chainOverlap = true;
  SyncEvent chainFork, chainJoin;
  size_t tableBytes = 0;
  Dims dims{};
  uint32_t maxBatch;
  DeviceMemory vTemplate, blend, jointTemplate, jointDirs, weightStart, weightJoint, weightValue, jointVertex,
      jointWeight, parents, chunkRange, jointFirstChunk, groupWeights;
  DeviceMemory features, transforms, saved, vPosed, chunkParts, chainGrads, gradVPosed, gradFeatures, splitParts;
  static constexpr int kSplitRows = 8192;  // split-K partial sums: slices × items ≤ this
  int smCount = 132;
  int blendStride = 0;  // row stride of the blend matrix and v_posed: vertex groups (posedColumn), 128-column tiles
  // The fused forward: its kernels' launch shapes; per item count (1 … kFusedItems), the chain's ready flags and
  // the ticket counter of its launches with the chain beside the product (takeRole).
  static constexpr int kFusedItems = 8;
  FusedLaunch few4, few8;
  DeviceMemory chainReady, tickets;
  SkinningInputs lastInputs{};  // backward reads the pose the forward used
  uint32_t lastBatch = 0;
  // L2 residency (setL2Residency): as much of the blend matrix as the device sets aside for persisting lines is
  // marked persisting on the launches that stream it. For more than kSpreadItems items the window is the matrix's
  // leading part (the large GEMMs' tiles stream it in order). For up to kSpreadItems the persisting lines are spread
  // over the whole matrix (a fraction of every group's lines), so that all of the blocks streaming it
  // (the fused forward's, the 32-row GEMM's column tiles), not half of them, draw on DRAM at once and none idles
  // early; for large batches the leading part serves better. A call's forward and backward use the same window:
  // alternating windows would re-mark the lines on every launch.
  static constexpr int kSpreadItems = 64;
  cudaAccessPolicyWindow residency{}, spreadResidency{};
  bool residencyOn = false;
  bool tensorCapable = false, tensorCores = false;  // setTensorCores: the large blend products on tensor cores
  // A kernel that reads the blend matrix for a call of `items` items, launched with the residency window when it is
  // on (the same window for a call's forward and backward).
  template <typename... Params, typename... Args>
  void launchBlend(int items, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t s,
                   Args... args) {
    cudaLaunchAttribute window{};
    window.id = cudaLaunchAttributeAccessPolicyWindow;
    window.val.accessPolicyWindow = items <= kSpreadItems ? spreadResidency : residency;
    cudaLaunchConfig_t config{grid, block, shared, s, &window, residencyOn ? 1u : 0u};
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
  }
  Tables tables() const {
    return {vTemplate.as<float>(),          blend.as<float>(),          jointTemplate.as<float>(),
            jointDirs.as<float>(),          weightValue.as<float>(),    jointWeight.as<float>(),
            weightStart.as<uint32_t>(),     weightJoint.as<uint32_t>(), jointVertex.as<uint32_t>(),
            parents.as<int32_t>(),          chunkRange.as<uint32_t>(),  jointFirstChunk.as<uint32_t>(),
            groupWeights.as<GroupWeights>()};
  }
  // out (M × blendStride) = A (M × F) · blend + vTemplate, for more items than the fused forward serves (> 8).
  void blendForward(int M, const float* A, float* out, cudaStream_t s) {
    const int N = blendStride, K = dims.F();
    if (M <= 64) {  // (the tensor-core kernel is issue-bound and slower here)
      dim3 grid(blocks(size_t(M), kMidRows), blocks(size_t(N), kMidCols));  // row tiles fastest
      launchBlend(M, gemmMidKernel<false, BlendLayout>, grid, kMidThreads, 0, s, M, N, K, A, K, blend.as<float>(), out,
                  N, vTemplate.as<float>(), K);
    } else if (tensorCores) {
      dim3 grid(blocks(size_t(M), kTcRows), blocks(size_t(N), kTcCols));  // row tiles fastest
      launchBlend(M, gemmTensorKernel<false, BlendLayout>, grid, kTcThreads, tensorSharedBytes(), s, M, N, K, A, K,
                  blend.as<float>(), out, N, vTemplate.as<float>(), K);
    } else {
      dim3 grid(blocks(size_t(M), kTile), blocks(size_t(N), kTile));  // row tiles fastest
      launchBlend(M, gemmKernel<false, BlendLayout>, grid, 256, 0, s, M, N, K, A, K, blend.as<float>(), out, N,
                  vTemplate.as<float>(), K);
    }
    CUDA_CHECK_LAUNCH();
  }
  // The fused forward for ≤ 8 items (forwardFewKernel): one launch, or (chain overlap off) the chain blocks then
  // the product blocks.
  template <typename Kernel>
  void fusedForward(Kernel kernel, const FusedLaunch& launch, Dims d, SkinningInputs in, ForwardOut o, cudaStream_t s) {
    Tables t = tables();
    const int ldb = blendStride, groups = ldb / kGroupColumns;
    const int productBlocks = std::max(1, std::min(groups, launch.capacity - d.B));  // the rest stay resident
    auto run = [&](int chainBlocks, int grid) {
      launchBlend(d.B, kernel, unsigned(grid), launch.threads, launch.shared, s, d, t, in, o, chainBlocks, ldb);
      CUDA_CHECK_LAUNCH();
    };
    if (chainOverlap) {  // the same grid for every launch of d.B items: one ticket counter and set of flags each
      o.chainReady = chainReady.as<unsigned>() + (d.B - 1) * kFusedItems;
      o.tickets = tickets.as<unsigned>() + (d.B - 1);
      run(d.B, d.B + productBlocks);
    } else {  // the stream orders the two launches: no flags, roles from blockIdx
      run(d.B, d.B);
      run(0, productBlocks);
    }
  }
  // out (M × F) = G (M × blendStride, zero padding) · blendᵀ
  void blendBackward(int M, const float* G, float* out, cudaStream_t s) {
    int N = dims.F(), K = blendStride;
    if (M <= 4) {
      launchBlend(M, skinnyGemmTransKernel<4>, blocks(size_t(N), 2), 256, 0, s, M, N, K, G, blendStride,
                  blend.as<float>(), out);
    } else {
      // Few output tiles and a long K (V·3): split K so the whole GPU works (a few blocks per SM), then add the
      // slices in order.
      // Tensor cores from 1,024 items: below that the split-K slices of 64-row tiles are too few to gain.
      const bool mid = M <= 64, tensor = M >= 1024 && tensorCores;
      const int rowsPerTile = mid      ? kMidRows
                              : tensor ? kTcRows
                                       : kTile,
                colsPerTile = mid      ? kMidCols
                              : tensor ? kTcCols
                                       : kTile;
      const int step = mid ? kMidK : tensor ? kTcK : kTileK;
      dim3 grid(blocks(size_t(N), colsPerTile), blocks(size_t(M), rowsPerTile), 1);
      int tiles = int(grid.x * grid.y), Kp = (K + 3) / 4 * 4, perSm = mid ? 4 : 2;
      int slices = std::max(1, std::min({(perSm * smCount + tiles - 1) / tiles, kSplitRows / M, Kp / (4 * step)}));
      int kChunk = ((Kp + slices - 1) / slices + step - 1) / step * step;
      slices = (Kp + kChunk - 1) / kChunk;
      grid.z = unsigned(slices);
      float* target = slices > 1 ? splitParts.as<float>() : out;
      if (mid)
        launchBlend(M, gemmMidKernel<true, BlendLayout>, grid, kMidThreads, 0, s, M, N, K, G, blendStride,
                    blend.as<float>(), target, N, nullptr, kChunk);
      else if (tensor)
        launchBlend(M, gemmTensorKernel<true, BlendLayout>, grid, kTcThreads, tensorSharedBytes(), s, M, N, K, G,
                    blendStride, blend.as<float>(), target, N, nullptr, kChunk);
      else
        launchBlend(M, gemmKernel<true, BlendLayout>, grid, 256, 0, s, M, N, K, G, blendStride, blend.as<float>(),
                    target, N, nullptr, kChunk);
      if (slices > 1) {
        CUDA_CHECK_LAUNCH();
        size_t count = size_t(M) * N;
        sumSlicesKernel<<<blocks(count, 256), 256, 0, s>>>(slices, count, splitParts.as<float>(), out);
      }
    }
    CUDA_CHECK_LAUNCH();
  }
};

Skinning::Skinning(const SkinningTables& h, uint32_t maxBatch, bool l2Residency) : m(std::make_unique<Impl>()) {
  ARM_CHECK(maxBatch >= 1, "cuda::Skinning: maxBatch must be >= 1");
  m->tableBytes = h.deviceBytes();
  m->dims = {0, int(h.vertexCount), int(h.jointCount), int(h.featureCount), int(h.coefCount()), int(h.shapeCount)};
  m->maxBatch = maxBatch;
  // Columns in vertex groups (posedColumn), rows a whole number of 128-column tiles.
  const size_t groups = (h.vertexCount + kGroupVertices - 1) / kGroupVertices;
  m->blendStride = int((groups + 1) / 2 * 2 * kGroupColumns);
  m->dims.TS = int((h.jointCount * 12 + 31) / 32 * 32);
  m->groupWeights = DeviceMemory::from(buildGroupWeights(h, m->blendStride / kGroupColumns));
  m->tableBytes += m->groupWeights.bytes();
  size_t B = maxBatch, J = h.jointCount, F = h.featureCount + h.coefCount(), stride = size_t(m->blendStride);
  size_t chunksPerItem = h.jointVertex.size() / kChunkEntries + J + size_t(h.vertexCount) / kTranslChunkVertices + 1;
  size_t need = h.deviceBytes() + F * stride * 4 +
                B * (F * 2 + J * (12 + kSaved) + m->dims.TS + stride * 2 + chunksPerItem * 12 + 2) * 4 +
                size_t(Impl::kSplitRows) * F * 4;
  size_t freeBytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&freeBytes, &total));
  ARM_CHECK(need < freeBytes, "cuda::Skinning: the model and a batch of %u need %.1f MiB, the device has %.1f MiB free",
            maxBatch, need / 1048576.0, freeBytes / 1048576.0);
  {
    auto toGroups = [&](const float* src, float* dst) {  // one row of V·3 columns into the grouped layout
      for (uint32_t v = 0; v < h.vertexCount; ++v)
        for (int c = 0; c < 3; ++c) dst[posedColumn(int(v)) + c] = src[v * 3 + c];
    };
    std::vector<float> bias(stride, 0.f), padded(F * stride, 0.f);
    toGroups(h.vTemplate.data(), bias.data());
    std::vector<float> row(stride);
    for (size_t r = 0; r < F; ++r) {
      std::fill(row.begin(), row.end(), 0.f);
      toGroups(h.blendMatrix.data() + r * h.vertexCount * 3, row.data());
      for (size_t c = 0; c < stride; ++c) padded[BlendLayout::index(int(r), int(c), int(F))] = row[c];
    }
    m->vTemplate = DeviceMemory::from(bias);
    m->blend = DeviceMemory::from(padded);
  }
  m->jointTemplate = DeviceMemory::from(h.jointTemplate);
  m->jointDirs = DeviceMemory::from(h.jointDirs.empty() ? std::vector<float>{0} : h.jointDirs);
  m->weightStart = DeviceMemory::from(h.weightStart);
  m->weightJoint = DeviceMemory::from(h.weightJoint);
  m->weightValue = DeviceMemory::from(h.weightValue);
  m->jointVertex = DeviceMemory::from(h.jointVertex);
  m->jointWeight = DeviceMemory::from(h.jointWeight);
  m->parents = DeviceMemory::from(h.parents);
  {  // each joint's CSC entries in chunks of ≤ kChunkEntries (the backward's per-joint sums), then the translation's
    std::vector<uint32_t> range, first{0};
    for (uint32_t j = 0; j < h.jointCount; ++j) {
      for (uint32_t e = h.jointStart[j]; e < h.jointStart[j + 1]; e += kChunkEntries)
        range.push_back(e), range.push_back(std::min<uint32_t>(h.jointStart[j + 1], e + kChunkEntries));
      first.push_back(uint32_t(range.size() / 2));
    }
    m->dims.chunks = int(range.size() / 2);
    m->dims.translChunks = int((h.vertexCount + kTranslChunkVertices - 1) / kTranslChunkVertices);
    m->chunkRange = DeviceMemory::from(range.empty() ? std::vector<uint32_t>{0, 0} : range);
    m->jointFirstChunk = DeviceMemory::from(first);
  }
  m->features = DeviceMemory(B * F * 4);
  m->transforms = DeviceMemory(B * size_t(m->dims.TS) * 4);
  m->saved = DeviceMemory(B * J * kSaved * 4);
  m->vPosed = DeviceMemory(B * size_t(m->blendStride) * 4);  // rows padded like the blend matrix's
  m->chainGrads = DeviceMemory(B * J * 12 * 4);
  m->chunkParts = DeviceMemory(B * size_t(m->dims.chunks + m->dims.translChunks) * 12 * 4);
  // dL/dv_posed rows padded like the blend matrix's (16-byte loads in the transposed product); padding zero.
  m->gradVPosed = DeviceMemory(B * size_t(m->blendStride) * 4);
  CUDA_CHECK(cudaMemset(m->gradVPosed.data(), 0, B * size_t(m->blendStride) * 4));
  m->gradFeatures = DeviceMemory(B * F * 4);
  // Split-K partial sums for the backward's blend product: enough slices to fill the GPU at any batch.
  m->splitParts = DeviceMemory(size_t(Impl::kSplitRows) * F * 4);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&m->smCount, cudaDevAttrMultiProcessorCount, device));
  int sharedLimit = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sharedLimit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  m->few4 = FusedLaunch::of(forwardFewKernel<4>, 256, fewSharedBytes<4>(int(F)), m->smCount, sharedLimit);
  m->few8 = FusedLaunch::of(forwardFewKernel<8>, 256, fewSharedBytes<8>(int(F)), m->smCount, sharedLimit);
  int major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  cudaFuncAttributes tensorKernel{};  // compiled for ≥ sm_80 too (a build for older GPUs JIT-run here traps instead)
  CUDA_CHECK(cudaFuncGetAttributes(&tensorKernel, gemmTensorKernel<false, BlendLayout>));
  m->tensorCapable =
      major >= 8 && tensorKernel.ptxVersion >= 80 && size_t(sharedLimit) >= tensorSharedBytes();  // mma.sync TF32
  if (m->tensorCapable) {
    CUDA_CHECK(cudaFuncSetAttribute(gemmTensorKernel<false, BlendLayout>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(tensorSharedBytes())));
    CUDA_CHECK(cudaFuncSetAttribute(gemmTensorKernel<true, BlendLayout>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(tensorSharedBytes())));
  }
  setTensorCores(true);
  m->chainReady = DeviceMemory(Impl::kFusedItems * Impl::kFusedItems * sizeof(unsigned));
  CUDA_CHECK(cudaMemset(m->chainReady.data(), 0, m->chainReady.bytes()));
  m->tickets = DeviceMemory(Impl::kFusedItems * sizeof(unsigned));
  CUDA_CHECK(cudaMemset(m->tickets.data(), 0, m->tickets.bytes()));
  setL2Residency(l2Residency);
}

Skinning::~Skinning() {
  if (m->residencyOn) cudaCtxResetPersistingL2Cache();  // the lines go back to normal (best effort, no throw)
}
void Skinning::setChainOverlap(bool on) { m->chainOverlap = on; }
bool Skinning::setTensorCores(bool on) { return m->tensorCores = on && m->tensorCapable; }
size_t Skinning::l2ResidentBytes() const { return m->residencyOn ? m->residency.num_bytes : 0; }
bool Skinning::setL2Residency(bool on) {
  if (m->residencyOn && !on) CUDA_CHECK(cudaCtxResetPersistingL2Cache());  // earlier calls' lines back to normal
  m->residencyOn = false;
  if (!on) return false;
  int device = 0, maxPersisting = 0, maxWindow = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&maxPersisting, cudaDevAttrMaxPersistingL2CacheSize, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&maxWindow, cudaDevAttrMaxAccessPolicyWindowSize, device));
  if (maxPersisting <= 0 || maxWindow <= 0) return false;  // no persisting L2 on this device (or under MIG/MPS)
  size_t limit = 0;
  CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  if (limit < size_t(maxPersisting) &&
      cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(maxPersisting)) != cudaSuccess) {
    cudaGetLastError();  // not sticky: residency stays off
    return false;
  }
  // The window holds a little less than the set-aside part, so its lines never evict one another.
  size_t bytes = std::min({m->blend.bytes(), size_t(maxWindow), size_t(maxPersisting) / 16 * 15});
  m->residency.base_ptr = m->blend.data();
  m->residency.num_bytes = bytes;
  m->residency.hitRatio = 1.0f;
  m->residency.hitProp = cudaAccessPropertyPersisting;
  m->residency.missProp = cudaAccessPropertyStreaming;
  // Spread: the whole matrix, each line persisting with probability hitRatio (chosen by address, the same lines
  // on every call). 3/4 of the set-aside part: persisting lines then rarely evict one another where the pick
  // fills a cache set unevenly (nearby fractions perform the same).
  m->spreadResidency = m->residency;
  m->spreadResidency.num_bytes = std::min(m->blend.bytes(), size_t(maxWindow));
  m->spreadResidency.hitRatio = float(std::min(1.0, 0.75 * maxPersisting / double(m->spreadResidency.num_bytes)));
  m->residencyOn = true;
  return true;
}
size_t Skinning::deviceBytes() const { return m->tableBytes; }

void Skinning::forward(uint32_t batch, const SkinningInputs& in, float* vertices, float* joints, cudaStream_t stream) {
  ARM_CHECK(batch >= 1 && batch <= m->maxBatch, "cuda::Skinning::forward: batch %u outside [1, %u]", batch,
            m->maxBatch);
  ARM_CHECK(in.pose && in.transl && vertices && joints && (in.betas || m->dims.S == 0) &&
                (in.expression || m->dims.K == m->dims.S),
            "cuda::Skinning::forward: null input or output pointer");
  Dims d = m->dims;
  d.B = int(batch);
  cudaStream_t s = stream;
  Tables t = m->tables();
  ForwardOut o{
      m->transforms.as<float>(), m->saved.as<float>(), joints, m->vPosed.as<float>(), vertices, nullptr, nullptr};
  // Few items: one fused kernel (chain blocks beside product blocks that skin their own vertex groups).
  auto usable = [&](const FusedLaunch& l) { return l.capacity > d.B; };
  const int fused = batch <= 4 && usable(m->few4) ? 4 : batch <= Impl::kFusedItems && usable(m->few8) ? 8 : 0;
  if (fused) {
    if (fused == 4)
      m->fusedForward(forwardFewKernel<4>, m->few4, d, in, o, s);
    else
      m->fusedForward(forwardFewKernel<8>, m->few8, d, in, o, s);
  } else {
    // More items: the chain does not feed the blend product, so with overlap it runs on a second stream beside it
    // (forked after the caller's earlier work, joined before skinning; GPU-side waits only). The caller's stream
    // gets its kernels enqueued first: the product is the critical path, the chain has slack.
    cudaStream_t chain = m->chainOverlap ? raw(m->chainStream) : s;
    if (m->chainOverlap) CUDA_CHECK(cudaEventRecord(m->chainFork.handle, s));
    featuresKernel<<<blocks(size_t(batch) * (d.J - 1 + d.K), 128), 128, 0, s>>>(d, in, m->features.as<float>());
    CUDA_CHECK_LAUNCH();
    m->blendForward(d.B, m->features.as<float>(), m->vPosed.as<float>(), s);
    if (m->chainOverlap) CUDA_CHECK(cudaStreamWaitEvent(chain, m->chainFork.handle, 0));
    jointsForwardKernel<<<batch, SKIN_MAX_JOINTS, chainSharedBytes(), chain>>>(d, t, in, o);
    CUDA_CHECK_LAUNCH();
    if (m->chainOverlap) {
      CUDA_CHECK(cudaEventRecord(m->chainJoin.handle, chain));
      CUDA_CHECK(cudaStreamWaitEvent(s, m->chainJoin.handle, 0));
    }
    skinForwardKernel<<<blocks(size_t(batch) * d.V, SKIN_VERTEX_GROUP), SKIN_VERTEX_GROUP, 0, s>>>(
        d, t, m->vPosed.as<float>(), m->blendStride, m->transforms.as<float>(), in.transl, vertices);
    CUDA_CHECK_LAUNCH();
  }
  m->lastInputs = in;
  m->lastBatch = batch;
}

void Skinning::backward(uint32_t batch, const float* gradVertices, const float* gradJoints, const SkinningGrads& out,
                        cudaStream_t stream) {
  ARM_CHECK(batch == m->lastBatch, "cuda::Skinning::backward: batch %u differs from the last forward's %u", batch,
            m->lastBatch);
  ARM_CHECK(out.pose && out.transl && (out.betas || m->dims.S == 0) && (out.expression || m->dims.K == m->dims.S),
            "cuda::Skinning::backward: null gradient pointer");
  Dims d = m->dims;
  d.B = int(batch);
  cudaStream_t s = stream;
  Tables t = m->tables();
  size_t n = size_t(batch) * d.V;
  // Two lanes: the per-joint sums and the reverse chain (chain stream) beside the per-vertex gradient and the blend
  // product's backward (caller's stream); the Rodrigues and coefficient gradients need both. GPU-side waits only.
  cudaStream_t chain = m->chainOverlap ? raw(m->chainStream) : s;
  if (!gradVertices) {
    CUDA_CHECK(cudaMemsetAsync(m->chunkParts.data(), 0, size_t(batch) * (d.chunks + d.translChunks) * 12 * 4, s));
    CUDA_CHECK(cudaMemsetAsync(m->gradFeatures.data(), 0, size_t(batch) * d.F() * 4, s));
  }
  if (m->chainOverlap) {
    CUDA_CHECK(cudaEventRecord(m->chainFork.handle, s));
    CUDA_CHECK(cudaStreamWaitEvent(chain, m->chainFork.handle, 0));
  }
  if (gradVertices) {
    skinBackwardJointKernel<<<dim3(d.chunks + d.translChunks, batch), kChunkThreads, 0, chain>>>(
        d, t, m->vPosed.as<float>(), m->blendStride, gradVertices, m->chunkParts.as<float>());
    CUDA_CHECK_LAUNCH();
  }
  chainBackwardKernel<<<batch, kJointsBackwardThreads, 0, chain>>>(
      d, t, m->saved.as<float>(), m->chunkParts.as<float>(), gradJoints, m->chainGrads.as<float>(), out.transl);
  CUDA_CHECK_LAUNCH();
  if (m->chainOverlap) CUDA_CHECK(cudaEventRecord(m->chainJoin.handle, chain));
  if (gradVertices) {
    skinBackwardVertexKernel<<<blocks(n, SKIN_VERTEX_GROUP), SKIN_VERTEX_GROUP, 0, s>>>(
        d, t, m->transforms.as<float>(), gradVertices, m->gradVPosed.as<float>(), m->blendStride);
    CUDA_CHECK_LAUNCH();
    m->blendBackward(d.B, m->gradVPosed.as<float>(), m->gradFeatures.as<float>(), s);
  }
  if (m->chainOverlap) CUDA_CHECK(cudaStreamWaitEvent(s, m->chainJoin.handle, 0));
  paramsBackwardKernel<<<batch, kJointsBackwardThreads, 0, s>>>(d, t, m->lastInputs, m->chainGrads.as<float>(),
                                                                m->gradFeatures.as<float>(), out);
  CUDA_CHECK_LAUNCH();
}

namespace {
class CudaSkinning : public SkinningBackend {
 public:
  CudaSkinning(const SkinningTables& tables, uint32_t maxBatch, const SkinningTuning& tuning)
      : m_impl(tables, maxBatch, tuning.l2Residency) {}
  void forward(const Exec& exec, const SkinningForwardArgs& a) override {
    m_impl.forward(a.batch,
                   {a.pose.cuda<float>(), a.betas.cuda<float>(), a.expression.cuda<float>(), a.transl.cuda<float>()},
                   a.vertices.cuda<float>(), a.joints.cuda<float>(), stream(exec));
  }
  void backward(const Exec& exec, const SkinningBackwardArgs& a) override {
    m_impl.backward(a.batch, a.gradVertices.cuda<float>(), a.gradJoints.cuda<float>(),
                    {a.gradPose.cuda<float>(), a.gradBetas.cuda<float>(), a.gradExpression.cuda<float>(),
                     a.gradTransl.cuda<float>()},
                    stream(exec));
  }
  SkinningTuning setTuning(const SkinningTuning& t) override {
    m_impl.setChainOverlap(t.chainOverlap);
    return {t.chainOverlap, m_impl.setL2Residency(t.l2Residency), m_impl.setTensorCores(t.tensorCores)};
  }
  size_t deviceBytes() const override { return m_impl.deviceBytes(); }
  size_t l2ResidentBytes() const override { return m_impl.l2ResidentBytes(); }

 private:
  Skinning m_impl;
};
}  // namespace

std::unique_ptr<SkinningBackend> makeSkinning(Device&, const SkinningTables& tables, uint32_t maxBatch,
                                              const SkinningTuning& tuning) {
  return std::make_unique<CudaSkinning>(tables, maxBatch, tuning);
}

}  // namespace armature::cuda
