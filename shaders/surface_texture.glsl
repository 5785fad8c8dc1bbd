// The textured variants' surface texture (MESH_TEXTURED): size² texels of colour premultiplied by coverage, as the
// texture baker writes it. Sampled bilinearly (texel centres at (i + ½) / size, v down) and un-premultiplied, so
// that texels off the atlas's charts (coverage 0) never bleed in and no dilated copy is needed; where no texel
// around uv is covered, the plain skin colour. Define SURFACE_TEXELS_BINDING and include shade.glsl first.
layout(std430, binding = SURFACE_TEXELS_BINDING) readonly buffer SurfaceTexels { vec4 texels[]; };

vec3 surfaceAlbedo(vec2 uv) {
  const int size = int(pc.textureSize);
  vec2 p = uv * float(size) - 0.5;
  vec2 low = floor(p), t = p - low;
  vec4 sum = vec4(0.0);
  for (int k = 0; k < 4; ++k) {
    ivec2 c = clamp(ivec2(low) + ivec2(k & 1, k >> 1), ivec2(0), ivec2(size - 1));
    float w = ((k & 1) != 0 ? t.x : 1.0 - t.x) * ((k >> 1) != 0 ? t.y : 1.0 - t.y);
    sum += w * texels[c.y * size + c.x];
  }
  return sum.a > 1e-3 ? sum.rgb / sum.a : kSkin;
}
