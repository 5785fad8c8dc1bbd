// Pass 1 of the rasteriser, in two stages (p.stage). Stage 0: one invocation per (triangle, image) sets the
// triangle up and walks its pixel box if it is small; a big one is cut into chunks that go to a queue. Stage 1: one
// workgroup per queued chunk, its invocations spread over the chunk's pixels; the triangle's setup comes with the
// queue (records), not set up again. Each covered pixel keeps the nearest
// fragment: with 64-bit atomics one atomicMin on the (depth level, face + 1) token; without them two passes over
// 32-bit words (p.pass 1: min level, p.pass 2: min face at that level). Ties go to the lower face either way.
// Variants (shaders/CMakeLists.txt): RASTER_ATOMIC64 (64-bit atomics or the two 32-bit passes), RASTER_FP64 (the
// divide and barycentrics in double, on devices with shaderFloat64, or float).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if RASTER_ATOMIC64
#extension GL_EXT_shader_atomic_int64 : require
#endif
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_cover.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = RASTER_BINDING_POSITIONS) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = RASTER_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = RASTER_BINDING_PRIOR) readonly buffer Prior { float prior[]; };
#if RASTER_ATOMIC64
layout(std430, binding = RASTER_BINDING_ZBUFFER) coherent buffer ZBuffer { uint64_t zbuffer[]; };
#else
layout(std430, binding = RASTER_BINDING_ZBUFFER) coherent buffer ZBuffer { uint zwords[]; };  // per pixel: [face + 1, tag and level]
#endif
layout(std430, binding = RASTER_BINDING_RANGES) readonly buffer Ranges { int ranges[]; };
layout(std430, binding = RASTER_BINDING_QUEUE) coherent buffer Queue { uint queue[]; };
layout(std430, binding = RASTER_BINDING_RECORDS) buffer Records { RasterQueued records[]; };
layout(push_constant) uniform Push { RasterPush p; };

// The triangle's setup, or an invalid one for out-of-range vertex ids (never read out of bounds).
RasterTri setupTriangle(uint f, uint image) {
  int ia = faces[f * 3], ib = faces[f * 3 + 1], ic = faces[f * 3 + 2];
  if (ia < 0 || ib < 0 || ic < 0 || uint(max(ia, max(ib, ic))) >= p.vertexCount) {
    RasterTri none;
    none.valid = 0u;
    return none;
  }
  uint base = p.instanced != 0u ? image * p.vertexCount : 0u;
  vec4 a = positions[base + uint(ia)], b = positions[base + uint(ib)], c = positions[base + uint(ic)];
  return rasterSetup(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w, p.width, p.height);
}

// A covered pixel at depth `level`: the prior's and the near plane's tests, then the z-buffer.
void fragmentAt(uint f, uint image, int px, int py, int64_t level) {
  uint pix = (image * p.height + uint(py)) * p.width + uint(px);
  if (p.useDepthPrior != 0u && level < rasterPriorLevel(prior[pix], p.occlusionTruncation)) return;
  if (level < int64_t(0)) return;  // in front of the near plane (the original's depth threshold 0)
  // No read before the atomic: with its result unused it need not wait for memory, while a read would stall the
  // invocation's walk one round trip per pixel.
#if RASTER_ATOMIC64
  atomicMin(zbuffer[pix], rasterToken(level, f, p.tokenTag));
#else
  uint word = rasterTokenWord(level, p.tokenTag);
  if (p.pass == 1u) {
    atomicMin(zwords[pix * 2 + 1], word);
  }
  else if (zwords[pix * 2 + 1] == word) atomicMin(zwords[pix * 2], f + 1u);  // the resolve left it ~0
#endif
}

void fragment(RasterTri t, uint f, uint image, int px, int py) {
  int64_t level = rasterCover(t, px, py);
  if (level != RASTER_MISS) fragmentAt(f, image, px, py, level);
}

// Box pixels first, first + step, ... below end, in row order; one division to start, none per pixel.
void walkBox(RasterTri t, uint f, uint image, uint first, uint end, uint step) {
  uint boxWidth = uint(t.maxX - t.minX + 1), rowStep = step / boxWidth, columnStep = step % boxWidth;
  int x = t.minX + int(first % boxWidth), y = t.minY + int(first / boxWidth);
  for (uint q = first; q < end; q += step) {
    fragment(t, f, image, x, y);
    x += int(columnStep), y += int(rowStep);
    if (x > t.maxX) x -= int(boxWidth), ++y;
  }
}

// A small box's covered pixels (narrow triangles), from rasterSmallMask: depth (stepped on the plane where it is
// valid) and the atomic only where a fragment is.
void walkMask(RasterTri t, uint f, uint image, RasterMask m) {
  uint boxWidth = uint(t.maxX - t.minX + 1), rowMagic = 65536u / boxWidth + 1u;  // exact q / width for q < 64
  RasterPlane plane = rasterPlane(t);
  for (uint word = 0u; word < 2u; ++word)
    for (uint bits = word != 0u ? m.hi : m.lo; bits != 0u; bits &= bits - 1u) {
      uint q = uint(findLSB(bits)) + 32u * word, row = (q * rowMagic) >> 16, column = q - row * boxWidth;
      int px = t.minX + int(column), py = t.minY + int(row);
      int64_t level = plane.valid != 0u ? rasterPlaneDepth(plane, int(column), int(row)) : rasterNarrowDepth(t, px, py);
      fragmentAt(f, image, px, py, level);
    }
}

