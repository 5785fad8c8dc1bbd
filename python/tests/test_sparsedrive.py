"""armature.sparsedrive against a plain-PyTorch deformable aggregation written here from the published semantics
(grid_sample per camera and level), gradcheck in float64 on the CPU reference, feature_maps_format round trips, and
the GPU backends against the reference."""
import pytest
import torch
import torch.nn.functional as F

from armature.sparsedrive import (deformable_aggregation_function, deformable_aggregation_grid_sample,
                                  feature_maps_format)

from armature import ArmatureError
from conftest import call_backend, capture_cuda_graph, on

BS, CAMS, C, GROUPS, ANCHORS, PTS = 2, 2, 4, 2, 5, 3
LEVELS = [(5, 7), (3, 4)]


def feature_levels(dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(BS, CAMS, C, h, w, generator=gen, dtype=dtype) for h, w in LEVELS]


def sampling(dtype, seed, margin=0.05):
    gen = torch.Generator().manual_seed(seed)
    loc = margin + (1 - 2 * margin) * torch.rand(BS, ANCHORS, PTS, CAMS, 2, generator=gen, dtype=dtype)
    loc[0, 0, 0, 0] = torch.tensor([1.2, 0.5])  # outside: adds nothing
    weights = torch.randn(BS, ANCHORS, PTS, CAMS, len(LEVELS), GROUPS, generator=gen, dtype=dtype)
    return loc, weights


def aggregate_torch(levels, loc, weights):
    out = torch.zeros(BS, ANCHORS, C, dtype=loc.dtype)
    inside = ((loc > 0) & (loc < 1)).all(-1)  # (bs, anchors, pts, cams)
    for cam in range(CAMS):
        grid = (loc[:, :, :, cam] * 2 - 1)  # (bs, anchors, pts, 2): align_corners=False is x·W − 0.5
        for lvl, maps in enumerate(levels):
            sampled = F.grid_sample(maps[:, cam], grid, mode="bilinear", padding_mode="zeros", align_corners=False)
            w = weights[:, :, :, cam, lvl].repeat_interleave(C // GROUPS, dim=-1)  # (bs, anchors, pts, C)
            w = w * inside[:, :, :, cam].unsqueeze(-1)
            out += (sampled.permute(0, 2, 3, 1) * w).sum(2)
    return out


def test_reference_matches_grid_sample():
    levels = feature_levels(torch.float64, 0)
    loc, weights = sampling(torch.float64, 1)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    got = deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc, weights)
    torch.testing.assert_close(got, aggregate_torch(levels, loc, weights), rtol=1e-12, atol=1e-12)


def test_feature_maps_format_round_trips():
    levels = feature_levels(torch.float32, 2)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    assert feats.shape == (BS, CAMS * sum(h * w for h, w in LEVELS), C)
    assert spatial_shape.tolist() == [[list(s) for s in LEVELS]] * CAMS
    assert scale_start_index.tolist() == [[0, 35], [47, 82]]
    for a, b in zip(feature_maps_format([feats, spatial_shape, scale_start_index], inverse=True), levels):
        assert torch.equal(a, b)


def test_gradcheck_on_the_reference():
    levels = feature_levels(torch.float64, 3)
    loc, weights = sampling(torch.float64, 4)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    f = lambda feats, loc, w: deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc, w)
    assert torch.autograd.gradcheck(f, (feats.requires_grad_(), loc.requires_grad_(), weights.requires_grad_()))


