"""Hunyuan3D's custom_rasterizer (hy3dgen/texgen/custom_rasterizer), with gradients: change only the import.

    from armature.custom_rasterizer import rasterize, interpolate
    findices, barycentric = rasterize(pos, tri, (h, w))       # pos (1,N,4) clip space, tri (F,3) int32
    colours = interpolate(col, findices, barycentric, tri)     # (1,H,W,C)
    grids = build_hierarchy(view_layer_positions, view_layer_normals, num_level, resolution)

Conventions as the original's: findices int32 (H,W) = face + 1, 0 for background; barycentric float (H,W,3),
perspective-correct, 0 on background; pixel centres at +0.5; row 0 is NDC y = −1. Unlike the original, gradients
flow: interpolate to the attributes and the barycentrics, the rasteriser to the positions (through x, y and w of
each covered pixel's corners; which face is visible is piecewise constant), so images can fit geometry.
"""
import ctypes

import torch

from . import _core, _lib
from ._lib import check, lib


def _desc(width, height, use_depth_prior, occlusion_truncation):
    return _lib.RasterDesc(int(width), int(height), 1, 0, 1 if use_depth_prior else 0, float(occlusion_truncation), 0)


def rasterize(pos, tri, resolution, clamp_depth=torch.zeros(0), use_depth_prior=0):
    """pos (1,N,4), tri (F,3), resolution (h, w) → (findices (H,W) int32, barycentric (H,W,3))."""
    _core.check_tensor("pos", pos, (1, None, 4))
    findices, barycentric = rasterize_image(pos[0], tri, clamp_depth, resolution[1], resolution[0], 1e-6,
                                            use_depth_prior)
    return findices, barycentric


def rasterize_image(V, F, D, width, height, occlusion_truncation, use_depth_prior, backend="auto"):
    """V (N,4) clip space, F (F,3), D (H,W) the depth prior (NDC z; used with use_depth_prior) → [findices,
    barycentric]."""
    if not (1 <= int(width) <= 8192 and 1 <= int(height) <= 8192):
        raise ValueError(f"width and height must be 1 … 8192, got {width} × {height}")
    findices, barycentric = _core.apply(_Rasterize, V, F, D if use_depth_prior else None, int(width), int(height),
                                        float(occlusion_truncation), bool(use_depth_prior), backend)
    return [findices, barycentric]


class _Rasterize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, V, F, D, width, height, occlusion_truncation, use_depth_prior, backend):
        desc = _desc(width, height, use_depth_prior, occlusion_truncation)
        call = _core.Call(backend)
        pos = call.input("V", V, (None, 4), one_more=True)
        faces = call.input("F", F, (None, 3), integer=True)
        depth = call.input("D", D, (height, width), one_more=True)
        scratch = None
        if call.kind != "cpu":
            n = ctypes.c_uint64()
            check(lib.armature_raster_scratch_bytes(ctypes.byref(desc), ctypes.byref(n)))
            scratch = call.scratch_bytes(n.value)
        ids = call.out((1, height, width), integer=True)
        bary = call.out((1, height, width, 3))
        findices, barycentric = call.run(lambda dev, e: lib.armature_rasterize(dev, e, ctypes.byref(desc), pos, faces,
                                                                              depth, None, scratch, ids, bary))
        findices, barycentric = findices[0], barycentric[0]
        ctx.save_for_backward(V, F, findices)
        ctx.desc, ctx.place = desc, call.place
        ctx.mark_non_differentiable(findices)
        return findices, barycentric

    @staticmethod
    def backward(ctx, _, grad_barycentric):
        V, F, findices = ctx.saved_tensors
        call = _core.Call(place=ctx.place)
        pos = call.arg(V, one_more=True)
        faces = call.arg(F, integer=True)
        ids = call.arg(findices, integer=True, one_more=True)
        g = call.arg(grad_barycentric, one_more=True)
        grad = call.out((1, V.shape[0], 4))
        (grad_v,) = call.run(lambda dev, e: lib.armature_rasterize_backward(dev, e, ctypes.byref(ctx.desc), pos, faces,
                                                                            ids, g, grad))
        return grad_v[0], None, None, None, None, None, None, None


def interpolate(col, findices, barycentric, tri, backend="auto"):
    """col (N,C) per vertex, findices (H,W), barycentric (H,W,3), tri (F,3) → (1,H,W,C)."""
    return _core.apply(_Interpolate, col, findices, barycentric, tri, backend)


