"""armature.custom_rasterizer against a plain-PyTorch rasteriser written here from the original's conventions (NDC
−1 and 1 at the first and last pixel centres, row 0 at NDC y = −1, nearest z/w wins, perspective-correct
barycentrics), the rasteriser's
gradient against autograd through that implementation, gradcheck of interpolate in float64, and the GPU backends
against the reference."""
import pytest
import torch

from armature import ArmatureError
from armature.custom_rasterizer import interpolate, rasterize, rasterize_image

from conftest import call_backend, on

H, W = 24, 32


def scene(seed=0, dtype=torch.float64):
    """Five overlapping, well-shaped triangles in front of a perspective camera (w from 1 to 3), as float32 values."""
    gen = torch.Generator().manual_seed(seed)
    centre = torch.rand(5, 1, 2, generator=gen) * 1.0 - 0.5
    angle = torch.arange(3) * 2.0944 + torch.rand(5, 3, generator=gen) * 0.6
    radius = 0.3 + 0.3 * torch.rand(5, 1, generator=gen)
    xy = (centre + radius.unsqueeze(-1) * torch.stack([angle.cos(), angle.sin()], -1)).reshape(15, 2)
    w = 1 + 2 * torch.rand(15, 1, generator=gen)
    z = torch.rand(15, 1, generator=gen) * 0.8 + 0.1
    pos = torch.cat([xy * w, z * w, w], 1).float().to(dtype)
    tri = torch.arange(15, dtype=torch.int32).reshape(5, 3)
    return pos, tri


def rasterize_torch(pos, tri):
    """(findices, barycentrics, ambiguous): `ambiguous` marks pixels whose centre lies within 0.1 pixel of a
    triangle's edge, where the library's snapping of vertices to 1/16 pixel may decide coverage differently."""
    ys, xs = torch.meshgrid(torch.arange(H, dtype=pos.dtype), torch.arange(W, dtype=pos.dtype), indexing="ij")
    best = torch.full((H, W), float("inf"), dtype=pos.dtype)
    findices = torch.zeros(H, W, dtype=torch.int32)
    bary = torch.zeros(H, W, 3, dtype=pos.dtype)
    ambiguous = torch.zeros(H, W, dtype=torch.bool)
    for f, (a, b, c) in enumerate(tri.long().tolist()):
        v = pos[[a, b, c]]
        # The original's viewport: NDC −1 … 1 maps to the centres of the first and last pixels.
        sx, sy = (v[:, 0] / v[:, 3] + 1) / 2 * (W - 1), (v[:, 1] / v[:, 3] + 1) / 2 * (H - 1)
        sz = v[:, 2] / v[:, 3]
        area = (sx[1] - sx[0]) * (sy[2] - sy[0]) - (sx[2] - sx[0]) * (sy[1] - sy[0])
        l1 = ((xs - sx[0]) * (sy[2] - sy[0]) - (sx[2] - sx[0]) * (ys - sy[0])) / area
        l2 = ((sx[1] - sx[0]) * (ys - sy[0]) - (xs - sx[0]) * (sy[1] - sy[0])) / area
        l0 = 1 - l1 - l2
        for i, li in enumerate((l0, l1, l2)):  # distance to the edge opposite corner i, in pixels
            j, k = (i + 1) % 3, (i + 2) % 3
            altitude = area.abs() / torch.hypot(sx[k] - sx[j], sy[k] - sy[j])
            ambiguous |= (li.abs() * altitude < 0.1) & (torch.stack([l0, l1, l2]).min(0).values > -1)
        inside = (l0 >= 0) & (l1 >= 0) & (l2 >= 0)
        depth = l0 * sz[0] + l1 * sz[1] + l2 * sz[2]
        win = inside & (depth < best)
        persp = torch.stack([l0 / v[0, 3], l1 / v[1, 3], l2 / v[2, 3]], -1)
        persp = persp / persp.sum(-1, keepdim=True)
        best = torch.where(win, depth, best)
        findices = torch.where(win, torch.tensor(f + 1, dtype=torch.int32), findices)
        bary = torch.where(win.unsqueeze(-1), persp, bary)
    return findices, bary, ambiguous


