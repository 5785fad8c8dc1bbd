"""Fit SMPL-X to 2D keypoints with Adam, as SMPLify-style code does with smplx: the pose, shape and translation that
project the model's joints (the skeleton's, the vertex-selected ones and the face landmarks) onto given image
points. The targets are a random body's own joints seen by a pinhole camera, so the fit's 3D error can be reported
beside its reprojection error. CUDA when torch has it; otherwise the CPU reference, or --backend vulkan.

    PYTHONPATH=python python3 examples/python/fit_smplx_keypoints.py MODEL.npz [--iterations 200] [--batch 1]
"""
import argparse
import sys
import time

import torch

import armature.smplx as smplx

FOCAL, CENTRE = 1000.0, 256.0  # a 512 × 512 image


def project(points):
    """Pinhole projection of camera-space points (B,K,3), the camera at the origin looking along +z."""
    return FOCAL * points[..., :2] / points[..., 2:] + CENTRE


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="an SMPL-X model file (.npz)")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1, help="bodies fitted at once")
    parser.add_argument("--backend", choices=["auto", "vulkan"], default="auto")
    parser.add_argument("--min-drop", type=float, default=0.0,
                        help="fail unless the reprojection error falls below this fraction of its start")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and args.backend == "auto" else "cpu"
    B = args.batch
    model = smplx.create(args.model, model_type="smplx", num_betas=10, num_expression_coeffs=10, batch_size=B,
                         backend=args.backend).to(device)

    gen = torch.Generator().manual_seed(0)
    rand = lambda *shape, scale: ((torch.rand(*shape, generator=gen) * 2 - 1) * scale).to(device)
    truth = dict(body_pose=rand(B, 63, scale=0.4), global_orient=rand(B, 3, scale=0.2), betas=rand(B, 10, scale=1.0),
                 transl=torch.tensor([[0.0, 0.2, 3.0]], device=device) + rand(B, 3, scale=0.1))
    with torch.no_grad():
        joints3d = model(**truth).joints
        keypoints = project(joints3d)

    fit = dict(body_pose=torch.zeros(B, 63, device=device), global_orient=torch.zeros(B, 3, device=device),
               betas=torch.zeros(B, 10, device=device), transl=torch.tensor([[0.0, 0.0, 3.0]] * B, device=device))
    for v in fit.values():
        v.requires_grad_()
    optimiser = torch.optim.Adam(fit.values(), lr=0.02)

    def pixels():
        """The mean distance in pixels between the fit's projected joints and the keypoints."""
        return (project(model(**fit).joints) - keypoints).norm(dim=-1).mean()

    with torch.no_grad():
        start_error = pixels().item()
    began = time.perf_counter()
    for step in range(args.iterations):
        optimiser.zero_grad()
        out = model(**fit)
        reprojection = (project(out.joints) - keypoints).square().sum(-1).mean()
        prior = 10.0 * fit["body_pose"].square().mean() + 1.0 * fit["betas"].square().mean()  # keeps it plausible
        (reprojection + prior).backward()
        optimiser.step()
        if step % max(1, args.iterations // 5) == 0:
            print(f"step {step:4d}: squared reprojection {reprojection.item():10.3f} px²")
    if device == "cuda":
        torch.cuda.synchronize()
    per_step = (time.perf_counter() - began) / max(args.iterations, 1) * 1e3
    with torch.no_grad():
        error = pixels().item()
        error3d = (model(**fit).joints - joints3d).norm(dim=-1).mean().item()
    print(f"{args.iterations} Adam steps of {B} bod{'y' if B == 1 else 'ies'} on {device} "
          f"({'vulkan' if args.backend == 'vulkan' else 'cuda' if device == 'cuda' else 'the CPU reference'}): "
          f"{per_step:.2f} ms a step; mean keypoint error {start_error:.1f} -> {error:.1f} px, "
          f"3D joint error {error3d * 1000:.1f} mm")
    if args.min_drop and not error < args.min_drop * start_error:
        sys.exit(f"the fit did not converge: {error:.1f} px is not below {args.min_drop} x {start_error:.1f} px")


if __name__ == "__main__":
    main()
