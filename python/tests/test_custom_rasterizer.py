"""armature.custom_rasterizer against a plain-PyTorch rasteriser written here from the original's conventions (NDC
−1 and 1 at the first and last pixel centres, row 0 at NDC y = −1, nearest z/w wins, perspective-correct
barycentrics), the rasteriser's
gradient against autograd through that implementation, gradcheck of interpolate in float64, and the GPU backends
against the reference."""
import pytest
import torch

from armature import ArmatureError
from armature.custom_rasterizer import (build_hierarchy, build_hierarchy_with_feat, interpolate, rasterize,
                                       rasterize_image)

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
    wraps = tri.long()
    wraps[0, 0] += 1 << 32  # as int32 the same index: refused, not narrowed into a valid face
    with pytest.raises(ValueError, match=f"F holds {int(wraps[0, 0])}, past the int32"):
        rasterize_image(pos, wraps, None, W, H, 1e-6, False)
    assert torch.equal(rasterize_image(pos, tri.long(), None, W, H, 1e-6, False)[0],
                       rasterize_image(pos, tri.int(), None, W, H, 1e-6, False)[0])  # int64 in range: as int32
    if torch.cuda.is_available():  # the same check of CUDA indices (it reads their range back)
        with pytest.raises(ValueError, match="past the int32"):
            rasterize_image(pos.float().cuda(), wraps.cuda(), None, W, H, 1e-6, False)
        assert torch.equal(rasterize_image(pos.float().cuda(), tri.long().cuda(), None, W, H, 1e-6, False)[0],
                           rasterize_image(pos.float().cuda(), tri.int().cuda(), None, W, H, 1e-6, False)[0])


def sphere_views(size=24, radius=0.8, channels=0):
    """A sphere seen along z, x and y (the original's view order and axes): its front and back hits as two layers,
    positions (2,H,W,4) with w = 1 where a ray hits, normals, and features (the position's colour) when asked."""
    t = (torch.arange(size, dtype=torch.float32) + 0.5) / size * 2 - 1
    rows, cols = torch.meshgrid(t, t, indexing="ij")
    depth2 = radius ** 2 - rows ** 2 - cols ** 2
    hit = depth2 > 0
    depth = depth2.clamp(min=0).sqrt()
    views = []
    for axis in range(3):
        layers = []
        for sign in (1, -1):
            d = sign * depth
            xyz = {0: (cols, rows, d), 1: (d, rows, cols), 2: (cols, d, -rows)}[axis]
            p = torch.stack(list(xyz) + [hit.float()], -1) * hit.unsqueeze(-1)
            layers.append(p)
        views.append(torch.stack(layers))
    positions = views
    normals = [torch.nn.functional.normalize(v[..., :3], dim=-1) for v in views]
    features = [torch.cat([v[..., :3] * 0.5 + 0.5, v[..., 3:]], -1)[..., :channels] for v in views]
    return positions, normals, features


def cells(points, resolution):
    return {tuple(c) for c in ((points * 0.5 + 0.5) * resolution).long().clamp(max=resolution - 1).tolist()}


def test_build_hierarchy_has_the_originals_structure():
    """Lists as the original returns them; every finest cell a view saw is an original point in that cell, the rest
    padding at cell centres; neighbours and parents index the levels' cells."""
    positions, normals, _ = sphere_views()
    levels, resolution = 3, 16
    out = build_hierarchy(positions, normals, levels, resolution)
    (points, original), neighbors, downsamples, even, odd = out
    assert points.dtype == torch.float32 and original.shape == (points.shape[0],)
    assert [len(neighbors), len(downsamples), len(even), len(odd)] == [levels, levels - 1, levels, levels]
    seen = torch.cat([v.reshape(-1, 4) for v in positions])
    seen = seen[seen[:, 3] > 0, :3]
    kept = points[original > 0]
    assert cells(kept, resolution) == cells(seen, resolution)  # one original point per cell a view saw
    assert len(cells(kept, resolution)) == kept.shape[0]
    for level in range(levels):
        n = neighbors[level]
        assert n.dtype == torch.int64 and n.shape[1] == 9 and int(n.max()) < n.shape[0] and int(n.min()) >= -1
        assert even[level].shape == odd[level].shape == (n.shape[0],)
        if level + 1 < levels:
            assert downsamples[level].shape == (n.shape[0],)
            assert 0 <= int(downsamples[level].min()) and int(downsamples[level].max()) < neighbors[level + 1].shape[0]
    assert torch.equal(neighbors[0][:, 4], torch.arange(neighbors[0].shape[0]))  # each cell is its own centre
    # The same input gives the same bits, and the features form carries the first point's features.
    again = build_hierarchy(positions, normals, levels, resolution)
    assert all(torch.equal(a, b) for a, b in zip(out[1] + out[2], again[1] + again[2]))
    positions, normals, features = sphere_views(channels=3)
    with_feat = build_hierarchy_with_feat(positions, normals, features, levels, resolution)
    assert len(with_feat) == 6 and torch.equal(with_feat[0][0], points)
    feats = with_feat[1][0]
    torch.testing.assert_close(feats[original > 0], points[original > 0] * 0.5 + 0.5, rtol=0, atol=1e-6)
    assert torch.all(feats[original == 0] == 0.5)


def test_build_hierarchy_on_cuda_is_the_cpus(gpu):
    if gpu != "cuda":
        pytest.skip("the grid hierarchy runs on the CPU or CUDA, not Vulkan")
    positions, normals, features = sphere_views(channels=2)
    cpu = build_hierarchy_with_feat(positions, normals, features, 3, 16)
    cuda = build_hierarchy_with_feat([p.cuda() for p in positions], [n.cuda() for n in normals],
                                     [f.cuda() for f in features], 3, 16)
    for a, b in zip(sum(cpu, []), sum(cuda, [])):
        assert b.is_cuda and torch.equal(a, b.cpu())


def test_build_hierarchy_bad_input_is_named():
    positions, normals, _ = sphere_views(size=8)
    with pytest.raises(ValueError, match="three views"):
        build_hierarchy(positions[:2], normals[:2], 2, 8)
    with pytest.raises(ValueError, match=r"view_layer_normals\[1\] has shape"):
        build_hierarchy(positions, [normals[0], normals[1][..., :2], normals[2]], 2, 8)
    with pytest.raises(ArmatureError, match="divisible"):
        build_hierarchy(positions, normals, 3, 6)
