#version 450
// Bucket lists (shared/buckets_io.h): the scan of the counts in three passes, or the sort of each bucket (small ones
// by an invocation, larger ones by a workgroup).
#extension GL_GOOGLE_include_directive : require
#include "shared/buckets_io.h"

layout(local_size_x = BUCKET_THREADS) in;
layout(std430, binding = BUCKET_BINDING_WORDS) buffer Words { uint words[]; };
layout(push_constant) uniform Push { BucketPush p; };

shared uint sScan[BUCKET_THREADS];
shared uint sList[BUCKET_SORT_SHARED];  // BUCKET_SORT_LARGE: a bucket's entries, padded to a power of two

// The exclusive prefix of v over the workgroup, and its total.
uint workgroupExclusiveScan(uint v, out uint total) {
  const uint lid = gl_LocalInvocationID.x;
  sScan[lid] = v;
  barrier();
  for (uint step = 1u; step < BUCKET_THREADS; step <<= 1u) {
    const uint add = lid >= step ? sScan[lid - step] : 0u;
    barrier();
    sScan[lid] += add;
    barrier();
  }
  total = sScan[BUCKET_THREADS - 1u];
  const uint inclusive = sScan[lid];
  barrier();
  return inclusive - v;
}

void siftDown(uint first, uint root, uint end) {
  for (uint child = 2u * root + 1u; child < end; child = 2u * root + 1u) {
    if (child + 1u < end && words[first + child + 1u] > words[first + child]) ++child;
    if (words[first + root] >= words[first + child]) break;
    const uint t = words[first + root];
    words[first + root] = words[first + child], words[first + child] = t;
    root = child;
  }
}

// A bucket's n entries from word `first` on, ascending.
void heapSort(uint first, uint n) {
  for (uint start = n / 2u; start-- > 0u;) siftDown(first, start, n);
  for (uint end = n - 1u; end > 0u; --end) {
    const uint t = words[first];
    words[first] = words[first + end], words[first + end] = t;
    siftDown(first, 0u, end);
  }
}

void main() {
  const uint lid = gl_LocalInvocationID.x, group = gl_WorkGroupID.x;
  if (p.mode == BUCKET_CLEAR) {
    if (gl_GlobalInvocationID.x < p.buckets) words[p.counts + gl_GlobalInvocationID.x] = 0u;
  } else if (p.mode == BUCKET_SORT) {
    const uint b = gl_GlobalInvocationID.x;
    if (b >= p.buckets) return;
    const uint first = p.entries + words[p.starts + b], n = words[p.starts + b + 1u] - words[p.starts + b];
    if (n < 2u || n > BUCKET_SORT_SMALL) return;
    heapSort(first, n);
  } else if (p.mode == BUCKET_SORT_LARGE) {
    for (uint b = group; b < p.buckets; b += gl_NumWorkGroups.x) {
      const uint first = p.entries + words[p.starts + b], n = words[p.starts + b + 1u] - words[p.starts + b];
      if (n <= BUCKET_SORT_SMALL) continue;  // the same for the whole workgroup
      if (n > BUCKET_SORT_SHARED) {  // the same network in place, every comparator ascending (bucket_io.h)
        uint size = 1u;
        while (size < n) size <<= 1u;
        for (uint k = 2u; k <= size; k <<= 1u)
          for (uint j = k >> 1u; j > 0u; j >>= 1u) {
            for (uint i = lid; i < size; i += BUCKET_THREADS) {
              const uint partner = j == k >> 1u ? i ^ (k - 1u) : i ^ j;
              if (partner > i && partner < n) {
                const uint a = words[first + i], c = words[first + partner];
                if (a > c) words[first + i] = c, words[first + partner] = a;
              }
            }
            memoryBarrierBuffer();
            barrier();
          }
        continue;
      }
      uint size = 64u;
      while (size < n) size <<= 1u;
      for (uint i = lid; i < size; i += BUCKET_THREADS) sList[i] = i < n ? words[first + i] : 0xFFFFFFFFu;
      barrier();
      for (uint k = 2u; k <= size; k <<= 1u)
        for (uint j = k >> 1u; j > 0u; j >>= 1u) {
          for (uint i = lid; i < size; i += BUCKET_THREADS) {
            const uint partner = i ^ j;
            if (partner > i) {
              const uint a = sList[i], c = sList[partner];
              if ((a > c) == ((i & k) == 0u)) sList[i] = c, sList[partner] = a;
            }
          }
          barrier();
        }
      for (uint i = lid; i < n; i += BUCKET_THREADS) words[first + i] = sList[i];
      barrier();  // before the next bucket's loads
    }
  } else if (p.mode == BUCKET_SCAN_REDUCE) {
    const uint base = group * BUCKET_SCAN_BLOCK + lid * 4u;
    uint sum = 0u, total;
    for (uint k = 0u; k < 4u; ++k) sum += base + k < p.buckets ? words[p.counts + base + k] : 0u;
    workgroupExclusiveScan(sum, total);
    if (lid == 0u) words[p.blockSums + group] = total;
  } else if (p.mode == BUCKET_SCAN_BLOCKS) {
    const uint blocks = bucketBlockSums(p.buckets);
    uint carry = 0u;
    for (uint chunk = 0u; chunk < blocks; chunk += BUCKET_SCAN_BLOCK) {
      const uint base = chunk + lid * 4u;
      uint v[4], sum = 0u, total;
      for (uint k = 0u; k < 4u; ++k) v[k] = base + k < blocks ? words[p.blockSums + base + k] : 0u, sum += v[k];
      uint running = carry + workgroupExclusiveScan(sum, total);
      for (uint k = 0u; k < 4u; ++k) {
        if (base + k < blocks) words[p.blockSums + base + k] = running;
        running += v[k];
      }
      carry += total;
    }
    if (lid == 0u) words[p.starts + p.buckets] = carry;
  } else if (p.mode == BUCKET_SCAN_APPLY) {
    const uint base = group * BUCKET_SCAN_BLOCK + lid * 4u;
    uint v[4], sum = 0u, total;
    for (uint k = 0u; k < 4u; ++k) v[k] = base + k < p.buckets ? words[p.counts + base + k] : 0u, sum += v[k];
    uint running = workgroupExclusiveScan(sum, total) + words[p.blockSums + group];
    for (uint k = 0u; k < 4u; ++k) {
      if (base + k < p.buckets) words[p.starts + base + k] = running, words[p.counts + base + k] = running;
      running += v[k];
    }
  }
}
