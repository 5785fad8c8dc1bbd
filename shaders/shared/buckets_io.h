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
#define BUCKET_SORT \
  3u                     // per bucket of at most BUCKET_SORT_SMALL entries: sorted by its invocation in shared
                         // memory (insertion sort). CUDA also sorts the larger ones here, a block's after its
                         // small ones, and skips BUCKET_SORT_LARGE.
#define BUCKET_CLEAR 4u  // per bucket: its count zeroed
#define BUCKET_SORT_LARGE \
  5u  // per larger bucket, a workgroup: a bitonic sort in shared memory (at most
      // BUCKET_SORT_SHARED entries), else in place in the list: a bitonic network whose
      // comparators all put the smaller entry first (each stage's first step compares i
      // with i ^ (k − 1)), so the list's virtual padding to a power of two never moves
#define BUCKET_SORT_SMALL 16u
#define BUCKET_SORT_SHARED 2048u  // at most BUCKET_SORT_WORDS: the two sorts share their shared words
// The sort's shared words: the invocations' small buckets, element k of invocation i at k · BUCKET_THREADS + i (no
// bank conflicts), then a larger bucket's entries.
#define BUCKET_SORT_WORDS (BUCKET_SORT_SMALL * BUCKET_THREADS)

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
