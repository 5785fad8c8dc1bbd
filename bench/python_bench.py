"""Armature's ops called from PyTorch (python/armature, CUDA tensors, autograd included), beside the best plain-PyTorch
way on the same GPU, on the workloads of the C++ benchmark and the PyTorch baselines (gaussian_torch.py,
joint_propagation_torch.py): the dense Gaussian field against the expanded quadratic form, joint propagation
against pointer jumping, deformable aggregation (SparseDrive's sizes) against grid_sample, SMPL-X through
armature.smplx against smplx's lbs() eager and replayed as a CUDA graph (smplx_torch.py; the default avatar at
$ARMATURE_DEFAULT_MODEL), and the fixed cost of a call from Python (host time of a call whose GPU work is
negligible, launch included). Medians of CUDA-event-timed calls after warm-up.
Usage: PYTHONPATH=python python3 bench/python_bench.py [OUT.json]
"""
import ctypes
import os
import time

import torch

import gaussian_torch
import joint_propagation_torch as jp
import smplx_torch
from torch_timing import Rows, time_ms

import armature.smplx
from armature import _core, _lib

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


def graphed(step, inputs):
    """A CUDA graph of step(*inputs) (its forward, or forward and torch.autograd.grad) on static inputs: replay()."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up on a side stream, as torch.cuda.graph's recipe asks
            step(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(*inputs)
    return graph.replay


def skinning(out):
    """SMPL-X forward, and forward + backward from a given gradient of the vertices (as the C++ benchmark's), at
    batch 1 and 4,096: armature.smplx as users call it (eager, and captured in a CUDA graph: its calls launch on
    torch's stream into torch's memory, so they capture), and lbs() eager and as a CUDA graph."""
    path = os.environ["ARMATURE_DEFAULT_MODEL"]
    ref = smplx_torch.Model(path, DEV)
    gen = torch.Generator(device=DEV).manual_seed(7)
    for B in (1, 4096):
        r = lambda *shape, scale=0.3: ((torch.rand(*shape, device=DEV, generator=gen) * 2 - 1) * scale)
        p = dict(betas=r(B, 10, scale=1), expression=r(B, 10, scale=1), global_orient=r(B, 3), body_pose=r(B, 63),
                 jaw_pose=r(B, 3), leye_pose=r(B, 3), reye_pose=r(B, 3), left_hand_pose=r(B, 6, scale=1),
                 right_hand_pose=r(B, 6, scale=1), transl=r(B, 3))
        p = {k: v.requires_grad_() for k, v in p.items()}
        model = armature.smplx.SMPLX(path, num_betas=10, num_expression_coeffs=10, batch_size=B).to(DEV)
        grad = r(B, 10475, 3)
        names = list(p)

        def module_step(*a):  # gradients returned, not accumulated: as the lbs rows' step
            return torch.autograd.grad(model(**dict(zip(names, a))).vertices, a, grad)

        with torch.no_grad():
            fwd = time_ms(lambda: model(**p))
        both = time_ms(lambda: module_step(*p.values()), 50 if B == 1 else 5, warmup=3)
        out.add("armature.smplx", "smplx", B, fwd, both)

        try:
            with torch.no_grad():
                fwd = time_ms(graphed(lambda *a: model(**dict(zip(names, a))), tuple(p.values())))
            both = time_ms(graphed(module_step, tuple(p.values())), 20 if B == 1 else 5, warmup=3)
            out.add("armature.smplx cuda-graph", "smplx", B, fwd, both)
        except RuntimeError as e:  # a capture the library breaks: say so, keep the other rows
            print(f"armature.smplx cuda-graph, batch {B}: capture failed: {e}", flush=True)

        pose = r(B, 55 * 3).requires_grad_()
        shape = r(B, 20, scale=1).requires_grad_()
        transl = r(B, 3).requires_grad_()
        inputs = (pose, shape, transl)
        forward = lambda *a: smplx_torch.lbs(ref, *a)

        def step(*a):
            return torch.autograd.grad(forward(*a)[0], a, grad)

        with torch.no_grad():
            fwd = time_ms(lambda: forward(*inputs))
        both = time_ms(lambda: step(*inputs), 5, warmup=2)
        out.add("torch lbs eager", "smplx", B, fwd, both)
        with torch.no_grad():
            fwd = time_ms(graphed(forward, inputs))
        both = time_ms(graphed(step, inputs), 5, warmup=2)
        out.add("torch lbs cuda-graph", "smplx", B, fwd, both)
        del model, p, inputs
        torch.cuda.empty_cache()


def host_ms(fn, calls=1000, passes=7):
    """Host time of one call of fn: the median over passes of calls made back to back (one pass can meet a stall of
    the host: a virtual machine's, or the collector's)."""
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / calls * 1e3)
    return sorted(times)[passes // 2]


def overhead(out):
    """Host time per call of a 1-point, 1-Gaussian field (its GPU work is negligible), against torch's add, and the
    floor under it: the same C call from Python with its descriptions and output made once (launch included). Then
    the same field's forward and backward through torch.autograd.grad, against one torch multiply's: autograd's own
    cost of a round trip, which no op called from PyTorch avoids."""
    x, mu, raw, w = (torch.zeros(1, k, device=DEV) for k in (3, 3, 6, 1))
    call = _core.Call()  # what gaussian_field describes, kept for the floor's row
    inputs = _lib.GaussianFieldInputs(call.input("points", x, (1, 3)), call.input("means", mu, (1, 3)),
                                      call.input("cholesky", raw, (1, 6)), call.input("weights", w, (1, 1)), None)
    field = call.out((1, 1))
    stream = torch.cuda.current_stream().cuda_stream
    e = ctypes.byref(_lib.Exec(_lib.CUDA, 0, stream))
    c_call = lambda: _lib.lib.armature_gaussian_field(call.handle, e, ctypes.byref(inputs), field, None)
    for method, fn in (("armature", lambda: gaussian_field(x, mu, raw, w)), ("armature C call", c_call),
                       ("torch add", lambda: x.add(1))):
        out.add(method, "per-call host time", 1, host_ms(fn), None)
    call.run(lambda dev, e: 0)  # releases its descriptions
    params = [t.clone().requires_grad_() for t in (x, mu, raw, w)]
    g = torch.ones(1, 1, device=DEV)
    for method, fn in (("armature", lambda: gaussian_field(*params)), ("torch mul", lambda: params[0] * 2)):
        with torch.no_grad():
            fwd = time_ms(fn, 100, warmup=10)
        both = time_ms(lambda: torch.autograd.grad(fn(), params[:1] if method == "torch mul" else params,
                                                   g.expand(1, 3) if method == "torch mul" else g), 100, warmup=10)
        out.add(method, "autograd round trip", 1, fwd, both)


def main():
    out = Rows()
    overhead(out)
    skinning(out)
    gaussians(out)
    joints(out)
    aggregation(out)
    out.write()


if __name__ == "__main__":
    main()
