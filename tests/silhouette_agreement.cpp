// silhouette_agreement A.png B.png MIN_IOU: the body's pixels in two renderings of the same pose agree. A body pixel
// is one redder than it is blue (both renderings light the skin colour (235, 190, 165); their backgrounds are black
// or blue-grey). Prints the intersection over union of the two masks and exits 1 below MIN_IOU.
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: silhouette_agreement A.png B.png MIN_IOU\n");
    return 2;
  }
  int w[2], h[2], channels;
  unsigned char* image[2];
  for (int i = 0; i < 2; ++i) {
    image[i] = stbi_load(argv[1 + i], &w[i], &h[i], &channels, 3);
    if (!image[i]) {
      std::fprintf(stderr, "silhouette_agreement: cannot read %s\n", argv[1 + i]);
      return 2;
    }
  }
  if (w[0] != w[1] || h[0] != h[1]) {
    std::fprintf(stderr, "silhouette_agreement: %dx%d against %dx%d\n", w[0], h[0], w[1], h[1]);
    return 1;
  }
  long both = 0, either = 0;
  for (long p = 0; p < long(w[0]) * h[0]; ++p) {
    const bool a = image[0][p * 3] > image[0][p * 3 + 2], b = image[1][p * 3] > image[1][p * 3 + 2];
    both += a && b, either += a || b;
  }
  const double iou = either ? double(both) / double(either) : 0.0;
  std::printf("silhouettes: %ld pixels in both, %ld in either: IoU %.4f (at least %s)\n", both, either, iou, argv[3]);
  return either > 0 && iou >= std::atof(argv[3]) ? 0 : 1;
}
