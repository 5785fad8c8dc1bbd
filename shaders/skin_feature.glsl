// The blend product's input per item: the pose features R_j - I of every joint but the root (from Rodrigues), then
// the shape and expression coefficients, F = 9(J-1) + K. The including shader declares the buffers pose[], betas[]
// and expression[] and the push constants p.

// Item b's rotation of joint j, and its coefficient k.
SkinMat3 skinPoseRotation(uint b, uint j) {
  uint pb = (b * p.jointCount + j) * 3;
  return skinRodrigues(SkinVec3(float[3](pose[pb], pose[pb + 1], pose[pb + 2])));
}
float skinCoefficient(uint b, uint k) {
  uint S = p.shapeCount, E = p.coefCount - S;
  return k < S ? betas[b * S + k] : expression[b * E + (k - S)];
}

// Item b's features in units: unit u < J-1 is joint u+1's nine pose features (one Rodrigues for all nine), a later
// unit one coefficient. Fills v[0..count) with features first, first + 1, ...; returns first.
uint skinFeatureUnit(uint b, uint u, out float v[9], out uint count) {
  uint joints = p.jointCount - 1;
  if (u < joints) {
    SkinMat3 R = skinPoseRotation(b, u + 1);
    for (uint e = 0; e < 9; ++e) v[e] = R.m[e] - ((e % 4 == 0) ? 1.0 : 0.0);
    count = 9;
    return u * 9;
  }
  v[0] = skinCoefficient(b, u - joints);
  count = 1;
  return p.featureCount + u - joints;
}
// Units per item.
uint skinFeatureUnits() { return p.jointCount - 1 + p.coefCount; }
