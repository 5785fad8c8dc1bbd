// The avatar's lighting, shared by the hardware draw (mesh.frag) and the visibility-buffer passes: key light plus
// hemisphere ambient and a little specular on a two-sided normal, over the skin colour or a texture's.
const vec3 kSkin = vec3(0.86, 0.68, 0.58);

vec3 shadeSurface(vec3 albedo, vec3 n, vec3 toEye) {
  if (dot(n, toEye) < 0.0) n = -n;  // two-sided: the normal faces the eye
  vec3 key = normalize(vec3(-0.4, 0.8, 0.6));
  float diffuse = max(dot(n, key), 0.0);
  vec3 hemi = mix(vec3(0.25, 0.22, 0.2), vec3(0.55, 0.6, 0.7), 0.5 + 0.5 * n.y);
  vec3 h = normalize(key + toEye);
  float spec = pow(max(dot(n, h), 0.0), 32.0) * 0.15;
  return albedo * (0.75 * diffuse + hemi * 0.55) + spec;
}

vec3 shadeSkin(vec3 n, vec3 toEye) { return shadeSurface(kSkin, n, toEye); }

// The ground's grid at world point q (xz), given how much q moves per pixel (fwidth): faint lines every metre,
// fading with distance from the origin.
vec3 shadeGround(vec2 q, vec2 perPixel) {
  vec2 cell = abs(fract(q - 0.5) - 0.5) / perPixel;
  float line = 1.0 - min(min(cell.x, cell.y), 1.0);
  float fade = exp(-0.04 * dot(q, q));
  return mix(vec3(0.16, 0.17, 0.19), vec3(0.42, 0.44, 0.48), line * fade);
}
