// Triangle rasteriser: perspective-correct barycentrics at a pixel centre (double, float with an accuracy
// certificate, and integer forms) and their backward through clip space.
#ifndef ARMATURE_RASTER_WEIGHTS_H
#define ARMATURE_RASTER_WEIGHTS_H
#include "raster_arith.h"

// Perspective-correct barycentrics at pixel centre (cx, cy) of the triangle with screen coordinates (sx, sy)
// and clip w: screen-space weights, divided by w, renormalised. Returns weight k.
ARM_FN RasterReal rasterBary(RasterReal sx0, RasterReal sy0, RasterReal sx1, RasterReal sy1, RasterReal sx2,
                             RasterReal sy2, RasterReal w0, RasterReal w1, RasterReal w2, RasterReal cx, RasterReal cy,
                             int k) {
  RasterReal area = (sx1 - sx0) * (sy2 - sy0) - (sy1 - sy0) * (sx2 - sx0);
  RasterReal b0 = ((sx2 - sx1) * (cy - sy1) - (sy2 - sy1) * (cx - sx1)) / area;
  RasterReal b1 = ((sx0 - sx2) * (cy - sy2) - (sy0 - sy2) * (cx - sx2)) / area;
  RasterReal p0 = b0 / w0, p1 = b1 / w1, p2 = (RasterReal(1) - b0 - b1) / w2;
  RasterReal sum = p0 + p1 + p2;
  return (k == 0 ? p0 : (k == 1 ? p1 : p2)) / sum;
}

// The same three weights with one division instead of rasterBary's six, for the GPU resolve: with e_k twice the
// signed screen area of (pixel centre, v_{k+1}, v_{k+2}), b_k/w_k is proportional to e_k·w_{k+1}·w_{k+2}. The screen
// coordinates are the reference's (the same float NDC), so the two differ by rounding only.
ARM_SHARED_STRUCT(RasterWeights) {
  RasterReal b0, b1, b2;
};
ARM_FN RasterWeights rasterPerspectiveWeights(RasterReal sx0, RasterReal sy0, RasterReal sx1, RasterReal sy1,
                                              RasterReal sx2, RasterReal sy2, RasterReal w0, RasterReal w1,
                                              RasterReal w2, RasterReal cx, RasterReal cy) {
  RasterReal x0 = sx0 - cx, y0 = sy0 - cy, x1 = sx1 - cx, y1 = sy1 - cy, x2 = sx2 - cx, y2 = sy2 - cy;
  RasterReal p0 = (x1 * y2 - y1 * x2) * (w1 * w2), p1 = (x2 * y0 - y2 * x0) * (w2 * w0), p2 = (x0 * y1 - y0 * x1) * (w0 * w1);
  RasterReal inverseSum = RasterReal(1) / (p0 + p1 + p2);
  RasterWeights r;
  r.b0 = p0 * inverseSum, r.b1 = p1 * inverseSum, r.b2 = p2 * inverseSum;
  return r;
}

