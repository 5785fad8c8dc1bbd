#version 450
// The blend product's input for two or more items (skin_feature.glsl), one invocation per unit (a joint's nine pose
// features, or a coefficient). A dispatch of its
// own so that the blend product does not wait for the joint chain (skin_joints.comp), which runs beside it. (One
// item's blend stream computes its features itself.)
#extension GL_GOOGLE_include_directive : require
#include "shared/skinning_io.h"

layout(local_size_x = SKIN_FEATURE_GROUP) in;
layout(std430, binding = SKIN_FEATURES_BINDING_POSE) readonly buffer Pose { float pose[]; };
layout(std430, binding = SKIN_FEATURES_BINDING_BETAS) readonly buffer Betas { float betas[]; };
layout(std430, binding = SKIN_FEATURES_BINDING_EXPR) readonly buffer Expr { float expression[]; };
layout(std430, binding = SKIN_FEATURES_BINDING_FEATURES) writeonly buffer Features { float features[]; };
layout(push_constant) uniform Push { SkinningPush p; };

#include "skin_feature.glsl"

void main() {
  uint units = skinFeatureUnits(), i = gl_GlobalInvocationID.x;
  if (i >= p.batch * units) return;
  uint b = i / units, count;
  float v[9];
  uint first = b * (p.featureCount + p.coefCount) + skinFeatureUnit(b, i - b * units, v, count);
  for (uint e = 0; e < count; ++e) features[first + e] = v[e];
}