shared uint groupChunks, groupRecords, chunkBase, recordBase;

// Stage 0 for one workgroup's triangles [start, start + RASTER_GROUP). The group reserves its queue entries and
// records with one global atomic each (many invocations contending for one address serialise), so every
// invocation comes here, live or not, and reaches the barriers.
void perTriangles(uint start, uint image) {
  uint i = start + gl_LocalInvocationID.x, f = i;
  bool live = i < p.triangleCount;
  if (live && p.instanced == 0u) {
    f = uint(ranges[image * 2]) + i;
    live = int(i) < ranges[image * 2 + 1] && ranges[image * 2] >= 0 && f < p.triangleCount;  // a bad range draws nothing
  }
  RasterTri t;
  t.valid = 0u;
  if (live) t = setupTriangle(f, image);
  uint box = t.valid != 0u ? uint(t.maxX - t.minX + 1) * uint(t.maxY - t.minY + 1) : 0u;
  uint chunkPixels = rasterChunkPixels(box);
  uint chunks = box > p.smallPixels ? (box + chunkPixels - 1u) / chunkPixels : 0u;
  if (gl_LocalInvocationIndex == 0u) groupChunks = 0u, groupRecords = 0u;
  barrier();
  uint chunkOffset = 0u, recordOffset = 0u;
  if (chunks > 0u) chunkOffset = atomicAdd(groupChunks, chunks), recordOffset = atomicAdd(groupRecords, 1u);
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    // queue[0] and [1] count entries - 1 and records - 1 from ~0. Look before adding so an overflowing queue grows
    // only by what is in flight; what does not fit is walked here, and no slot before the end is left empty.
    chunkBase = p.queueCapacity, recordBase = p.queueCapacity;
    if (groupChunks > 0u && queue[0] + 1u < p.queueCapacity) {
      chunkBase = atomicAdd(queue[0], groupChunks) + 1u;
      recordBase = atomicAdd(queue[1], groupRecords) + 1u;
    }
  }
  barrier();
  if (chunks > 0u) {
    uint slot = chunkBase + chunkOffset, record = recordBase + recordOffset;
    // Every slot reserved inside the queue is written, even where the record did not fit (the two counters' orders
    // differ between workgroups): stage 1 reads every slot below the count, and skips the unrecorded ones.
    uint reserved = slot < p.queueCapacity ? min(chunks, p.queueCapacity - slot) : 0u;
    uint queued = record < p.queueCapacity ? reserved : 0u;
    if (queued > 0u) records[record].tri = t, records[record].face = f, records[record].image = image;
    for (uint c = 0u; c < reserved; ++c) {
      uint e = RASTER_QUEUE_HEADER + (slot + c) * RASTER_QUEUE_ENTRY;
      queue[e] = queued > 0u ? record : RASTER_NO_RECORD, queue[e + 1u] = c;
    }
    walkBox(t, f, image, queued * chunkPixels, box, 1u);
  } else if (box > 0u && t.narrow != 0u) {
    walkMask(t, f, image, rasterSmallMask(t));
  } else if (box > 0u) {
    walkBox(t, f, image, 0u, box, 1u);  // a wide triangle clipped to a small box
  }
}

void perChunk() {
  uint entries = min(queue[0] + 1u, p.queueCapacity);  // ~0 + 1 = 0: empty (the same for the whole group)
  for (uint e = gl_WorkGroupID.x; e < entries; e += gl_NumWorkGroups.x) {
    uint at = RASTER_QUEUE_HEADER + e * RASTER_QUEUE_ENTRY, record = queue[at], chunk = queue[at + 1u];
    if (record == RASTER_NO_RECORD) continue;  // its triangle was walked by its own invocation
    RasterTri t = records[record].tri;  // set up once, by the invocation that queued it
    uint box = uint(t.maxX - t.minX + 1) * uint(t.maxY - t.minY + 1), chunkPixels = rasterChunkPixels(box);
    walkBox(t, records[record].face, records[record].image, chunk * chunkPixels + gl_LocalInvocationID.x,
            min(box, (chunk + 1u) * chunkPixels), RASTER_GROUP);
  }
}

void main() {
  if (p.stage == 1u) {
    perChunk();
    return;
  }
  // Grid-stride in x over F (a range never holds more), uniform over the workgroup: the host caps the group count,
  // so millions of triangles fit the dispatch limits; y = image.
  uint stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint start = gl_WorkGroupID.x * RASTER_GROUP; start < p.triangleCount; start += stride)
    perTriangles(start, gl_WorkGroupID.y);
}