class _Interpolate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, col, findices, barycentric, tri, backend):
        call = _core.Call(backend)
        c = call.input("col", col, (None, None))
        ids = call.input("findices", findices, (None, None), integer=True, one_more=True)
        H, W = findices.shape
        bary = call.input("barycentric", barycentric, (H, W, 3), one_more=True)
        faces = call.input("tri", tri, (None, 3), integer=True)
        out = call.out((1, H, W, col.shape[1]))
        (result,) = call.run(lambda dev, e: lib.armature_interpolate(dev, e, c, ids, bary, faces, out))
        ctx.save_for_backward(col, findices, barycentric, tri)
        ctx.place = call.place
        return result

    @staticmethod
    def backward(ctx, grad_out):
        col, findices, barycentric, tri = ctx.saved_tensors
        call = _core.Call(place=ctx.place)
        args = [call.arg(col), call.arg(findices, integer=True, one_more=True), call.arg(barycentric, one_more=True),
                call.arg(tri, integer=True)]
        g = call.arg(grad_out)
        grad_col = call.out(col.shape, zero=True)  # accumulated into
        grad_bary = call.out((1,) + tuple(barycentric.shape))
        grad_col, grad_bary = call.run(lambda dev, e: lib.armature_interpolate_backward(dev, e, *args, g, grad_col,
                                                                                        grad_bary))
        return grad_col, None, grad_bary[0], None, None


def _hierarchy(positions, normals, features, num_level, resolution):
    """The library's grid hierarchy of three views, as the original's lists of tensors on the views' device (CUDA
    views are built on that GPU, bit for bit the CPU's)."""
    for name, views, width in (("view_layer_positions", positions, 4), ("view_layer_normals", normals, 3)) + (
            (("view_layer_feats", features, None),) if features is not None else ()):
        if len(views) != 3:
            raise ValueError(f"{name} must hold three views (along z, x and y), got {len(views)}")
        for i, v in enumerate(views):
            _core.check_tensor(f"{name}[{i}]", v, (None, None, None, width))
    device = positions[0].device
    channels = int(features[0].shape[3]) if features is not None else 0
    host = lambda t: t.detach().to("cpu", torch.float32).contiguous()
    kept = []  # the host copies, alive until the build has read them
    views = (_lib.GridView * 3)()
    for i in range(3):
        p, n = host(positions[i]), host(normals[i])
        f = host(features[i]) if features is not None else None
        if n.shape[:3] != p.shape[:3] or (f is not None and (f.shape[:3] != p.shape[:3] or f.shape[3] != channels)):
            raise ValueError(f"view {i}: positions {tuple(p.shape)}, normals {tuple(n.shape)}"
                             + (f" and features {tuple(f.shape)}" if f is not None else "") + " disagree")
        kept += [p, n, f]
        views[i] = _lib.GridView(p.shape[0], p.shape[1], p.shape[2], p.data_ptr(), n.data_ptr(),
                                 f.data_ptr() if f is not None else None)
    kind = "cuda" if device.type == "cuda" else "cpu"
    handle = ctypes.c_void_p()
    with _core.creating_on(kind, device):
        check(lib.armature_grid_hierarchy_build(_lib.CUDA if kind == "cuda" else _lib.CPU, views, 3, channels,
                                                int(num_level), int(resolution), ctypes.byref(handle)))
    try:
        def get(name, level=0, dtype=torch.int64):
            rank, dims = ctypes.c_uint32(), (ctypes.c_uint64 * 2)()
            check(lib.armature_grid_hierarchy_shape(handle, name.encode(), level, ctypes.byref(rank), dims))
            out = torch.empty(tuple(int(d) for d in dims[:rank.value]), dtype=dtype)
            check(lib.armature_grid_hierarchy_copy(handle, name.encode(), level, ctypes.c_void_p(out.data_ptr()),
                                                   out.numel()))
            return out.to(device)

        levels = int(num_level)
        texture = [get("positions", dtype=torch.float32), get("is_original", dtype=torch.float32)]
        lists = [[get(name, level) for level in range(levels - (name == "downsamples"))]
                 for name in ("neighbors", "downsamples", "even_corners", "odd_corners")]
        feats = [get("features", dtype=torch.float32)] if features is not None else []
        return [texture] + ([feats] if feats else []) + lists
    finally:
        lib.armature_grid_hierarchy_destroy(handle)


def build_hierarchy(view_layer_positions, view_layer_normals, num_level, resolution):
    """Hunyuan3D-2's texture grid: three axis views (L,H,W,4) positions in [-1, 1] (w = 0: empty) and (L,H,W,3)
    normals → [[positions (N,3), is_original (N)], neighbors per level (N_l,9), downsamples per level but the last
    (N_l), even corners, odd corners (N_l)], the original's lists (int64 indices, -1 for none)."""
    return _hierarchy(view_layer_positions, view_layer_normals, None, num_level, resolution)


def build_hierarchy_with_feat(view_layer_positions, view_layer_normals, view_layer_feats, num_level, resolution):
    """build_hierarchy carrying per-pixel features (L,H,W,C): [[positions, is_original], [features (N,C)],
    neighbors, downsamples, even corners, odd corners]."""
    return _hierarchy(view_layer_positions, view_layer_normals, view_layer_feats, num_level, resolution)
