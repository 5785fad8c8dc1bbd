#version 450
layout(location = 0) in vec2 bary;
layout(location = 1) flat in int face1;
layout(location = 0) out int faceId;
layout(location = 1) out vec2 barycentrics;

void main() {
  faceId = face1;
  barycentrics = bary;
}
