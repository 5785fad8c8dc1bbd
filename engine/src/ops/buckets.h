#pragma once
// Bucket lists (shaders/shared/buckets_io.h) for ops that gather deterministically: an op counts its items per
// bucket with atomics, scanBuckets turns the counts into starts and fill cursors, the op fills with atomics at the
// cursors, and sortBuckets orders each bucket's entries, so that sums over a bucket keep one order.
#include "armature/device.h"
#include "shared/buckets_io.h"

namespace armature {

// Regions of one UInt32 buffer, as word offsets.
struct BucketLists {
  DeviceView words;
  uint32_t buckets = 0;
  uint32_t counts = 0;     // buckets words
  uint32_t starts = 0;     // buckets + 1 words
  uint32_t entries = 0;    // as many as the counts' total
  uint32_t blockSums = 0;  // bucketBlockSums(buckets) words
};

void clearBuckets(const char* op, const Exec& exec, const BucketLists& lists);  // the counts to zero
void scanBuckets(const char* op, const Exec& exec, const BucketLists& lists);
void sortBuckets(const char* op, const Exec& exec, const BucketLists& lists);

struct BucketPass {
  BucketPush push{};
  uint32_t groups = 1;
  DeviceView words;
};
namespace vk {
void bucketPass(const Exec& exec, const BucketPass& pass);
}
namespace cuda {
void bucketPass(const Exec& exec, const BucketPass& pass);
}

}  // namespace armature