#if defined(__cplusplus) || defined(__CUDACC__)
// The same weights in float, for the CUDA resolve (half the registers of the double form, which spilled at full
// occupancy). Inputs are the corners' float NDC (x/w, y/w, the
// reference's) and w, and the pixel (px, py). Accurate only where the triangle is well conditioned at the pixel, so
// it says where: a caller falls back to rasterPerspectiveWeights elsewhere.
//  * Corner minus pixel centre, ndc·(size−1)/2 + size/2 − (p + 0.5), is one fused multiply-add of exact terms:
//    rounded once, relative error u = 2^-24.
//  * A_k = X·Y' − Y·X' by Kahan's difference of products (error ≤ 2u·|A_k|); the rounded inputs move it by up to
//    2u·m_k with m_k = |X·Y'| + |Y·X'|. Then p_k = A_k·(w·w'), the sum S and the products by 1/S: with
//    M = Σ m_k·|w·w'|, |error of b_k| ≤ u·(14.2·M/|S| + 2) for |b_k| ≤ 1.
//  * accurate: M ≤ 8·|S|, so the error is at most 6.9e-6, under the 1e-5 every backend is held to. A typical
//    pixel inside a triangle has M/S ≈ 1–3; slivers and pixels far from a tiny triangle's corners take the fallback.
ARM_SHARED_STRUCT(RasterFloatWeights) {
  float b0, b1, b2;
  bool accurate;
};
ARM_FN float rasterFmaf(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return fmaf(a, b, c);
#endif
}
ARM_FN float rasterDiffOfProducts(float a, float b, float c, float d) {
  const float cd = c * d;
  return rasterFmaf(a, b, -cd) + rasterFmaf(-c, d, cd);
}
ARM_FN RasterFloatWeights rasterPerspectiveWeightsFloat(float nx0, float ny0, float w0, float nx1, float ny1, float w1,
                                                        float nx2, float ny2, float w2, uint px, uint py, uint width,
                                                        uint height) {
  const float hx = float(width - 1u) * 0.5f, hy = float(height - 1u) * 0.5f;  // exact: sizes below 2^24
  const float ox = hx - float(px), oy = hy - float(py);                      // exact half-integers
  const float x0 = rasterFmaf(nx0, hx, ox), y0 = rasterFmaf(ny0, hy, oy), x1 = rasterFmaf(nx1, hx, ox);
  const float y1 = rasterFmaf(ny1, hy, oy), x2 = rasterFmaf(nx2, hx, ox), y2 = rasterFmaf(ny2, hy, oy);
  const float w12 = w1 * w2, w20 = w2 * w0, w01 = w0 * w1;
  const float p0 = rasterDiffOfProducts(x1, y2, y1, x2) * w12, p1 = rasterDiffOfProducts(x2, y0, y2, x0) * w20,
              p2 = rasterDiffOfProducts(x0, y1, y0, x1) * w01;
  const float sum = p0 + p1 + p2;
  const float bound = (fabsf(x1 * y2) + fabsf(y1 * x2)) * fabsf(w12) + (fabsf(x2 * y0) + fabsf(y2 * x0)) * fabsf(w20) +
                      (fabsf(x0 * y1) + fabsf(y0 * x1)) * fabsf(w01);
  const float inverse = 1.0f / sum;
  RasterFloatWeights r;
  r.b0 = p0 * inverse, r.b1 = p1 * inverse, r.b2 = p2 * inverse;
  r.accurate = bound <= 8.0f * fabsf(sum);  // false for NaN or a zero sum
  return r;
}
#endif

// The backward of rasterPerspectiveWeights through clip space: given dL/db_k at pixel centre (cx, cy) of the face
// with clip x, y, w per corner (screen = (x/w)·(size-1)/2 + size/2, as rasterScreen), dL/dx_k, dL/dy_k, dL/dw_k.
// With A_k twice the signed screen area of (pixel, v_{k+1}, v_{k+2}), p_k = A_k·w_{k+1}·w_{k+2} and b_k = p_k / Σp:
// dL/dp_j = (g_j − Σ g_k b_k) / Σp, then through A_k (bilinear in the corners' screen offsets) and the direct w
// factors, then the perspective divide. z moves depth only: no barycentric depends on it.
ARM_SHARED_STRUCT(RasterCornerGrads) {
  RasterReal x0, y0, w0, x1, y1, w1, x2, y2, w2;
};
ARM_FN RasterCornerGrads rasterPerspectiveWeightsBackward(RasterReal x0, RasterReal y0, RasterReal w0, RasterReal x1,
                                                          RasterReal y1, RasterReal w1, RasterReal x2, RasterReal y2,
                                                          RasterReal w2, uint width, uint height, RasterReal cx,
                                                          RasterReal cy, RasterReal g0, RasterReal g1, RasterReal g2) {
  RasterReal hx = RasterReal(width - 1u) * RasterReal(0.5), hy = RasterReal(height - 1u) * RasterReal(0.5);
  RasterReal ox = hx + RasterReal(0.5) - cx, oy = hy + RasterReal(0.5) - cy;  // screen offset minus the pixel centre
  RasterReal X0 = x0 / w0 * hx + ox, Y0 = y0 / w0 * hy + oy, X1 = x1 / w1 * hx + ox, Y1 = y1 / w1 * hy + oy;
  RasterReal X2 = x2 / w2 * hx + ox, Y2 = y2 / w2 * hy + oy;
  RasterReal A0 = X1 * Y2 - Y1 * X2, A1 = X2 * Y0 - Y2 * X0, A2 = X0 * Y1 - Y0 * X1;
  RasterReal p0 = A0 * (w1 * w2), p1 = A1 * (w2 * w0), p2 = A2 * (w0 * w1), inverseSum = RasterReal(1) / (p0 + p1 + p2);
  RasterReal gb = (g0 * p0 + g1 * p1 + g2 * p2) * inverseSum;
  RasterReal q0 = (g0 - gb) * inverseSum, q1 = (g1 - gb) * inverseSum, q2 = (g2 - gb) * inverseSum;  // dL/dp_k
  RasterReal a0 = q0 * (w1 * w2), a1 = q1 * (w2 * w0), a2 = q2 * (w0 * w1);                            // dL/dA_k
  RasterReal dX0 = a2 * Y1 - a1 * Y2, dY0 = a1 * X2 - a2 * X1;
  RasterReal dX1 = a0 * Y2 - a2 * Y0, dY1 = a2 * X0 - a0 * X2;
  RasterReal dX2 = a1 * Y0 - a0 * Y1, dY2 = a0 * X1 - a1 * X0;
  RasterCornerGrads r;
  r.x0 = dX0 * hx / w0, r.y0 = dY0 * hy / w0;
  r.x1 = dX1 * hx / w1, r.y1 = dY1 * hy / w1;
  r.x2 = dX2 * hx / w2, r.y2 = dY2 * hy / w2;
  r.w0 = q1 * A1 * w2 + q2 * A2 * w1 - (r.x0 * x0 + r.y0 * y0) / w0;
  r.w1 = q0 * A0 * w2 + q2 * A2 * w0 - (r.x1 * x1 + r.y1 * y1) / w1;
  r.w2 = q0 * A0 * w1 + q1 * A1 * w0 - (r.x2 * x2 + r.y2 * y2) / w2;
  return r;
}