def test_gpu_matches_the_reference(gpu):
    levels = feature_levels(torch.float32, 5)
    loc, weights = sampling(torch.float32, 6)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    ins = [on(gpu, x.clone()).requires_grad_() for x in (feats, loc, weights)]
    out = deformable_aggregation_function(ins[0], on(gpu, spatial_shape), on(gpu, scale_start_index), ins[1], ins[2],
                                          backend=call_backend(gpu))
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(7))
    out.backward(on(gpu, grad))
    ref_ins = [x.double().requires_grad_() for x in (feats, loc, weights)]
    ref = deformable_aggregation_function(ref_ins[0], spatial_shape, scale_start_index, ref_ins[1], ref_ins[2])
    ref.backward(grad.double())
    # Sums of ≤ 24 bilinear samples of O(1) values in fp32: 1e-4; the locations' gradients scale with H and W.
    torch.testing.assert_close(out.detach().double().cpu(), ref.detach(), rtol=1e-4, atol=1e-4)
    for got, want in zip(ins, ref_ins):
        torch.testing.assert_close(got.grad.double().cpu(), want.grad, rtol=1e-4, atol=1e-3)


def test_bad_shapes_are_named():
    levels = feature_levels(torch.float32, 8)
    loc, weights = sampling(torch.float32, 9)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    with pytest.raises(ValueError, match="weights has shape"):
        deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc, weights[..., :1, :])
    with pytest.raises(ValueError, match="sampling_location has shape"):
        deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc[..., :1], weights)
    wraps = scale_start_index.clone()
    wraps[1, 1] += 1 << 32  # as int32 the same start
    with pytest.raises(ValueError, match="scale_start_index holds .*, past the int32"):
        deformable_aggregation_function(feats, spatial_shape, wraps, loc, weights)


def test_grid_sample_form_matches_the_reference():
    levels = feature_levels(torch.float64, 10)
    loc, weights = sampling(torch.float64, 11)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    want = deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc, weights)
    torch.testing.assert_close(deformable_aggregation_grid_sample(levels, loc, weights), want, rtol=1e-12, atol=1e-12)


def test_the_layout_is_remembered_only_while_unchanged():
    """feature_maps_format's index tensors are not read back on each call (a CUDA read would wait for the GPU); a
    copy of them, or the same tensors changed in place, are read afresh."""
    levels = feature_levels(torch.float64, 12)
    loc, weights = sampling(torch.float64, 13)
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    want = aggregate_torch(levels, loc, weights)
    for shape, start in ((spatial_shape, scale_start_index), (spatial_shape.clone(), scale_start_index.clone())):
        torch.testing.assert_close(deformable_aggregation_function(feats, shape, start, loc, weights), want,
                                   rtol=1e-12, atol=1e-12)
    spatial_shape[0, 0, 0] -= 1  # camera 0's first level one row shorter: a valid layout, another result
    changed = deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc, weights)
    fresh = deformable_aggregation_function(feats, spatial_shape.clone(), scale_start_index.clone(), loc, weights)
    assert torch.equal(changed, fresh) and not torch.allclose(changed, want)
    scale_start_index[-1, -1] += 1000  # past the features: the library must see it, and refuse
    with pytest.raises(ArmatureError, match="feature"):
        deformable_aggregation_function(feats, spatial_shape, scale_start_index, loc, weights)


def test_cuda_graph_capture_replays_the_eager_results():
    """No call reads the index tensors back from the GPU, so a step through the aggregation captures."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA: torch sees no CUDA device (Debian's torch is CPU-only)")
    levels = [lv.cuda() for lv in feature_levels(torch.float32, 14)]
    feats, spatial_shape, scale_start_index = feature_maps_format(levels)
    static = [feats.requires_grad_(), *(t.cuda().requires_grad_() for t in sampling(torch.float32, 15))]
    grad = torch.randn(BS, ANCHORS, C, device="cuda")

    def step():
        out = deformable_aggregation_function(static[0], spatial_shape, scale_start_index, static[1], static[2])
        return [out.detach(), *torch.autograd.grad(out, static, grad)]

    graph, captured = capture_cuda_graph(step)
    with torch.no_grad():
        static[1].copy_(sampling(torch.float32, 16)[0].cuda())
    graph.replay()
    for a, b in zip(captured, step()):
        assert torch.equal(a, b)  # deterministic kernels: the same bits
