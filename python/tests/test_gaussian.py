"""armature.gaussian against the formula in plain PyTorch, gradcheck in float64 (every entry of L), the GPU backends
against the reference (dense and culled), and the learnable module fitting a field."""
import pytest
import torch

from armature.gaussian import GaussianField, gaussian_field

from conftest import call_backend, on


def factor(chol):
    """(N,6) parameters → lower-triangular L with exp on the diagonal."""
    d = chol[:, [0, 2, 5]].clamp(-30, 30).exp()
    zero = torch.zeros_like(d[:, 0])
    return torch.stack([d[:, 0], zero, zero, chol[:, 1], d[:, 1], zero, chol[:, 3], chol[:, 4], d[:, 2]],
                       -1).reshape(-1, 3, 3)


def field_torch(x, means, chol, weights):
    L = factor(chol)  # (N,3,3)
    diff = (x[:, None, :] - means[None]).unsqueeze(-1)  # (B,N,3,1)
    z = torch.linalg.solve_triangular(L.expand(x.shape[0], -1, -1, -1), diff, upper=False).squeeze(-1)
    return torch.exp(-0.5 * z.square().sum(-1)) @ weights


def inputs(B=23, N=9, C=3, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(B, 3, generator=gen, dtype=dtype) * 2 - 1
    means = torch.rand(N, 3, generator=gen, dtype=dtype) * 2 - 1
    chol = torch.randn(N, 6, generator=gen, dtype=dtype) * 0.3 - torch.tensor([1, 0, 1, 0, 0, 1], dtype=dtype)
    weights = torch.randn(N, C, generator=gen, dtype=dtype)
    return x, means, chol, weights


def test_reference_matches_the_formula():
    x, means, chol, weights = inputs()
    torch.testing.assert_close(gaussian_field(x, means, chol, weights), field_torch(x, means, chol, weights),
                               rtol=1e-12, atol=1e-12)


def test_gradcheck_on_the_reference():
    args = [t.requires_grad_() for t in inputs(B=7, N=4, C=2)]
    assert torch.autograd.gradcheck(gaussian_field, args)


@pytest.mark.parametrize("epsilon", [0.0, 1e-4])
def test_gpu_matches_the_reference(gpu, epsilon):
    args = inputs(B=301, N=37, C=3, dtype=torch.float32, seed=1)
    ins = [on(gpu, t.clone()).requires_grad_() for t in args]
    out = gaussian_field(*ins, epsilon=epsilon, backend=call_backend(gpu))
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
    out.backward(on(gpu, grad))
    ref_ins = [t.double().requires_grad_() for t in args]
    ref = gaussian_field(*ref_ins)
    ref.backward(grad.double())
    # fp32 sums of 37 terms of magnitude ≤ 3 against double: 1e-4 relative; culling leaves out terms each below
    # epsilon, at most 37·epsilon per value.
    tol = 1e-4 + 37 * epsilon
    torch.testing.assert_close(out.detach().double().cpu(), ref.detach(), rtol=1e-4, atol=tol)
    if epsilon == 0:
        for got, want in zip(ins, ref_ins):
            torch.testing.assert_close(got.grad.double().cpu(), want.grad, rtol=1e-3, atol=1e-3)


def test_module_fits_a_field():
    torch.manual_seed(0)
    target = GaussianField(num_gaussians=5, volume_size=2.0)
    points = torch.rand(400, 3) * 2 - 1
    with torch.no_grad():
        wanted = target(points) * 10
    model = GaussianField(num_gaussians=20, volume_size=2.0)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(150):
        optimiser.zero_grad()
        loss = (model(points) - wanted).square().mean()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0], losses[::30]
    assert model.cholesky.grad is not None and model.cholesky.grad[:, [1, 3, 4]].abs().sum() > 0  # the full factor


def test_bad_input_is_named():
    x, means, chol, weights = inputs()
    with pytest.raises(ValueError, match=r"cholesky has shape \(9, 5\)"):
        gaussian_field(x, means, chol[:, :5], weights)
    with pytest.raises(ValueError, match="weights has shape"):
        gaussian_field(x, means, chol, weights[:4])
    with pytest.raises(TypeError, match="points must be floating point"):
        gaussian_field(x.long(), means, chol, weights)
    with pytest.raises(TypeError, match="means must be a torch.Tensor, got list"):
        gaussian_field(x, means.tolist(), chol, weights)
    with pytest.raises(ValueError, match="weights is on meta: Armature runs CUDA and CPU tensors"):
        gaussian_field(x, means, chol, weights.to("meta"))
    with pytest.raises(ValueError, match="points is on meta"):
        gaussian_field(x.to("meta"), means, chol, weights)
    with pytest.raises(ValueError, match="backend must be one of"):
        gaussian_field(x, means, chol, weights, backend="metal")


def test_bad_devices_are_named():
    """Tensors on two devices, or float64 on CUDA, are refused before any work, naming the argument."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA: torch sees no CUDA device (Debian's torch is CPU-only)")
    x, means, chol, weights = inputs()
    with pytest.raises(ValueError, match="cholesky is on cpu, the call's other tensors on cuda:0"):
        gaussian_field(x.float().cuda(), means.float().cuda(), chol.float(), weights.float().cuda())
    with pytest.raises(ValueError, match="means is on cuda:0, the call's other tensors on cpu"):
        gaussian_field(x, means.float().cuda(), chol, weights)
    with pytest.raises(TypeError, match="weights is float64 on CUDA"):
        gaussian_field(x.float().cuda(), means.float().cuda(), chol.float().cuda(), weights.cuda())
    with pytest.raises(ValueError, match="backend='vulkan' is for CPU tensors"):
        gaussian_field(x.float().cuda(), means.float().cuda(), chol.float().cuda(), weights.float().cuda(),
                       backend="vulkan")


def test_cuda_work_follows_torchs_current_stream():
    """On a side stream, the op must run after the kernel that produced its input (enqueued just before on the same
    stream, and slow) and before the inputs' memory is reused (freed right after the call, then overwritten)."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA: torch sees no CUDA device (Debian's torch is CPU-only)")
    x, means, chol, weights = (t.float().cuda() for t in inputs(B=4096, N=64, C=2, seed=7))
    want = gaussian_field(x, means, chol, weights)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    big = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        for _ in range(3):
            big = big @ big / 64  # a few ms of work ahead of the input's copy
        moved = x.clone() + big[0, 0] * 0
        got = gaussian_field(moved, means, chol, weights)
        del moved
        torch.full((4096, 3), float("nan"), device="cuda")  # may take the freed input's memory, in stream order
    torch.cuda.synchronize()
    assert torch.equal(got, want)


def test_cuda_tensors_run_on_their_own_device():
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    args = [t.float() for t in inputs(seed=8)]
    a = gaussian_field(*[t.to("cuda:0") for t in args])
    b = gaussian_field(*[t.to("cuda:1") for t in args])
    assert b.device == torch.device("cuda:1")
    assert torch.equal(a.cpu(), b.cpu())