def test_reference_matches_the_definition():
    pos, tri = scene()
    findices, bary = rasterize(pos.unsqueeze(0), tri, (H, W))
    want_ids, want_bary, ambiguous = rasterize_torch(pos, tri)
    assert findices.dtype == torch.int32 and findices.shape == (H, W)
    clear = ~ambiguous
    assert (findices[clear] > 0).sum() > 20 and ambiguous.sum() < 0.3 * H * W  # the comparison means something
    assert torch.equal(findices[clear], want_ids[clear])
    # Barycentrics from the snapped vertices: within 1/32 pixel of the float ones, over triangles a few pixels wide.
    torch.testing.assert_close(bary[clear], want_bary[clear], rtol=0, atol=0.05)


def test_rasteriser_gradient_matches_autograd():
    pos, tri = scene(seed=1)
    pos.requires_grad_()
    findices, bary = rasterize_image(pos, tri, None, W, H, 1e-6, False)
    weights = torch.randn(H, W, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    ref = pos.detach().clone().requires_grad_()
    want_ids, want, ambiguous = rasterize_torch(ref, tri)
    assert torch.equal(findices[~ambiguous], want_ids[~ambiguous])
    weights[ambiguous] = 0  # where coverage may differ, the gradients would too
    (bary * weights).sum().backward()
    (want * weights).sum().backward()
    # The library's gradient is that of the float positions' barycentrics (snapping only decides coverage).
    torch.testing.assert_close(pos.grad, ref.grad, rtol=1e-6, atol=1e-6)


def test_interpolate_matches_and_gradchecks():
    pos, tri = scene(seed=3)
    findices, bary = rasterize(pos.unsqueeze(0), tri, (H, W))
    col = torch.randn(len(pos), 5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    out = interpolate(col, findices, bary, tri)
    covered = findices > 0
    corners = tri.long()[(findices.long() - 1).clamp(min=0)]  # (H,W,3)
    want = (bary.unsqueeze(-1) * col[corners]).sum(2) * covered.unsqueeze(-1)
    torch.testing.assert_close(out[0], want, rtol=1e-12, atol=1e-12)
    f = lambda c, b: interpolate(c, findices, b, tri)
    assert torch.autograd.gradcheck(f, (col.requires_grad_(), bary.detach().requires_grad_()))


def test_gpu_matches_the_reference(gpu):
    pos, tri = scene(seed=5, dtype=torch.float32)
    col = torch.randn(len(pos), 3, generator=torch.Generator().manual_seed(6))
    p = on(gpu, pos.clone()).requires_grad_()
    c = on(gpu, col.clone()).requires_grad_()
    findices, bary = rasterize(p.unsqueeze(0), on(gpu, tri), (H, W)) if gpu == "cuda" else \
        rasterize_image(p, tri, None, W, H, 1e-6, False, backend="vulkan")
    out = interpolate(c, findices, bary, on(gpu, tri), backend=call_backend(gpu))
    out.square().sum().backward()
    ref_p, ref_c = pos.double().requires_grad_(), col.double().requires_grad_()
    ref_ids, ref_bary = rasterize_image(ref_p, tri, None, W, H, 1e-6, False)
    ref_out = interpolate(ref_c, ref_ids, ref_bary, tri)
    ref_out.square().sum().backward()
    assert torch.equal(findices.cpu(), ref_ids)  # the rasteriser is exact on every backend
    torch.testing.assert_close(out.detach().double().cpu(), ref_out.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(c.grad.double().cpu(), ref_c.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(p.grad.double().cpu(), ref_p.grad, rtol=1e-3, atol=1e-3)


def test_bad_input_is_named():
    pos, tri = scene()
    with pytest.raises(ValueError, match=r"pos has shape"):
        rasterize(pos, tri, (H, W))
    with pytest.raises(ArmatureError, match="face"):
        rasterize(pos.unsqueeze(0), tri + 100, (H, W))
    with pytest.raises(TypeError, match="F must hold integers"):
        rasterize_image(pos, tri.float(), None, W, H, 1e-6, False)
