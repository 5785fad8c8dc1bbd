// Rodrigues' formula and its backward, as smplx's batch_rodrigues: angle = |r + 1e-8|, u = r / angle,
// R = I + sin(angle)·K + (1 − cos(angle))·K², K = skew(u). Same math as cuda/src/skinning.cu.
void rodrigues(vec3 r, out float m[9]) {
  float angle = length(r + vec3(1e-8));
  vec3 u = r / angle;
  float s = sin(angle), oc = 1.0 - cos(angle), uu = dot(u, u);
  m = float[9](1.0 + oc * (u.x * u.x - uu), -s * u.z + oc * u.x * u.y, s * u.y + oc * u.x * u.z,
               s * u.z + oc * u.y * u.x, 1.0 + oc * (u.y * u.y - uu), -s * u.x + oc * u.y * u.z,
               -s * u.y + oc * u.z * u.x, s * u.x + oc * u.z * u.y, 1.0 + oc * (u.z * u.z - uu));
}

// dL/dr from dL/dR (row-major 3×3).
vec3 rodriguesBackward(vec3 r, float gR[9]) {
  vec3 e = r + vec3(1e-8);
  float angle = length(e);
  vec3 u = r / angle;
  float s = sin(angle), cosA = cos(angle), c = 1.0 - cosA;
  float K[9] = float[9](0.0, -u.z, u.y, u.z, 0.0, -u.x, -u.y, u.x, 0.0);
  float K2[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) K2[i * 3 + j] = K[i * 3] * K[j] + K[i * 3 + 1] * K[3 + j] + K[i * 3 + 2] * K[6 + j];
  vec3 g;
  for (int i = 0; i < 3; ++i) {
    float dA = e[i] / angle;  // d angle / d r_i
    vec3 du;                  // d u / d r_i
    for (int k = 0; k < 3; ++k) du[k] = (k == i ? 1.0 / angle : 0.0) - r[k] * dA / (angle * angle);
    float dK[9] = float[9](0.0, -du.z, du.y, du.z, 0.0, -du.x, -du.y, du.x, 0.0);
    float acc = 0.0;
    for (int p = 0; p < 3; ++p)
      for (int q = 0; q < 3; ++q) {
        float dKK = dK[p * 3] * K[q] + dK[p * 3 + 1] * K[3 + q] + dK[p * 3 + 2] * K[6 + q];
        float KdK = K[p * 3] * dK[q] + K[p * 3 + 1] * dK[3 + q] + K[p * 3 + 2] * dK[6 + q];
        float dR = cosA * dA * K[p * 3 + q] + s * dK[p * 3 + q] + s * dA * K2[p * 3 + q] + c * (dKK + KdK);
        acc += gR[p * 3 + q] * dR;
      }
    g[i] = acc;
  }
  return g;
}
