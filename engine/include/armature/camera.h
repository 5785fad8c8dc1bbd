#pragma once
// A pinhole camera's view-projection for the project's conventions: column-major (glm's layout), Vulkan clip space
// (y flipped, so the rasteriser's row 0 is the image's top; depth in [0, 1]), right-handed world with +y up.
#include <array>

namespace armature {

// Looking from `eye` at `target`, vertical field of view `fovY` (radians), width / height `aspect`, depth between the
// near and far planes.
std::array<float, 16> lookAtPerspective(const std::array<float, 3>& eye, const std::array<float, 3>& target, float fovY,
                                        float aspect, float zNear = 0.05f, float zFar = 200.f);

}  // namespace armature
