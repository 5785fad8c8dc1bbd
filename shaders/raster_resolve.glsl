// Pass 2: per pixel, the winning face (index + 1, 0 = background) and its perspective-correct barycentrics at
// the pixel centre. Variants (shaders/CMakeLists.txt): RASTER_FP64 (the divide and barycentrics in double, on
// devices with shaderFloat64, or float).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if RASTER_FP64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif
#include "shared/raster_weights.h"

layout(local_size_x = RASTER_RESOLVE_GROUP) in;
layout(std430, binding = RASTER_BINDING_POSITIONS) readonly buffer Positions { vec4 positions[]; };
layout(std430, binding = RASTER_BINDING_FACES) readonly buffer Faces { int faces[]; };
layout(std430, binding = RASTER_RESOLVE_BINDING_ZBUFFER) buffer ZBuffer { uvec2 tokens[]; };  // per pixel: [face + 1, tag and level]
layout(std430, binding = RASTER_RESOLVE_BINDING_FINDICES) writeonly buffer FaceIds { int findices[]; };
layout(std430, binding = RASTER_RESOLVE_BINDING_BARY) writeonly buffer Bary { float barycentrics[]; };
layout(push_constant) uniform Push { RasterPush p; };

void main() {
  uint imagePixels = p.width * p.height, total = imagePixels * p.images, stride = gl_NumWorkGroups.x * RASTER_RESOLVE_GROUP;
  for (uint pix = gl_GlobalInvocationID.x; pix < total; pix += stride) {
    uvec2 token = tokens[pix];
    // Earlier calls' tokens stay: the next call's tag is lower still (RasterDesc::scratchCall). Tokens below this
    // call's tag come only from a misstated scratchCall; they are cleared so that the next call is right.
    // The 32-bit path (pass 2) needs the face words empty for its second pass.
    uint tag = token.y >> RASTER_TAG_SHIFT;
    if (tag < p.tokenTag) tokens[pix] = uvec2(~0u);
    else if (p.pass == 2u && token.x != ~0u) tokens[pix].x = ~0u;
    // Another call's tag (~0, no fragment, has the highest) or a face beyond F (a misstated scratchCall).
    if (tag != p.tokenTag || token.x - 1u >= p.triangleCount) {
      findices[pix] = 0;
      barycentrics[pix * 3] = 0, barycentrics[pix * 3 + 1] = 0, barycentrics[pix * 3 + 2] = 0;
      continue;
    }
    int face1 = int(token.x);
    findices[pix] = face1;
    uint image = pix / imagePixels, inImage = pix - image * imagePixels;
    uint base = p.instanced != 0u ? image * p.vertexCount : 0u;
    float nx[3], ny[3], w[3];  // the reference's NDC: correctly rounded quotients
    for (int k = 0; k < 3; ++k) {
      vec4 v = positions[base + uint(faces[(face1 - 1) * 3 + k])];
      nx[k] = rasterDivide(v.x, v.w), ny[k] = rasterDivide(v.y, v.w), w[k] = v.w;
    }
    uint px = inImage % p.width, py = inImage / p.width;
#if RASTER_FP64
    RasterReal cx = RasterReal(px) + RasterReal(0.5), cy = RasterReal(py) + RasterReal(0.5);
    RasterWeights b = rasterPerspectiveWeights(rasterScreen(nx[0], p.width), rasterScreen(ny[0], p.height), rasterScreen(nx[1], p.width),
                                               rasterScreen(ny[1], p.height), rasterScreen(nx[2], p.width),
                                               rasterScreen(ny[2], p.height), w[0], w[1], w[2], cx, cy);
#else
    RasterWeights b = rasterPerspectiveWeightsInteger(nx[0], ny[0], w[0], nx[1], ny[1], w[1], nx[2], ny[2], w[2], px, py, p.width, p.height);
#endif
    barycentrics[pix * 3] = float(b.b0), barycentrics[pix * 3 + 1] = float(b.b1), barycentrics[pix * 3 + 2] = float(b.b2);
  }
}
