"""Render a body model's rest mesh through the custom_rasterizer API (Hunyuan3D's calls): project to clip space,
rasterize, interpolate normals, shade, and write a PGM image.

    PYTHONPATH=python python3 examples/python/render_avatar.py MODEL.npz OUT.pgm [--size 256]
"""
import argparse

import numpy as np
import torch

from armature.custom_rasterizer import interpolate, rasterize


def perspective(eye, size):
    """A camera at `eye` looking down −z at the origin, 40° field of view, column vectors."""
    f = 1 / np.tan(np.radians(20))
    near, far = 0.1, 100.0
    proj = torch.tensor([[f, 0, 0, 0], [0, f, 0, 0], [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)],
                         [0, 0, -1, 0]], dtype=torch.float32)
    view = torch.eye(4)
    view[:3, 3] = -torch.tensor(eye, dtype=torch.float32)
    return proj @ view


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("output")
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    model = np.load(args.model)
    vertices = torch.tensor(model["v_template"], dtype=torch.float32)
    faces = torch.tensor(model["f"].astype(np.int32))
    if vertices.dim() != 2 or vertices.shape[1] != 3:
        raise SystemExit(f"{args.model}: v_template has shape {tuple(vertices.shape)}, expected (V, 3)")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    lo, hi = vertices.min(0).values, vertices.max(0).values
    centre = (lo + hi) / 2
    distance = float((hi - lo).max()) * 1.6
    clip = torch.cat([vertices - centre, torch.ones(len(vertices), 1)], 1) @ perspective([0, 0, distance], args.size).T
    # Vertex normals: the sum of the adjacent faces' (area-weighted) normals.
    a, b, c = (vertices[faces[:, k].long()] for k in range(3))
    face_normals = torch.cross(b - a, c - a, dim=1)
    normals = torch.zeros_like(vertices).index_add_(0, faces.reshape(-1).long(), face_normals.repeat_interleave(3, 0))
    normals = normals / normals.norm(dim=1, keepdim=True).clamp(min=1e-12)
    findices, bary = rasterize(clip.unsqueeze(0).to(device), faces.to(device), (args.size, args.size))
    shading = interpolate(normals.to(device), findices, bary, faces.to(device))[0]
    light = torch.tensor([0.3, 0.5, 1.0], device=device)
    value = (0.2 + 0.8 * (shading @ (light / light.norm())).clamp(0, 1)) * (findices > 0)  # background black
    image = value.flip(0).mul(255).byte().cpu().numpy()  # row 0 is NDC y = −1: flip to top-down
    with open(args.output, "wb") as f:
        f.write(f"P5 {args.size} {args.size} 255\n".encode() + image.tobytes())
    print(f"wrote {args.output}: {int((findices > 0).sum())} pixels covered of {args.size * args.size}")
    if not (findices > 0).sum() > 0.05 * args.size * args.size:
        raise SystemExit("the avatar covers almost nothing")


if __name__ == "__main__":
    main()
