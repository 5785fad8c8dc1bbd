"""Joint propagation: local transforms to global ones over any forest of joints, with autograd.

    forest = armature.joints.JointForest(parents)          # analysed once: set-up costs more than a call
    out = forest(rotations=q, translations=t, inverse_bind=ib, points=p, point_joints=...)
    out.globals, out.skinning, out.positions, out.points   # (B,N,3,4), (B,N,3,4), (B,N,3), (B,P,3)

Rigid locals are unit quaternions (x, y, z, w) (B,N,4) and translations (B,N,3); affine locals are 3×4 row-major
matrices (B,N,3,4). Gradients flow to the locals and the attached points (exact backward kernels).
"""
import collections
import ctypes

import torch

from . import _core, _lib
from ._lib import check, lib

Propagated = collections.namedtuple("Propagated", "globals skinning positions points")


class JointForest:
    """A forest of joints: parents[i] is joint i's parent, -1 for a root, in any order; point_joints (optional) the
    joint each attached point follows. Cycles and out-of-range parents are refused, naming the joints."""

    def __init__(self, parents, point_joints=None):
        self.parents = _core.int32_values("parents", parents.tolist() if torch.is_tensor(parents) else parents)
        pj = point_joints.tolist() if torch.is_tensor(point_joints) else (point_joints or [])
        self.point_joints = _core.int32_values("point_joints", pj)
        self._handles = {}
        self._handle("cpu", None)  # checks the forest now

    @property
    def joints(self):
        return len(self.parents)

    def _handle(self, backend, device):
        """The library's forest for a backend (the CPU reference's needs no device)."""
        key = (backend, None if device is None else device.index)  # the CPU's and Vulkan's index: None
        if key not in self._handles:
            handle = ctypes.c_void_p()
            parents = (ctypes.c_int32 * max(len(self.parents), 1))(*self.parents)
            points = (ctypes.c_int32 * max(len(self.point_joints), 1))(*self.point_joints)
            library_device = _core.library_device(backend, device)
            with _core.creating_on(backend, device):
                check(lib.armature_joint_forest_create(library_device, len(self.parents), parents,
                                                       len(self.point_joints), points, ctypes.byref(handle)))
            self._handles[key] = handle
        return self._handles[key]

    def __del__(self):
        for handle in getattr(self, "_handles", {}).values():
            lib.armature_joint_forest_destroy(handle)

    def __call__(self, rotations=None, translations=None, affine=None, inverse_bind=None, points=None,
                 backend="auto"):
        """Globals, skinning matrices (with inverse_bind), joint positions and attached points (with points)."""
        N, P = self.joints, len(self.point_joints)
        rigid = affine is None
        if rigid:
            if rotations is None or translations is None:
                raise ValueError("give rotations and translations (rigid locals), or affine")
        elif rotations is not None or translations is not None:
            raise ValueError("give affine, or rotations and translations, not both")
        if inverse_bind is not None and getattr(inverse_bind, "requires_grad", False):
            raise ValueError("inverse_bind requires grad: the backward gives gradients to the locals and points only")
        if points is None and P:
            raise ValueError(f"the forest has {P} attached points: give their positions (points)")
        outputs = _core.apply(_Propagate, self, backend, rotations, translations, affine, inverse_bind, points)
        globals_, skinning, positions, points_out = outputs
        B = globals_.shape[0]
        return Propagated(globals_.view(B, N, 3, 4), skinning.view(B, N, 3, 4) if inverse_bind is not None else None,
                          positions, points_out if points is not None else None)


