"""A SparseDrive-style detection head: each anchor samples learned points in every camera's feature maps
(deformable aggregation), and a linear layer regresses a target from what it gathered; trained a few steps. Uses
Armature's op when the library loads, and a plain-PyTorch grid_sample fallback otherwise (or with --fallback).

    PYTHONPATH=python python3 examples/python/aggregation_head.py [--steps 20] [--fallback]
"""
import argparse

import torch

# The package is plain Python: its grid_sample form needs no library; the fused op needs libarmature.
from armature.sparsedrive import (deformable_aggregation_function, deformable_aggregation_grid_sample,
                                  feature_maps_format)

try:
    from armature import _lib

    _lib.lib.armature_api_version()  # loads it, or raises
    HAVE_ARMATURE = True
except Exception as e:  # noqa: BLE001 — any failure to load means the fallback
    print(f"libarmature unavailable ({e}); using grid_sample")
    HAVE_ARMATURE = False


class Head(torch.nn.Module):
    def __init__(self, channels, points, cams, levels, groups):
        super().__init__()
        self.points, self.cams, self.levels, self.groups = points, cams, levels, groups
        self.anchor = torch.nn.Parameter(torch.rand(1, 1, 2))
        self.offsets = torch.nn.Linear(channels, points * cams * 2)
        self.weights = torch.nn.Linear(channels, points * cams * levels * groups)
        self.out = torch.nn.Linear(channels, 1)

    def forward(self, queries, levels, use_armature):
        bs, anchors, _ = queries.shape
        loc = (self.anchor + 0.1 * torch.tanh(self.offsets(queries)).view(bs, anchors, -1, 2)).clamp(0.01, 0.99)
        loc = loc.view(bs, anchors, self.points, self.cams, 2)
        w = self.weights(queries).view(bs, anchors, self.points, self.cams, self.levels, self.groups).softmax(-2)
        if use_armature:
            feats, shape, start = feature_maps_format(levels)
            gathered = deformable_aggregation_function(feats, shape, start, loc, w)
        else:
            gathered = deformable_aggregation_grid_sample(levels, loc, w)
        return self.out(gathered + queries)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--fallback", action="store_true")
    args = parser.parse_args()
    use_armature = HAVE_ARMATURE and not args.fallback
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    bs, cams, C, anchors = 2, 2, 32, 50
    levels = [torch.randn(bs, cams, C, h, w, device=device) for h, w in [(16, 24), (8, 12)]]
    queries = torch.randn(bs, anchors, C, device=device)
    target = torch.randn(bs, anchors, 1, device=device)
    head = Head(C, points=4, cams=cams, levels=len(levels), groups=4).to(device)
    optimiser = torch.optim.Adam(head.parameters(), lr=1e-2)
    for step in range(args.steps):
        optimiser.zero_grad()
        loss = (head(queries, levels, use_armature) - target).square().mean()
        loss.backward()
        optimiser.step()
        if step == 0:
            first = loss.item()
    print(f"{'armature' if use_armature else 'grid_sample'} on {device}: loss {first:.4f} -> {loss.item():.4f} "
          f"after {args.steps} steps")
    if not loss.item() < first:
        raise SystemExit("the head did not learn")


if __name__ == "__main__":
    main()
