// The buffers and push constants of the deformable aggregation's shaders (shared/aggregation_io.h).
layout(std430, binding = AGGREGATION_BINDING_TABLE) readonly buffer Table { int table[]; };
layout(std430, binding = AGGREGATION_BINDING_FEATURES) readonly buffer Features { float features[]; };
layout(std430, binding = AGGREGATION_BINDING_LOCATIONS) readonly buffer Locations { float locations[]; };
layout(std430, binding = AGGREGATION_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = AGGREGATION_BINDING_GRAD_OUT) readonly buffer GradOut { float gradOut[]; };
layout(std430, binding = AGGREGATION_BINDING_OUT_A) writeonly buffer OutA { float outA[]; };
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