def _run(forest, call, locals_, points, grads=None, saved_globals=None):
    """The forward (grads None): globals, skinning, positions and points (None where not asked for); or the
    backward: the gradients of the rotations, translations, affine locals and points."""
    rotations, translations, affine, inverse_bind = locals_
    rigid = affine is None
    N, P = forest.joints, len(forest.point_joints)
    if grads is None:  # the forward's inputs, checked as they are described
        if rigid:
            rot = call.input("rotations", rotations, (None, N, 4))
            trans = call.input("translations", translations, (rotations.shape[0], N, 3))
            aff = None
        else:
            rot = trans = None
            aff = call.input("affine", affine, (None, N, 3, 4))
        args = _lib.JointLocals(0 if rigid else 1, rot, trans, aff,
                                call.input("inverse_bind", inverse_bind, (N, 3, 4)))
        pts = call.input("points", points, (P, 3))
    else:
        args = _lib.JointLocals(0 if rigid else 1, call.arg(rotations), call.arg(translations), call.arg(affine),
                                call.arg(inverse_bind))
        pts = call.arg(points)
    B = (rotations if rigid else affine).shape[0]
    handle = forest._handle(call.kind, call.device)
    scratch_floats = ctypes.c_uint64()
    check(lib.armature_joint_forest_scratch(handle, B, ctypes.byref(scratch_floats)))
    if grads is None:
        outs = [call.out((B, N, 12)), call.out((B, N, 12)) if inverse_bind is not None else None,
                call.out((B, N, 3)), call.out((B, P, 3)) if points is not None else None]
        scratch = call.out((max(scratch_floats.value, 1),))
        results = call.run(lambda dev, e: lib.armature_joint_propagation(dev, e, handle, ctypes.byref(args), pts, *outs,
                                                                         scratch))
        it = iter(results)  # the outputs asked for, in order, then the scratch
        return [next(it) if o is not None else None for o in outs]
    g_globals, g_skinning, g_positions, g_points = grads
    gin = [call.arg(g_globals), call.arg(g_skinning), call.arg(g_positions), call.arg(g_points)]
    globals_ = call.arg(saved_globals)
    adjoint = call.out((B, N, 12))
    scratch = call.out((max(scratch_floats.value, 1),))
    outs = [call.out((B, N, 4)) if rigid else None, call.out((B, N, 3)) if rigid else None,
            None if rigid else call.out((B, N, 3, 4)), call.out((P, 3)) if points is not None else None]
    results = call.run(lambda dev, e: lib.armature_joint_propagation_backward(
        dev, e, handle, ctypes.byref(args), pts, globals_, *gin, adjoint, scratch, *outs))
    it = iter(results[2:])
    return [next(it) if o is not None else None for o in outs]


class _Propagate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, forest, backend, rotations, translations, affine, inverse_bind, points):
        call = _core.Call(backend)
        locals_ = (rotations, translations, affine, inverse_bind)
        globals_, skinning, positions, points_out = _run(forest, call, locals_, points)
        ctx.forest, ctx.place = forest, call.place
        ctx.save_for_backward(rotations, translations, affine, inverse_bind, points, globals_)
        empty = lambda: globals_.new_zeros(0)
        return (globals_, skinning if skinning is not None else empty(), positions,
                points_out if points_out is not None else empty())

    @staticmethod
    def backward(ctx, g_globals, g_skinning, g_positions, g_points):
        rotations, translations, affine, inverse_bind, points, globals_ = ctx.saved_tensors
        B = globals_.shape[0]
        zero_if_none = lambda g, shape: g if g is not None else globals_.new_zeros(shape)
        N, P = ctx.forest.joints, len(ctx.forest.point_joints)
        grads = (zero_if_none(g_globals, (B, N, 12)),
                 zero_if_none(g_skinning, (B, N, 12)) if inverse_bind is not None else None,
                 zero_if_none(g_positions, (B, N, 3)),
                 zero_if_none(g_points, (B, P, 3)) if points is not None else None)
        g_rot, g_trans, g_affine, g_pts = _run(ctx.forest, _core.Call(place=ctx.place),
                                               (rotations, translations, affine, inverse_bind), points, grads, globals_)
        return None, None, g_rot, g_trans, g_affine, None, g_pts
