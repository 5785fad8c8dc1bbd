// The culled Gaussian field's passes' buffers beyond the grid's (shared/gaussian_grid_io.h), then the grid's lookup.
layout(std430, binding = GAUSSIAN_CULLED_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = GAUSSIAN_CULLED_BINDING_GRAD_FIELD) readonly buffer GradField { float gradField[]; };
layout(std430, binding = GAUSSIAN_CULLED_BINDING_OUT) writeonly buffer Out { float outValues[]; };
#include "gaussian_grid_lookup.glsl"
#define MAXC GAUSSIAN_CHANNELS_MAX
