"""SparseDrive's deformable aggregation, as `projects/mmdet3d_plugin/ops` exposes it: change only the import.

    from armature.sparsedrive import deformable_aggregation_function, feature_maps_format

Shapes as the original's: mc_ms_feat (bs, F, C) (every camera's levels flattened, channels last), spatial_shape
(cams, levels, 2) as (H, W), scale_start_index (cams, levels), sampling_location (bs, anchors, pts, cams, 2)
normalised (x, y) and counted only strictly inside (0, 1), weights (bs, anchors, pts, cams, levels, groups) → (bs,
anchors, C). Gradients to the features, locations and weights (None for the two index tensors). Unlike the original
(the legacy default stream, float atomics), the work runs on torch's current stream and is deterministic.
"""
import ctypes
import weakref

import torch
import torch.nn.functional as F

from . import _core
from ._lib import check, lib

_maps = {}  # (backend, device, layout) → feature maps handle
# The host values of the index tensors feature_maps_format made, by their ids: reading CUDA tensors back would make
# every call wait for the GPU, and could not be captured in a CUDA graph. An entry counts while its tensors are the
# same objects, unchanged since (torch's version counters).
_layouts = {}


def _remember_layout(spatial_shape, scale_start_index, shape, starts):
    try:
        shape, starts = _core.int32_values("spatial_shape", shape), _core.int32_values("scale_start_index", starts)
    except ValueError:  # a layout past the library's int32: the call reads it, and refuses it there
        return
    key = (id(spatial_shape), id(scale_start_index))
    forget = lambda _: _layouts.pop(key, None)
    _layouts[key] = (weakref.ref(spatial_shape, forget), weakref.ref(scale_start_index, forget),
                     spatial_shape._version, scale_start_index._version, shape, starts)


def _host_layout(spatial_shape, scale_start_index):
    """spatial_shape's and scale_start_index's values, flattened, as Python ints."""
    known = _layouts.get((id(spatial_shape), id(scale_start_index)))
    if known is not None:
        shape_ref, start_ref, shape_version, start_version, shape, starts = known
        if (shape_ref() is spatial_shape and start_ref() is scale_start_index
                and spatial_shape._version == shape_version and scale_start_index._version == start_version):
            return shape, starts
    return (_core.int32_values("spatial_shape", spatial_shape.reshape(-1).tolist()),
            _core.int32_values("scale_start_index", scale_start_index.reshape(-1).tolist()))


def _feature_maps(backend, device, spatial_shape, scale_start_index, features):
    cams, levels = spatial_shape.shape[0], spatial_shape.shape[1]
    shape, starts = _host_layout(spatial_shape, scale_start_index)
    key = (backend, device.index, cams, levels, shape, starts, features)  # the CPU's and Vulkan's index: None
    if key not in _maps:
        handle = ctypes.c_void_p()
        library_device = _core.library_device(backend, device)
        with _core.creating_on(backend, device):
            check(lib.armature_feature_maps_create(library_device, cams, levels,
                                                   (ctypes.c_int32 * len(shape))(*shape),
                                                   (ctypes.c_int32 * len(starts))(*starts), features,
                                                   ctypes.byref(handle)))
        _maps[key] = handle
    return _maps[key]


def deformable_aggregation_function(mc_ms_feat, spatial_shape, scale_start_index, sampling_location, weights,
                                    backend="auto"):
    return _core.apply(_DeformableAggregation, mc_ms_feat, spatial_shape, scale_start_index, sampling_location, weights,
                       backend)


