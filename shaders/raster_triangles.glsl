// Pass 1 of the rasteriser, in two stages (p.stage). Stage 0: one invocation per (triangle, image) sets the
// triangle up and walks its pixel box if it is small; a big one is cut into chunks that go to a queue. Stage 1: one
// workgroup per queued chunk, its invocations spread over the chunk's pixels; the triangle's setup comes with the
// queue (records), not set up again. Each covered pixel keeps the nearest
// fragment: with 64-bit atomics one atomicMin on the (depth level, face + 1) token; without them two passes over
// 32-bit words (p.pass 1: min level, p.pass 2: min face at that level). Ties go to the lower face either way.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if RASTER_ATOMIC64
#extension GL_EXT_shader_atomic_int64 : require
#endif
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_io.h"

layout(local_size_x = RASTER_GROUP) in;
layout(std430, binding = 0) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = 1) readonly buffer Faces { int faces[]; };
layout(std430, binding = 2) readonly buffer Prior { float prior[]; };
#if RASTER_ATOMIC64
layout(std430, binding = 3) coherent buffer ZBuffer { uint64_t zbuffer[]; };
#else
layout(std430, binding = 3) coherent buffer ZBuffer { uint zwords[]; };  // per pixel: [face + 1, level]
#endif
layout(std430, binding = 4) readonly buffer Ranges { int ranges[]; };
layout(std430, binding = 5) coherent buffer Queue { uint queue[]; };
layout(std430, binding = 6) buffer Records { RasterQueued records[]; };
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

void fragment(RasterTri t, uint f, uint image, int px, int py) {
  int64_t level = rasterCover(t, px, py);
  if (level == RASTER_MISS) return;
  uint pix = (image * p.height + uint(py)) * p.width + uint(px);
  if (p.useDepthPrior != 0u && level < rasterPriorLevel(prior[pix], p.occlusionTruncation)) return;
  if (level < int64_t(0)) return;  // in front of the near plane (the original's depth threshold 0)
  // No read before the atomic: with its result unused it need not wait for memory, while a read would stall the
  // invocation's walk one round trip per pixel.
#if RASTER_ATOMIC64
  atomicMin(zbuffer[pix], rasterToken(level, f));
#else
  uint tokenLevel = uint(rasterTokenLevel(level));
  if (p.pass == 1u) {
    atomicMin(zwords[pix * 2 + 1], tokenLevel);
  }
  else if (zwords[pix * 2 + 1] == tokenLevel) atomicMin(zwords[pix * 2], f + 1u);
#endif
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

void perTriangle(uint i, uint image) {
  uint f = i;
  if (p.instanced == 0u) {
    if (int(i) >= ranges[image * 2 + 1]) return;
    f = uint(ranges[image * 2]) + i;
    if (ranges[image * 2] < 0 || f >= p.triangleCount) return;  // a bad range draws nothing, reads nothing
  }
  RasterTri t = setupTriangle(f, image);
  if (t.valid == 0u) return;
  uint box = uint(t.maxX - t.minX + 1) * uint(t.maxY - t.minY + 1);
  if (box > uint(RASTER_SMALL_PIXELS)) {
    uint chunkPixels = rasterChunkPixels(box), chunks = (box + chunkPixels - 1u) / chunkPixels;
    // The first word counts entries - 1 from ~0. Look before adding so an overflowing queue grows only by what
    // is in flight. Slots past the end are walked here (slowly but correctly); those before it are filled, so
    // the consumer never reads a hole.
    if (queue[0] + 1u < p.queueCapacity) {
      uint slot = atomicAdd(queue[0], chunks) + 1u;
      uint queued = slot < p.queueCapacity ? min(chunks, p.queueCapacity - slot) : 0u;
      if (queued > 0u) {
        uint record = atomicAdd(queue[1], 1u) + 1u;  // < capacity: every record owns at least one entry
        records[record].tri = t, records[record].face = f, records[record].image = image;
        for (uint c = 0u; c < queued; ++c) {
          uint e = RASTER_QUEUE_HEADER + (slot + c) * RASTER_QUEUE_ENTRY;
          queue[e] = record, queue[e + 1u] = c;
        }
      }
      walkBox(t, f, image, queued * chunkPixels, box, 1u);
      return;
    }
  }
  walkBox(t, f, image, 0u, box, 1u);
}

void perChunk() {
  uint entries = min(queue[0] + 1u, p.queueCapacity);  // ~0 + 1 = 0: empty (the same for the whole group)
  for (uint e = gl_WorkGroupID.x; e < entries; e += gl_NumWorkGroups.x) {
    uint at = RASTER_QUEUE_HEADER + e * RASTER_QUEUE_ENTRY, record = queue[at], chunk = queue[at + 1u];
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
  // Grid-stride in x over F (a range never holds more): the host caps the group count, so millions of triangles
  // fit the dispatch limits; y = image.
  uint stride = gl_NumWorkGroups.x * RASTER_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < p.triangleCount; i += stride) perTriangle(i, gl_WorkGroupID.y);
}
