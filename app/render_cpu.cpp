// `armature model render`: poses a model with the CPU reference and draws it with a small CPU z-buffer
// rasteriser into a PNG (several poses side by side). For pictures in the README and a quick look at a file.
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/commands.h"
#include "app/poses.h"
#include "armature/body/body_model.h"
#include "armature/error.h"

namespace armature::app {

namespace {

struct Image {
  int w, h;
  std::vector<uint8_t> rgb;
  std::vector<float> depth;
};

// Orthographic front view of one posed mesh into the image's column range [x0, x0 + width).
void drawMesh(Image& img, int x0, int width, const std::vector<double>& verts, const std::vector<int32_t>& faces,
              double yaw) {
  size_t V = verts.size() / 3;
  double cy = std::cos(yaw), sy = std::sin(yaw);
  std::vector<double> p(V * 3);
  double lo[2] = {1e9, 1e9}, hi[2] = {-1e9, -1e9};
  for (size_t v = 0; v < V; ++v) {
    double x = verts[v * 3], y = verts[v * 3 + 1], z = verts[v * 3 + 2];
    p[v * 3] = cy * x + sy * z;
    p[v * 3 + 1] = y;
    p[v * 3 + 2] = -sy * x + cy * z;
    for (int k = 0; k < 2; ++k)
      lo[k] = std::min(lo[k], p[v * 3 + size_t(k)]), hi[k] = std::max(hi[k], p[v * 3 + size_t(k)]);
  }
  double scale = 0.92 * std::min(width / (hi[0] - lo[0]), img.h / (hi[1] - lo[1]));
  double cx = (lo[0] + hi[0]) / 2, cyy = (lo[1] + hi[1]) / 2;
  auto sx = [&](size_t v) { return x0 + width / 2.0 + (p[v * 3] - cx) * scale; };
  auto syy = [&](size_t v) { return img.h / 2.0 - (p[v * 3 + 1] - cyy) * scale; };
  const double light[3] = {-0.4, 0.6, 0.7};
  for (size_t f = 0; f < faces.size(); f += 3) {
    size_t a = size_t(faces[f]), b = size_t(faces[f + 1]), c = size_t(faces[f + 2]);
    double e1[3], e2[3], n[3];
    for (int k = 0; k < 3; ++k)
      e1[k] = p[b * 3 + size_t(k)] - p[a * 3 + size_t(k)], e2[k] = p[c * 3 + size_t(k)] - p[a * 3 + size_t(k)];
    n[0] = e1[1] * e2[2] - e1[2] * e2[1];
    n[1] = e1[2] * e2[0] - e1[0] * e2[2];
    n[2] = e1[0] * e2[1] - e1[1] * e2[0];
    double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (len == 0 || n[2] <= 0) continue;  // back-facing
    double ll = std::sqrt(light[0] * light[0] + light[1] * light[1] + light[2] * light[2]);
    double diffuse = std::max(0.0, (n[0] * light[0] + n[1] * light[1] + n[2] * light[2]) / (len * ll));
    double hemi = 0.5 + 0.5 * n[1] / len;
    double shade = 0.18 + 0.62 * diffuse + 0.2 * hemi;
    double X[3] = {sx(a), sx(b), sx(c)}, Y[3] = {syy(a), syy(b), syy(c)},
           Z[3] = {p[a * 3 + 2], p[b * 3 + 2], p[c * 3 + 2]};
    int minx = std::max(x0, int(std::floor(std::min({X[0], X[1], X[2]})))),
        maxx = std::min(x0 + width - 1, int(std::ceil(std::max({X[0], X[1], X[2]}))));
    int miny = std::max(0, int(std::floor(std::min({Y[0], Y[1], Y[2]})))),
        maxy = std::min(img.h - 1, int(std::ceil(std::max({Y[0], Y[1], Y[2]}))));
    double area = (X[1] - X[0]) * (Y[2] - Y[0]) - (X[2] - X[0]) * (Y[1] - Y[0]);
    if (area == 0) continue;
    for (int y = miny; y <= maxy; ++y)
      for (int x = minx; x <= maxx; ++x) {
        double px = x + 0.5, py = y + 0.5;
        double w0 = ((X[1] - px) * (Y[2] - py) - (X[2] - px) * (Y[1] - py)) / area;
        double w1 = ((X[2] - px) * (Y[0] - py) - (X[0] - px) * (Y[2] - py)) / area;
        double w2 = 1 - w0 - w1;
        if (w0 < 0 || w1 < 0 || w2 < 0) continue;
        float z = float(w0 * Z[0] + w1 * Z[1] + w2 * Z[2]);
        size_t i = size_t(y) * size_t(img.w) + size_t(x);
        if (z <= img.depth[i]) continue;
        img.depth[i] = z;
        img.rgb[i * 3] = uint8_t(std::min(255.0, 235 * shade));
        img.rgb[i * 3 + 1] = uint8_t(std::min(255.0, 190 * shade));
        img.rgb[i * 3 + 2] = uint8_t(std::min(255.0, 165 * shade));
      }
  }
}

}  // namespace

int runModelRender(const std::string& modelPath, const std::string& out, const std::vector<std::string>& poses,
                   int height, double yawDegrees) {
  BodyModel m = loadBodyModel(modelPath);
  ARM_CHECK(!poses.empty(), "model render: name at least one pose");
  int panel = height * 3 / 4;
  Image img{panel * int(poses.size()), height, {}, {}};
  img.rgb.assign(size_t(img.w) * size_t(img.h) * 3, 0);
  for (size_t i = 0; i < img.rgb.size(); i += 3) {
    size_t row = i / 3 / size_t(img.w);
    uint8_t g = uint8_t(60 - 30 * double(row) / img.h);
    img.rgb[i] = g, img.rgb[i + 1] = uint8_t(g + 4), img.rgb[i + 2] = uint8_t(g + 12);
  }
  img.depth.assign(size_t(img.w) * size_t(img.h), -1e30f);
  for (size_t k = 0; k < poses.size(); ++k) {
    BodyParams params = posePreset(m, poses[k]);
    BodyOutput o = bodyForwardRef(m, params);
    drawMesh(img, int(k) * panel, panel, o.vertices, m.faces, yawDegrees * 3.141592653589793 / 180);
  }
  if (!stbi_write_png(out.c_str(), img.w, img.h, 3, img.rgb.data(), img.w * 3)) throw Error(out + ": cannot write PNG");
  std::printf("wrote %s (%dx%d): %zu pose(s) of %s\n", out.c_str(), img.w, img.h, poses.size(), modelPath.c_str());
  return 0;
}

}  // namespace armature::app