class _DeformableAggregation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mc_ms_feat, spatial_shape, scale_start_index, sampling_location, weights, backend):
        _core.check_tensor("spatial_shape", spatial_shape, (None, None, 2), floating=False)
        cams, levels = spatial_shape.shape[:2]
        _core.check_tensor("scale_start_index", scale_start_index, (cams, levels), floating=False)
        call = _core.Call(backend)
        f = call.input("mc_ms_feat", mc_ms_feat, (None, None, None))
        bs, C = mc_ms_feat.shape[0], mc_ms_feat.shape[2]
        l = call.input("sampling_location", sampling_location, (bs, None, None, cams, 2))
        anchors, pts = sampling_location.shape[1:3]
        w = call.input("weights", weights, (bs, anchors, pts, cams, levels, None))
        maps = _feature_maps(call.kind, call.device, spatial_shape, scale_start_index, mc_ms_feat.shape[1])
        out = call.out((bs, anchors, C))
        (result,) = call.run(lambda dev, e: lib.armature_deformable_aggregation(dev, e, maps, f, l, w, out))
        ctx.save_for_backward(mc_ms_feat, sampling_location, weights)
        ctx.maps, ctx.place = maps, call.place
        return result

    @staticmethod
    def backward(ctx, grad_out):
        mc_ms_feat, sampling_location, weights = ctx.saved_tensors
        call = _core.Call(place=ctx.place)
        f, l, w = call.arg(mc_ms_feat), call.arg(sampling_location), call.arg(weights)
        g = call.arg(grad_out)
        g_f, g_l, g_w = call.out(mc_ms_feat.shape), call.out(sampling_location.shape), call.out(weights.shape)
        words = ctypes.c_uint64(0)
        if call.kind != "cpu":
            check(lib.armature_deformable_aggregation_scratch(ctx.maps, f, l, w, ctypes.byref(words)))
        scratch = call.out((max(words.value, 1),), words=True) if call.kind != "cpu" else None
        results = call.run(lambda dev, e: lib.armature_deformable_aggregation_backward(
            dev, e, ctx.maps, f, l, w, g, g_f, g_l, g_w, scratch))
        return results[0], None, None, results[1], results[2], None


def feature_maps_format(feature_maps, inverse=False):
    """Per-level maps (bs, cams, C, H_l, W_l) ↔ [col_feats (bs, cams·ΣHW, C), spatial_shape (cams, levels, 2),
    scale_start_index (cams, levels)], as SparseDrive's: the inverse splits col_feats back into the levels."""
    if inverse:
        col_feats, spatial_shape, scale_start_index = feature_maps
        cams = spatial_shape.shape[0]
        bs, _, C = col_feats.shape
        per_camera = col_feats.reshape(bs, cams, -1, C)
        levels, start = [], 0
        for h, w in spatial_shape[0].tolist():
            level = per_camera[:, :, start:start + h * w, :]
            levels.append(level.permute(0, 1, 3, 2).reshape(bs, cams, C, h, w))
            start += h * w
        return levels
    bs, cams = feature_maps[0].shape[:2]
    shapes = [tuple(f.shape[-2:]) for f in feature_maps]
    cols = [f.reshape(bs, cams, f.shape[2], -1) for f in feature_maps]
    col_feats = torch.cat(cols, dim=-1).permute(0, 1, 3, 2).reshape(bs, -1, feature_maps[0].shape[2])
    per_camera = sum(h * w for h, w in shapes)
    level_starts = [sum(h * w for h, w in shapes[:i]) for i in range(len(shapes))]
    device = col_feats.device
    starts = [[c * per_camera + s for s in level_starts] for c in range(cams)]
    spatial_shape = torch.tensor([shapes] * cams, dtype=torch.int64, device=device)
    scale_start_index = torch.tensor(starts, dtype=torch.int64, device=device)
    _remember_layout(spatial_shape, scale_start_index, [v for hw in shapes for v in hw] * cams,
                     [s for row in starts for s in row])
    return [col_feats, spatial_shape, scale_start_index]


def deformable_aggregation_grid_sample(feature_levels, sampling_location, weights):
    """The same aggregation in plain PyTorch, from the per-level maps (bs, cams, C, H, W): grid_sample of every camera
    and level, weighted per group. No library needed (a fallback), and the baseline the benchmark times."""
    bs, anchors, pts, cams, _ = sampling_location.shape
    C, groups = feature_levels[0].shape[2], weights.shape[-1]
    inside = ((sampling_location > 0) & (sampling_location < 1)).all(-1, keepdim=True)
    grid = (sampling_location * 2 - 1).permute(0, 3, 1, 2, 4).reshape(bs * cams, anchors, pts, 2)
    out = 0
    for level, maps in enumerate(feature_levels):
        sampled = F.grid_sample(maps.flatten(0, 1), grid, align_corners=False)  # (bs·cams, C, anchors, pts)
        sampled = sampled.reshape(bs, cams, C, anchors, pts).permute(0, 3, 4, 1, 2)  # (bs, anchors, pts, cams, C)
        w = weights[:, :, :, :, level].repeat_interleave(C // groups, dim=-1) * inside
        out = out + (sampled * w).sum((2, 3))
    return out
