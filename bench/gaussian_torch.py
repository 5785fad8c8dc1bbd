"""PyTorch baselines for armature-bench gaussian, run beside it on the GPU machine: the dense field
f(x) = sum_i w_i exp(-1/2 |L_i^-1 (x - mu_i)|^2), L^-1 from the same log-diagonal parametrisation, two ways:
  - "einsum": differences and L^-1 (x - mu) per pair by einsum (the direct form; the largest size is left out: it
    took 7.9 s forward and 24.6 s forward + backward on an H200);
  - "matmul": the quadratic form expanded, m = phi(x) . psi_i with phi(x) = (x^2, y^2, z^2, xy, xz, yz, x, y, z, 1)
    and psi_i from P_i = A_i^T A_i and mu_i, so the distances of a chunk are one fp32 matrix product (fast, but it
    cancels terms of size |P||x|^2: the precision the direct form keeps is lost for small or far Gaussians).
Both over chunks of points so that the intermediates fit, forward and forward + backward (autograd of a weighted sum,
every input's gradient, a chunk's graph freed by its backward). Medians of CUDA-event-timed calls after warm-up.
Usage: python3 gaussian_torch.py [OUT.json]
"""
import math

import torch

from torch_timing import Rows, time_ms

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


def einsum_chunk(x, mu, raw, w):
    d = x[:, None, :] - mu[None]  # (b, N, 3)
    z = torch.einsum("nij,bnj->bni", inverse_cholesky(raw), d)
    return torch.exp(-0.5 * (z * z).sum(-1)) @ w  # (b, C)


def matmul_chunk(x, mu, raw, w):
    a = inverse_cholesky(raw)
    p = a.transpose(1, 2) @ a  # (N, 3, 3)
    pm = (p @ mu[:, :, None])[..., 0]
    psi = torch.cat([p[:, 0, 0:1], p[:, 1, 1:2], p[:, 2, 2:3], 2 * p[:, 0, 1:2], 2 * p[:, 0, 2:3], 2 * p[:, 1, 2:3],
                     -2 * pm, (mu * pm).sum(-1, keepdim=True)], -1)  # (N, 10)
    X, Y, Z = x.unbind(-1)
    phi = torch.stack([X * X, Y * Y, Z * Z, X * Y, X * Z, Y * Z, X, Y, Z, torch.ones_like(X)], -1)  # (b, 10)
    return torch.exp(-0.5 * (phi @ psi.T)) @ w


def field(chunk_fn, x, mu, raw, w, chunk):
    return torch.cat([chunk_fn(x[s:s + chunk], mu, raw, w) for s in range(0, x.shape[0], chunk)])


def field_backward(chunk_fn, x, mu, raw, w, g, chunk):
    """The forward and backward a chunk at a time (each chunk's graph freed by its backward; gradients accumulate)."""
    for s in range(0, x.shape[0], chunk):
        (chunk_fn(x[s:s + chunk], mu, raw, w) * g[s:s + chunk]).sum().backward()


def main():
    out = Rows()
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
        for method, chunk_fn in (("einsum", einsum_chunk), ("matmul", matmul_chunk)):
            if method == "einsum" and n * b > 1e9:
                continue
            with torch.no_grad():
                fwd = time_ms(lambda: field(chunk_fn, x, mu, raw, w, chunk), iters)
            both = time_ms(lambda: field_backward(chunk_fn, x, mu, raw, w, g, chunk), max(3, iters // 2), warmup=1)
            out.add(method, f"{n}x{b}", b, fwd, both)
    out.write()


if __name__ == "__main__":
    main()
