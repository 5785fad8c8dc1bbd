"""The anisotropic Gaussian field f(x) = Σᵢ wᵢ·exp(−½‖Lᵢ⁻¹(x−μᵢ)‖²), functional and as a learnable module.

    field = armature.gaussian.gaussian_field(points, means, cholesky, weights)       # (B, C)
    model = armature.gaussian.GaussianField(num_gaussians=1000, volume_size=10.0, device="cuda")
    loss = (model(points) - target).pow(2).mean(); loss.backward()

cholesky is (N,6): the rows of L, (log l00, l10, log l11, l20, l21, log l22), the diagonal through exp (so any real
values are a valid factor); or (N,1): log σ, isotropic. Gradients flow to the points, means, every entry of L and the
weights. With epsilon > 0 the GPU backends cull: a term counts only where max_c |w_c|·exp(−m/2) ≥ epsilon (each left
out is below epsilon); the CPU reference always sums every term.
"""
import ctypes
import math

import torch

from . import _core, _lib
from ._lib import check, lib


def gaussian_field(points, means, cholesky, weights, epsilon=0.0, backend="auto"):
    """The field at points (B,3) of N Gaussians: means (N,3), cholesky (N,6) or (N,1), weights (N,C) → (B,C)."""
    if not (epsilon >= 0):
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    return _core.apply(_GaussianField, points, means, cholesky, weights, float(epsilon), backend)


_scratch = {}  # (B, N, C, backward) → the scratch floats the library asks for (often none for the forward)


def _scratch_floats(B, N, C, backward):
    key = (B, N, C, backward)
    floats = _scratch.get(key)
    if floats is None:
        n = ctypes.c_uint64(0)
        check(lib.armature_gaussian_field_scratch(B, N, C, backward, ctypes.byref(n)))
        floats = _scratch[key] = n.value
        if len(_scratch) > 256:  # a training loop has a few sizes; a sweep must not grow this without bound
            _scratch.clear()
    return floats


class _GaussianField(torch.autograd.Function):
    @staticmethod
    def forward(ctx, points, means, cholesky, weights, epsilon, backend):
        call = _core.Call(backend)
        x = call.input("points", points, (None, 3))
        m = call.input("means", means, (None, 3))
        N = means.shape[0]
        l = call.input("cholesky", cholesky, (N, None))
        if cholesky.shape[1] != 6 and cholesky.shape[1] != 1:
            raise ValueError(f"cholesky has shape {tuple(cholesky.shape)}, expected ({N}, 6) or ({N}, 1)")
        w = call.input("weights", weights, (N, None))
        B, C = points.shape[0], weights.shape[1]
        kind = call.kind
        culled = epsilon > 0 and kind != "cpu"
        field = call.out((B, C))
        floats = _scratch_floats(B, N, C, 0) if kind != "cpu" else 0
        scratch = call.out((floats,)) if floats else None
        grid = None
        if culled:
            words = ctypes.c_uint64(0)
            check(lib.armature_gaussian_grid_words(B, N, ctypes.byref(words)))
            grid = call.out((max(words.value, 1),), words=True)
        inputs = _lib.GaussianFieldInputs(x, m, l, w, grid)

        def work(dev, e):
            if culled:
                status = lib.armature_build_gaussian_grid(dev, e, ctypes.byref(inputs), epsilon, grid)
                if status == _lib.OK:
                    status = lib.armature_barrier(dev, e)
                if status != _lib.OK:
                    return status
            return lib.armature_gaussian_field(dev, e, ctypes.byref(inputs), field, scratch)

        results = call.run(work)
        ctx.save_for_backward(points, means, cholesky, weights, results[-1] if culled else None)  # the grid: last
        ctx.place, ctx.culled = call.place, culled
        return results[0]

    @staticmethod
    def backward(ctx, grad_field):
        points, means, cholesky, weights, grid_words = ctx.saved_tensors
        B, N, C = points.shape[0], means.shape[0], weights.shape[1]
        call = _core.Call(place=ctx.place)
        x, m, l, w = call.arg(points), call.arg(means), call.arg(cholesky), call.arg(weights)
        g = call.arg(grad_field)
        grid = None
        if ctx.culled:  # the forward's grid, as the library's words
            grid = call.arg(grid_words, words=True)
        outs = [call.out(points.shape), call.out(means.shape), call.out(cholesky.shape), call.out(weights.shape)]
        floats = _scratch_floats(B, N, C, 1) if call.kind != "cpu" else 0
        scratch = call.out((floats,)) if floats else None
        inputs = _lib.GaussianFieldInputs(x, m, l, w, grid)
        results = call.run(lambda dev, e: lib.armature_gaussian_field_backward(dev, e, ctypes.byref(inputs), g,
                                                                               *outs, scratch))
        return results[0], results[1], results[2], results[3], None, None


class GaussianField(torch.nn.Module):
    """A learnable field of `num_gaussians` Gaussians in a cube of side `volume_size` centred on the origin, used as
    `model(points)` on points (B,3) → (B,) (or (B, channels) with channels > 1).

    Means start uniform in the cube, every scale at volume_size / 10, weights normal with deviation 0.1 (seeded by
    torch's generator). use_full_cov=False keeps L diagonal (the off-diagonal entries are not parameters)."""

    def __init__(self, num_gaussians=1000, volume_size=10.0, use_full_cov=True, device="cpu", channels=1,
                 epsilon=0.0, backend="auto"):
        super().__init__()
        n, s = int(num_gaussians), float(volume_size)
        if n < 1 or not (s > 0):
            raise ValueError(f"num_gaussians must be >= 1 and volume_size > 0, got {num_gaussians}, {volume_size}")
        self.use_full_cov, self.channels, self.epsilon, self.backend = use_full_cov, channels, epsilon, backend
        self.means = torch.nn.Parameter((torch.rand(n, 3, device=device) - 0.5) * s)
        log_scale = torch.full((n, 3), math.log(s / 10), device=device)
        if use_full_cov:
            chol = torch.zeros(n, 6, device=device)
            chol[:, [0, 2, 5]] = log_scale
            self.cholesky = torch.nn.Parameter(chol)
        else:
            self.log_scales = torch.nn.Parameter(log_scale)
        self.weights = torch.nn.Parameter(torch.randn(n, channels, device=device) * 0.1)

    def factor(self):
        """L's (N,6) parameters (the diagonal form's with zero off-diagonal entries)."""
        if self.use_full_cov:
            return self.cholesky
        zero = torch.zeros_like(self.log_scales[:, :1])
        d = self.log_scales
        return torch.cat([d[:, :1], zero, d[:, 1:2], zero, zero, d[:, 2:]], dim=1)

    def forward(self, points):
        out = gaussian_field(points, self.means, self.factor(), self.weights, self.epsilon, self.backend)
        return out[:, 0] if self.channels == 1 else out
