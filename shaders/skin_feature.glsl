// Feature f of item b, the blend product's input: the pose features R_j - I of every joint but the root (from
// Rodrigues), then the shape and expression coefficients, F = 9(J-1) + K per item. The including shader declares
// the buffers pose[], betas[] and expression[] and the push constants p.
float skinFeature(uint b, uint f) {
  if (f < p.featureCount) {
    uint e = f % 9, pb = (b * p.jointCount + f / 9 + 1) * 3;
    SkinMat3 R = skinRodrigues(SkinVec3(float[3](pose[pb], pose[pb + 1], pose[pb + 2])));
    return R.m[e] - ((e % 4 == 0) ? 1.0 : 0.0);
  }
  uint k = f - p.featureCount, S = p.shapeCount, E = p.coefCount - S;
  return k < S ? betas[b * S + k] : expression[b * E + (k - S)];
}
