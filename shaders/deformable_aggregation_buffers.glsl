// The buffers and push constants of the deformable aggregation's shaders (shared/deformable_aggregation_io.h).
// AGGREGATION_LANES (1 or 4): the channels an invocation takes, which the features, the output's gradient and the
// output (AGGREGATION_OUT_A, unless the shader sets it) are viewed in: float or vec4 (its 4 channels).
#ifndef AGGREGATION_LANES
#define AGGREGATION_LANES 1
#endif
#if AGGREGATION_LANES == 4
#define AggValue vec4
#else
#define AggValue float
#endif
#ifndef AGGREGATION_OUT_A
#define AGGREGATION_OUT_A AggValue
#endif
layout(std430, binding = AGGREGATION_BINDING_TABLE) readonly buffer Table { int table[]; };
layout(std430, binding = AGGREGATION_BINDING_FEATURES) readonly buffer Features { AggValue features[]; };
layout(std430, binding = AGGREGATION_BINDING_LOCATIONS) readonly buffer Locations { float locations[]; };
layout(std430, binding = AGGREGATION_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = AGGREGATION_BINDING_GRAD_OUT) readonly buffer GradOut { AggValue gradOut[]; };
layout(std430, binding = AGGREGATION_BINDING_OUT_A) writeonly buffer OutA { AGGREGATION_OUT_A outA[]; };
layout(std430, binding = AGGREGATION_BINDING_OUT_B) writeonly buffer OutB { float outB[]; };
layout(std430, binding = AGGREGATION_BINDING_WORDS) buffer Words { uint words[]; };
layout(push_constant) uniform Push { AggregationPush p; };

// The workgroup's index along a 2D dispatch of p.groupsX columns.
uint workgroupIndex() { return gl_WorkGroupID.y * p.groupsX + gl_WorkGroupID.x; }

// Sample s's location (s: batch, anchor, point, camera) and map (camera, level)'s H, W and start.
vec2 locationOf(uint s) { return vec2(locations[s * 2u], locations[s * 2u + 1u]); }
ivec3 mapOf(uint camera, uint level) {
  const uint m = (camera * p.levels + level) * 3u;
  return ivec3(table[m], table[m + 1u], table[m + 2u]);
}

// Corner k's texel (map.z + row · W + column) of a sample whose corners aggregationCorners gave, or -1 off the map.
int cornerTexel(int corner[2], int k, ivec3 map) {
  const int r = corner[0] + k / 2, col = corner[1] + k % 2;
  return r >= 0 && r < map.x && col >= 0 && col < map.y ? map.z + r * map.y + col : -1;
}
