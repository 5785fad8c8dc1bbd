// Bucket lists: the passes of shaders/buckets.comp (cuda/src/buckets.cu), planned for the ops that use them.
#include "buckets.h"

#include <algorithm>

#include "armature/shaders.h"
#include "armature/vk/context.h"
#include "dispatch.h"

namespace armature {

namespace {

void run(const char* op, const Exec& exec, const BucketLists& lists, uint32_t mode, uint32_t groups) {
  BucketPass pass;
  pass.push = {mode, lists.buckets, lists.counts, lists.starts, lists.entries, lists.blockSums, 0, 0};
  pass.groups = std::max(1u, groups);
  pass.words = lists.words;
  dispatch(op, exec, pass, &vk::bucketPass, ARM_CUDA_BACKEND(bucketPass));
}

}  // namespace

void clearBuckets(const char* op, const Exec& exec, const BucketLists& lists) {
  ARM_CHECK(lists.buckets <= 65535u * BUCKET_THREADS, "%s: %u buckets, at most %u", op, lists.buckets,
            65535u * BUCKET_THREADS);
  run(op, exec, lists, BUCKET_CLEAR, (lists.buckets + BUCKET_THREADS - 1) / BUCKET_THREADS);
}

void scanBuckets(const char* op, const Exec& exec, const BucketLists& lists) {
  ARM_CHECK(bucketBlockSums(lists.buckets) <= 65535, "%s: %u buckets, at most %u", op, lists.buckets,
            65535u * BUCKET_SCAN_BLOCK);
  run(op, exec, lists, BUCKET_SCAN_REDUCE, bucketBlockSums(lists.buckets));
  run(op, exec, lists, BUCKET_SCAN_BLOCKS, 1);
  run(op, exec, lists, BUCKET_SCAN_APPLY, bucketBlockSums(lists.buckets));
}

void sortBuckets(const char* op, const Exec& exec, const BucketLists& lists) {
  ARM_CHECK(lists.buckets <= 65535u * BUCKET_THREADS, "%s: %u buckets, at most %u", op, lists.buckets,
            65535u * BUCKET_THREADS);
  run(op, exec, lists, BUCKET_SORT, (lists.buckets + BUCKET_THREADS - 1) / BUCKET_THREADS);
  run(op, exec, lists, BUCKET_SORT_LARGE, std::min(lists.buckets, 65535u));  // the other buckets: no dependency
}

void vk::bucketPass(const Exec& exec, const BucketPass& p) {
  VkCommandBuffer cmd = exec.commandBuffer();
  computeBarrier(cmd);
  dispatch(cmd, exec.context().program(shaders::buckets, BUCKET_BINDINGS, sizeof p.push), p.groups, {p.words.vulkan()},
           p.push);
}

}  // namespace armature
