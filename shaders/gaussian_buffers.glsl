// The buffers and push constants of gaussian_points.glsl and gaussian_gaussians.glsl (shared/gaussian_io.h).
layout(local_size_x = GAUSSIAN_THREADS) in;
layout(std430, binding = GAUSSIAN_BINDING_POINTS) readonly buffer Points { float points[]; };
layout(std430, binding = GAUSSIAN_BINDING_MEANS) readonly buffer Means { float means[]; };
layout(std430, binding = GAUSSIAN_BINDING_CHOLESKY) readonly buffer Cholesky { float cholesky[]; };
layout(std430, binding = GAUSSIAN_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = GAUSSIAN_BINDING_GRAD_FIELD) readonly buffer GradField { float gradField[]; };
layout(std430, binding = GAUSSIAN_BINDING_OUT) writeonly buffer Out { float outValues[]; };  // or the partials
layout(std430, binding = GAUSSIAN_BINDING_MAHALANOBIS) writeonly buffer Mahalanobis { float mahalanobis[]; };
layout(push_constant) uniform Push { GaussianPush p; };

#define ROWS GAUSSIAN_ROWS_PER_INVOCATION
#define MAXC GAUSSIAN_CHANNELS_MAX
