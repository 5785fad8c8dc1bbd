"""PyTorch baseline for armature-bench gaussian, run beside it on the GPU machine: the dense field
f(x) = sum_i w_i exp(-1/2 |L_i^-1 (x - mu_i)|^2) as a hand-vectorised quadratic form (L^-1 from the same
log-diagonal parametrisation, distances by einsum, the weighted sum by a matrix product), over chunks of points so
that the (points x Gaussians x 3) intermediates fit, forward and forward + backward (autograd of a weighted sum, every
input's gradient). Medians of CUDA-event-timed calls after warm-up. Usage: python3 gaussian_torch.py [OUT.json]
"""
import json
import math
import sys

import torch

DEV = "cuda"
SIZES = [(1000, 500), (10000, 100000), (100000, 1000000)]  # (Gaussians, points), as armature-bench gaussian


def inverse_cholesky(raw):
    """A = L^-1 (lower triangular) from (log l00, l10, log l11, l20, l21, log l22)."""
    l00, l10, l11, l20, l21, l22 = raw.clamp(-30, 30).unbind(-1)
    d0, d1, d2 = l00.exp(), l11.exp(), l22.exp()
    l10, l20, l21 = raw[:, 1], raw[:, 3], raw[:, 4]
    zero = torch.zeros_like(d0)
    rows = [torch.stack([1 / d0, zero, zero], -1),
            torch.stack([-l10 / (d0 * d1), 1 / d1, zero], -1),
            torch.stack([(l10 * l21 - d1 * l20) / (d0 * d1 * d2), -l21 / (d1 * d2), 1 / d2], -1)]
    return torch.stack(rows, -2)


def field_chunk(x, mu, raw, w):
    d = x[:, None, :] - mu[None]  # (b, N, 3)
    z = torch.einsum("nij,bnj->bni", inverse_cholesky(raw), d)
    return torch.exp(-0.5 * (z * z).sum(-1)) @ w  # (b, C)


def field(x, mu, raw, w, chunk):
    return torch.cat([field_chunk(x[s:s + chunk], mu, raw, w) for s in range(0, x.shape[0], chunk)])


def field_backward(x, mu, raw, w, g, chunk):
    """The forward and backward a chunk at a time (each chunk's graph freed by its backward; gradients accumulate)."""
    for s in range(0, x.shape[0], chunk):
        (field_chunk(x[s:s + chunk], mu, raw, w) * g[s:s + chunk]).sum().backward()


def time_ms(fn, iters, warmup=2):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    out = []
    gen = torch.Generator(device=DEV).manual_seed(5)
    for n, b in SIZES:
        chunk = max(1, min(b, (1 << 28) // (n * 3)))  # ~1 GB per (b, N, 3) intermediate
        x = (torch.rand(b, 3, device=DEV, generator=gen) * 2 - 1).requires_grad_()
        mu = (torch.rand(n, 3, device=DEV, generator=gen) * 2 - 1).requires_grad_()
        raw = (torch.rand(n, 6, device=DEV, generator=gen) * 0.2 - 0.1)
        raw[:, [0, 2, 5]] = torch.empty(n, 3, device=DEV).uniform_(math.log(0.05), math.log(0.3), generator=gen)
        raw.requires_grad_()
        w = (torch.rand(n, 1, device=DEV, generator=gen) * 2 - 1).requires_grad_()
        g = torch.rand(b, 1, device=DEV, generator=gen) * 2 - 1
        iters = 10 if n * b <= 1e9 else 3
        with torch.no_grad():
            fwd = time_ms(lambda: field(x, mu, raw, w, chunk), iters)

        both = time_ms(lambda: field_backward(x, mu, raw, w, g, chunk), max(3, iters // 2), warmup=1)
        row = {"method": "quadratic form", "gaussians": n, "points": b, "forward_ms": fwd, "forward_backward_ms": both}
        print(json.dumps(row), flush=True)
        out.append(row)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": out}, f, indent=1)


if __name__ == "__main__":
    main()
