"""Armature's ops called from PyTorch (python/armature, CUDA tensors, autograd included), beside the best plain-PyTorch
way on the same GPU, on the workloads of the C++ benchmark and the PyTorch baselines (gaussian_torch.py,
joint_propagation_torch.py): the dense Gaussian field against the expanded quadratic form, joint propagation
against pointer jumping, deformable aggregation (SparseDrive's sizes) against grid_sample, and the fixed cost of a
call from Python (host time of a call whose GPU work is negligible, launch included). Medians of CUDA-event-timed
calls after warm-up. Usage: PYTHONPATH=python python3 bench/python_bench.py [OUT.json]
"""
import time

import torch

import gaussian_torch
import joint_propagation_torch as jp
from torch_timing import Rows, time_ms

from armature.gaussian import gaussian_field
from armature.joints import JointForest
from armature.sparsedrive import (deformable_aggregation_function, deformable_aggregation_grid_sample,
                                  feature_maps_format)

DEV = "cuda"


def gaussians(out):
    gen = torch.Generator(device=DEV).manual_seed(5)
    for n, b in [(1000, 500), (10000, 100000)]:
        x = (torch.rand(b, 3, device=DEV, generator=gen) * 2 - 1).requires_grad_()
        mu = (torch.rand(n, 3, device=DEV, generator=gen) * 2 - 1).requires_grad_()
        raw = torch.rand(n, 6, device=DEV, generator=gen) * 0.2 - 0.1
        raw[:, [0, 2, 5]] = torch.empty(n, 3, device=DEV).uniform_(-3.0, -1.2, generator=gen)
        raw.requires_grad_()
        w = (torch.rand(n, 1, device=DEV, generator=gen) * 2 - 1).requires_grad_()
        g = torch.rand(b, 1, device=DEV, generator=gen) * 2 - 1
        with torch.no_grad():
            fwd = time_ms(lambda: gaussian_field(x, mu, raw, w))
        both = time_ms(lambda: gaussian_field(x, mu, raw, w).backward(g), 5, warmup=2)
        out.add("armature", f"gaussian {n}x{b}", b, fwd, both)
        chunk = max(1, min(b, (1 << 28) // (n * 3)))
        with torch.no_grad():
            fwd = time_ms(lambda: gaussian_torch.field(gaussian_torch.matmul_chunk, x, mu, raw, w, chunk))
        both = time_ms(lambda: gaussian_torch.field_backward(gaussian_torch.matmul_chunk, x, mu, raw, w, g, chunk), 5,
                       warmup=2)
        out.add("torch matmul", f"gaussian {n}x{b}", b, fwd, both)


def joints(out):
    for name, parents, batch in [("smplx", jp.smplx_parents(), 65536), ("random100k", jp.random_tree(100000), 1)]:
        n = len(parents)
        q = torch.randn(batch, n, 4, device=DEV)
        q = (q / q.norm(dim=-1, keepdim=True)).requires_grad_()
        t = (0.1 * torch.randn(batch, n, 3, device=DEV)).requires_grad_()
        forest = JointForest(parents)
        g = torch.full((batch, n, 3, 4), 0.01, device=DEV)
        with torch.no_grad():
            fwd = time_ms(lambda: forest(rotations=q, translations=t))
        both = time_ms(lambda: forest(rotations=q, translations=t).globals.backward(g), 5, warmup=2)
        out.add("armature", f"joints {name}", batch, fwd, both)
        prop = jp.PointerJumping(parents)
        weights = torch.full((batch, n, 4, 4), 0.01, device=DEV)
        with torch.no_grad():
            fwd = time_ms(lambda: prop(jp.local_matrices(q, t)))
        both = time_ms(lambda: (prop(jp.local_matrices(q, t)) * weights).sum().backward(), 5, warmup=1)
        out.add("torch pointer-jumping", f"joints {name}", batch, fwd, both)


def aggregation(out):
    gen = torch.Generator(device=DEV).manual_seed(7)
    bs, cams, C, anchors, pts, groups = 1, 6, 256, 900, 13, 8
    levels = [torch.randn(bs, cams, C, h, w, device=DEV, generator=gen)
              for h, w in [(64, 176), (32, 88), (16, 44), (8, 22)]]
    loc = torch.rand(bs, anchors, pts, cams, 2, device=DEV, generator=gen).requires_grad_()
    weights = torch.rand(bs, anchors, pts, cams, len(levels), groups, device=DEV, generator=gen).requires_grad_()
    feats, shape, start = feature_maps_format(levels)
    feats.requires_grad_()
    g = torch.randn(bs, anchors, C, device=DEV, generator=gen)
    call = lambda: deformable_aggregation_function(feats, shape, start, loc, weights)
    with torch.no_grad():
        fwd = time_ms(call)
    both = time_ms(lambda: call().backward(g), 5, warmup=2)
    out.add("armature", "aggregation sparsedrive", bs, fwd, both)
    for lv in levels:
        lv.requires_grad_()
    with torch.no_grad():
        fwd = time_ms(lambda: deformable_aggregation_grid_sample(levels, loc, weights))
    both = time_ms(lambda: deformable_aggregation_grid_sample(levels, loc, weights).backward(g), 5, warmup=2)
    out.add("torch grid_sample", "aggregation sparsedrive", bs, fwd, both)


def overhead(out):
    """Host time per call of a 1-point, 1-Gaussian field (its GPU work is negligible), against torch's add."""
    x, mu, raw, w = (torch.zeros(1, k, device=DEV) for k in (3, 3, 6, 1))
    for method, fn in (("armature", lambda: gaussian_field(x, mu, raw, w)), ("torch add", lambda: x.add(1))):
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        calls = 2000
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - start) / calls * 1e3
        out.add(method, "per-call host time", 1, ms, None)


def main():
    out = Rows()
    overhead(out)
    gaussians(out)
    joints(out)
    aggregation(out)
    out.write()


if __name__ == "__main__":
    main()
