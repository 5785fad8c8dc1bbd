// Where a ray from `eye` along unit `d` enters and leaves the box [lo, hi] (tEnter > tLeave: it misses).
void fieldBoxSlab(vec3 eye, vec3 d, vec3 lo, vec3 hi, out float tEnter, out float tLeave) {
  const vec3 inv = 1.0 / d;  // ±inf on an axis the ray runs along: the slab test still holds
  const vec3 a = (lo - eye) * inv, b = (hi - eye) * inv;
  tEnter = max(max(min(a.x, b.x), min(a.y, b.y)), min(a.z, b.z));
  tLeave = min(min(max(a.x, b.x), max(a.y, b.y)), max(a.z, b.z));
}
