"""Fit a learnable Gaussian field to a target field: the seed module's case (20 Gaussians, 500 iterations of Adam),
with its time and loss. CUDA when torch has it; otherwise the CPU reference, or --backend vulkan.

    PYTHONPATH=python python3 examples/python/train_gaussian_field.py [--iterations 500] [--backend vulkan]
"""
import argparse
import time

import torch

from armature.gaussian import GaussianField


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaussians", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--points", type=int, default=4096)
    parser.add_argument("--backend", choices=["auto", "vulkan"], default="auto")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and args.backend == "auto" else "cpu"
    torch.manual_seed(0)
    target = GaussianField(num_gaussians=5, volume_size=4.0, device=device, backend=args.backend)
    points = (torch.rand(args.points, 3, device=device) - 0.5) * 4
    with torch.no_grad():
        wanted = target(points) * 10
    model = GaussianField(num_gaussians=args.gaussians, volume_size=4.0, device=device, backend=args.backend)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.02)
    start = time.perf_counter()
    for step in range(args.iterations):
        optimiser.zero_grad()
        loss = (model(points) - wanted).square().mean()
        loss.backward()
        optimiser.step()
        if step == 0:
            first = loss.item()
    final = loss.item()
    seconds = time.perf_counter() - start
    where = "cuda" if device == "cuda" else ("vulkan" if args.backend == "vulkan" else "cpu reference")
    print(f"{args.gaussians} Gaussians, {args.iterations} iterations on {where}: loss {first:.4g} -> {final:.4g} "
          f"in {seconds:.2f} s ({seconds / args.iterations * 1e3:.2f} ms per iteration)")
    if not final < 0.5 * first:
        raise SystemExit("the fit did not converge")


if __name__ == "__main__":
    main()
