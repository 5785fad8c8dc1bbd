// Vertex v's skinning transform for item b, T = Σ_j w_vj A_j (3×4, row-major), from the sparse weights (CSR). The
// including shader declares the buffers transforms, weightStart, weightJoint and weightValue and the push p.
void blendTransform(uint b, uint v, out float T[12]) {
  uint abase = b * p.jointCount * 12;
  for (uint q = 0; q < 12; ++q) T[q] = 0.0;
  for (uint e = weightStart[v]; e < weightStart[v + 1]; ++e) {
    float w = weightValue[e];
    uint a = abase + weightJoint[e] * 12;
    for (uint q = 0; q < 12; ++q) T[q] += w * transforms[a + q];
  }
}
