// The points and the grid of the culled Gaussian field's shaders (shared/gaussian_grid_io.h), and the grid's header.
layout(std430, binding = GAUSSIAN_GRID_BINDING_POINTS) readonly buffer Points { float points[]; };
layout(std430, binding = GAUSSIAN_GRID_BINDING_GRID) buffer Grid { uint grid[]; };
layout(push_constant) uniform Push { GaussianGridPush p; };

float gridLo(uint k) { return gaussianFromOrderedBits(grid[GAUSSIAN_GRID_LO + k]); }
float gridHi(uint k) { return gaussianFromOrderedBits(grid[GAUSSIAN_GRID_HI + k]); }
float gridEdge() { return uintBitsToFloat(grid[GAUSSIAN_GRID_EDGE]); }
uint gridDim(uint k) { return grid[GAUSSIAN_GRID_DIMS + k]; }

// The cell of a point at x, or false when it is outside the grid's box (no Gaussian of a cell reaches it).
bool cellOf(float x[3], out uint cell) {
  cell = 0u;
  if (!gaussianFinite3(x[0], x[1], x[2])) return false;
  uint index[3];
  for (uint k = 0u; k < 3u; ++k) {
    if (!(x[k] >= gridLo(k) && x[k] <= gridHi(k))) return false;
    index[k] = gaussianGridAxis(x[k], gridLo(k), gridEdge(), gridDim(k));
  }
  cell = (index[2] * gridDim(1) + index[1]) * gridDim(0) + index[0];
  return true;
}

// Point b's cell, or false when it is outside the grid's box.
bool pointCell(uint b, out uint cell) {
  return cellOf(float[3](points[b * 3u], points[b * 3u + 1u], points[b * 3u + 2u]), cell);
}
