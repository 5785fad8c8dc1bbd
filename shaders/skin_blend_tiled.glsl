// v_posed (B × V3) = features (B × F) · blendMatrix (F × V3) + v_template for more than a few items: a
// register-tiled GEMM (the one-item case is skin_blend.comp). A workgroup owns SKIN_TILE_ROWS items × 128 columns
// with 256 invocations: a subgroup of 32 shares SKIN_TILE_ROWS/8 consecutive rows (broadcast shared reads), each
// invocation 4 of the columns. SKIN_TILE_K terms per step; the next step's tiles are read into registers while this
// one is computed (double-buffered shared memory). Every output is summed in a fixed order: deterministic.
// The variants (shaders/CMakeLists.txt) define SKIN_TILE_ROWS (a multiple of 32) and SKIN_TILE_K: _MID (32 rows,
// 16 terms) for a few dozen items, _MANY (128 rows, 8 terms) for many.
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

#define ROWS_PER_INVOCATION (SKIN_TILE_ROWS / 8)
#define A_LOADS (SKIN_TILE_ROWS * SKIN_TILE_K / 256)
#define B_LOADS (SKIN_TILE_K * SKIN_TILE_COLUMNS / 256)

layout(local_size_x = 256) in;
layout(std430, binding = SKIN_BLEND_TILED_BINDING_FEATURES) readonly buffer Features { float features[]; };
layout(std430, binding = SKIN_BLEND_TILED_BINDING_BLEND) readonly buffer Blend { float blendMatrix[]; };
layout(std430, binding = SKIN_BLEND_TILED_BINDING_TEMPLATE) readonly buffer Template { float vTemplate[]; };
layout(std430, binding = SKIN_BLEND_TILED_BINDING_V_POSED) writeonly buffer VPosed { float vPosed[]; };
layout(push_constant) uniform Push { SkinningPush p; };

shared vec4 As[2][SKIN_TILE_K][SKIN_TILE_ROWS / 4];
shared vec4 Bs[2][SKIN_TILE_K][SKIN_TILE_COLUMNS / 4];

float aReg[A_LOADS];
float bReg[B_LOADS];

void loadTiles(uint k0, uint m0, uint n0, uint M, uint N, uint K) {
  for (uint i = 0; i < A_LOADS; ++i) {
    uint e = gl_LocalInvocationIndex + 256 * i, k = k0 + e % SKIN_TILE_K, m = m0 + e / SKIN_TILE_K;
    aReg[i] = (m < M && k < K) ? features[m * K + k] : 0.0;
  }
  for (uint i = 0; i < B_LOADS; ++i) {
    uint e = gl_LocalInvocationIndex + 256 * i, k = k0 + e / SKIN_TILE_COLUMNS, n = n0 + e % SKIN_TILE_COLUMNS;
    bReg[i] = (k < K && n < N) ? blendMatrix[k * N + n] : 0.0;
  }
}

void storeTiles(uint buf) {
  for (uint i = 0; i < A_LOADS; ++i) {
    uint e = gl_LocalInvocationIndex + 256 * i, k = e % SKIN_TILE_K, r = e / SKIN_TILE_K;
    As[buf][k][r / 4][r % 4] = aReg[i];
  }
  for (uint i = 0; i < B_LOADS; ++i) {
    uint e = gl_LocalInvocationIndex + 256 * i, k = e / SKIN_TILE_COLUMNS, n = e % SKIN_TILE_COLUMNS;
    Bs[buf][k][n / 4][n % 4] = bReg[i];
  }
}

void main() {
  uint N = p.vertexCount * 3, K = p.featureCount + p.coefCount, M = p.batch;
  uint lane = gl_LocalInvocationIndex % 32, group = gl_LocalInvocationIndex / 32;
  uint m0 = gl_WorkGroupID.y * SKIN_TILE_ROWS, n0 = gl_WorkGroupID.x * SKIN_TILE_COLUMNS;
  vec4 acc[ROWS_PER_INVOCATION];
  for (uint r = 0; r < ROWS_PER_INVOCATION; ++r) acc[r] = vec4(0.0);
  loadTiles(0, m0, n0, M, N, K);
  storeTiles(0);
  barrier();
  uint buf = 0;
  for (uint k0 = 0; k0 < K; k0 += SKIN_TILE_K) {
    bool more = k0 + SKIN_TILE_K < K;
    if (more) loadTiles(k0 + SKIN_TILE_K, m0, n0, M, N, K);
    if (m0 + group * ROWS_PER_INVOCATION < M)  // (groups past the last item only load and store)
    for (uint kk = 0; kk < SKIN_TILE_K; ++kk) {
      vec4 b = Bs[buf][kk][lane];
      for (uint r4 = 0; r4 < ROWS_PER_INVOCATION / 4; ++r4) {
        vec4 a = As[buf][kk][group * (ROWS_PER_INVOCATION / 4) + r4];
        acc[r4 * 4] += a.x * b;
        acc[r4 * 4 + 1] += a.y * b;
        acc[r4 * 4 + 2] += a.z * b;
        acc[r4 * 4 + 3] += a.w * b;
      }
    }
    if (more) storeTiles(buf ^ 1);
    barrier();
    buf ^= 1;
  }
  for (uint r = 0; r < ROWS_PER_INVOCATION; ++r) {
    uint m = m0 + group * ROWS_PER_INVOCATION + r;
    if (m >= M) break;
    for (uint c = 0; c < 4; ++c) {
      uint n = n0 + lane * 4 + c;
      if (n < N) vPosed[m * N + n] = acc[r][c] + vTemplate[n];
    }
  }
}
