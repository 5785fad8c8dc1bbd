// Bucket lists (GLSL and CUDA): items put into buckets by their own passes (an atomic count per bucket, then an
// atomic fill at the bucket's cursor) are ordered here: the counts are scanned into each bucket's start and the
// fill cursors, and after the fill each bucket's entries are sorted, so that whatever sums over a bucket has a fixed
// order (the same bits on every run). All offsets are in 32-bit words of one buffer.
#ifndef ARMATURE_BUCKETS_IO_H
#define ARMATURE_BUCKETS_IO_H
#include "common_io.h"

#define BUCKET_THREADS 256
#define BUCKET_SCAN_BLOCK 1024  // counts a scan workgroup takes (4 per invocation)

#define BUCKET_SCAN_REDUCE 0u  // per block of BUCKET_SCAN_BLOCK counts: its sum
#define BUCKET_SCAN_BLOCKS 1u  // one workgroup: the block sums scanned (BUCKET_SCAN_BLOCK at a time, carried)
#define BUCKET_SCAN_APPLY 2u   // per block: the starts; the counts become the fill cursors
#define BUCKET_SORT 3u         // per bucket of at most BUCKET_SORT_SMALL entries: sorted by its invocation (heap sort;
                               // CUDA: insertion sort in shared memory, then a block's larger buckets, BUCKET_SORT_LARGE
                               // skipped)
#define BUCKET_CLEAR 4u        // per bucket: its count zeroed
#define BUCKET_SORT_LARGE 5u   // per larger bucket, a workgroup: a bitonic sort in shared memory (at most
                               // BUCKET_SORT_SHARED entries), else in place in the list: a bitonic network whose
                               // comparators all put the smaller entry first (each stage's first step compares i
                               // with i ^ (k − 1)), so the list's virtual padding to a power of two never moves
#define BUCKET_SORT_SMALL 32u
#define BUCKET_SORT_SHARED 2048u  // 8 KiB of shared memory

#define BUCKET_BINDING_WORDS 0
#define BUCKET_BINDINGS 1

ARM_SHARED_STRUCT(BucketPush) {
  uint mode;
  uint buckets;    // how many
  uint counts;     // words: the counts (then the cursors)
  uint starts;     // buckets + 1 words: where each bucket's entries begin, then the total
  uint entries;    // the entries (sort)
  uint blockSums;  // ceil(buckets / BUCKET_SCAN_BLOCK) words
  uint pad0, pad1;
};

#ifdef __cplusplus
static_assert(sizeof(BucketPush) == 32);
#endif

// The block sums a scan of `buckets` counts needs (its scratch's blockSums words).
ARM_FN uint bucketBlockSums(uint buckets) { return (buckets + BUCKET_SCAN_BLOCK - 1u) / BUCKET_SCAN_BLOCK; }

#endif