// rasterPerspectiveWeights for devices without doubles, in integers: the corners to 2^-46 pixel (the double form
// rounds them to 53 bits), exact 128-bit cross products, each p_k kept to 61 bits, the three aligned and summed
// exactly, and each weight the rounded ratio: within about an ulp of the double form's weight rounded to float.
ARM_FN RasterWeights rasterPerspectiveWeightsInteger(float nx0, float ny0, float w0, float nx1, float ny1, float w1,
                                                     float nx2, float ny2, float w2, uint px, uint py, uint width,
                                                     uint height) {
  const int64_t x[3] = {rasterCornerFixed(nx0, width, px), rasterCornerFixed(nx1, width, px),
                        rasterCornerFixed(nx2, width, px)};
  const int64_t y[3] = {rasterCornerFixed(ny0, height, py), rasterCornerFixed(ny1, height, py),
                        rasterCornerFixed(ny2, height, py)};
  const RasterFloatParts w[3] = {rasterFloatParts(w0), rasterFloatParts(w1), rasterFloatParts(w2)};
  int64_t p[3];
  int e[3];
  int top = -2147483647;
  for (int k = 0; k < 3; ++k) {
    const int i = (k + 1) % 3, j = (k + 2) % 3;
    const RasterWide cross = rasterWideDifference(rasterWideProduct(x[i], y[j]), rasterWideProduct(y[i], x[j]));
    const RasterScaled area = rasterWideScaled(cross, 62);
    const RasterScaled scaled = rasterWideScaled(rasterWideProduct(area.m, w[i].m * w[j].m), 61);
    p[k] = scaled.m, e[k] = area.shift + scaled.shift + w[i].e + w[j].e;
    if (p[k] != int64_t(0) && e[k] > top) top = e[k];
  }
  int64_t sum = int64_t(0);
  for (int k = 0; k < 3; ++k) {
    const int drop = top - e[k];
    const int64_t kept = drop >= 63 ? int64_t(0) : int64_t(rasterMagnitude(p[k]) >> drop);  // toward zero
    p[k] = p[k] < int64_t(0) ? -kept : kept;
    sum += p[k];
  }
  RasterWeights r;
  if (sum == int64_t(0)) {  // a degenerate face: as the double form, not finite
    const float zero = float(sum);
    r.b0 = RasterReal(float(p[0]) / zero), r.b1 = RasterReal(float(p[1]) / zero), r.b2 = RasterReal(float(p[2]) / zero);
    return r;
  }
  r.b0 = RasterReal(rasterRatio(p[0], sum)), r.b1 = RasterReal(rasterRatio(p[1], sum));
  r.b2 = RasterReal(rasterRatio(p[2], sum));
  return r;
}

#endif
