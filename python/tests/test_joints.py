"""armature.joints against a plain-PyTorch propagation written here from the definition, gradcheck in float64 on the
CPU reference, and the GPU backends against the reference."""
import pytest
import torch

from armature import ArmatureError
from armature.joints import JointForest

from conftest import call_backend, on

# Each parent numbered after its children, two roots: the order is the forest's business, not the caller's.
PARENTS = [2, 2, 5, 4, 5, -1, 8, 8, -1, 6]
POINT_JOINTS = [0, 3, 3, 9]


def rotation(q):
    """Unit quaternions (x, y, z, w) (…,4) → rotation matrices (…,3,3)."""
    x, y, z, w = q.unbind(-1)
    return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1).reshape(
        q.shape[:-1] + (3, 3))


def homogeneous(m34):
    bottom = torch.zeros(m34.shape[:-2] + (1, 4), dtype=m34.dtype)
    bottom[..., 0, 3] = 1
    return torch.cat([m34, bottom], -2)


def propagate_torch(parents, rotations, translations, inverse_bind, points, point_joints):
    local = homogeneous(torch.cat([rotation(rotations), translations.unsqueeze(-1)], -1))
    globals_ = [None] * len(parents)

    def resolve(j):
        if globals_[j] is None:
            p = parents[j]
            globals_[j] = local[:, j] if p < 0 else resolve(p) @ local[:, j]
        return globals_[j]

    g = torch.stack([resolve(j) for j in range(len(parents))], 1)
    skinning = g @ homogeneous(inverse_bind)
    pts = torch.einsum("bpij,pj->bpi", g[:, point_joints, :3, :], torch.cat([points, torch.ones(len(points), 1,
                                                                                             dtype=points.dtype)], 1))
    return g[..., :3, :], skinning[..., :3, :], g[..., :3, 3], pts


def inputs(batch=3, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    N, P = len(PARENTS), len(POINT_JOINTS)
    q = torch.randn(batch, N, 4, generator=gen, dtype=dtype)
    q = q / q.norm(dim=-1, keepdim=True)
    t = torch.randn(batch, N, 3, generator=gen, dtype=dtype)
    ib = torch.randn(N, 3, 4, generator=gen, dtype=dtype)
    pts = torch.randn(P, 3, generator=gen, dtype=dtype)
    return q, t, ib, pts


def test_reference_matches_the_definition():
    q, t, ib, pts = inputs()
    forest = JointForest(PARENTS, POINT_JOINTS)
    out = forest(rotations=q, translations=t, inverse_bind=ib, points=pts)
    want = propagate_torch(PARENTS, q, t, ib, pts, POINT_JOINTS)
    for got, expected in zip(out, want):
        assert got.dtype == torch.float64
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_gradcheck_on_the_reference():
    q, t, _, pts = inputs(batch=2)
    forest = JointForest(PARENTS, POINT_JOINTS)

    def f(q, t, pts):
        out = forest(rotations=q, translations=t, points=pts)
        return out.globals, out.positions, out.points

    assert torch.autograd.gradcheck(f, (q.requires_grad_(), t.requires_grad_(), pts.requires_grad_()))


def test_affine_locals_gradcheck():
    gen = torch.Generator().manual_seed(3)
    affine = torch.randn(2, len(PARENTS), 3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    forest = JointForest(PARENTS)
    assert torch.autograd.gradcheck(lambda a: forest(affine=a).globals, (affine,))


def test_gpu_matches_the_reference(gpu):
    q, t, ib, pts = inputs(batch=5, dtype=torch.float32, seed=1)
    forest = JointForest(PARENTS, POINT_JOINTS)
    args = [on(gpu, x.clone()).requires_grad_(x is not ib) for x in (q, t, ib, pts)]
    out = forest(rotations=args[0], translations=args[1], inverse_bind=args[2], points=args[3],
                 backend=call_backend(gpu))
    (out.globals.sum() + out.skinning.square().sum() + out.positions.sum() + out.points.sum()).backward()
    ref_args = [x.double().requires_grad_(x is not ib) for x in (q, t, ib, pts)]
    ref = forest(rotations=ref_args[0], translations=ref_args[1], inverse_bind=ref_args[2], points=ref_args[3])
    (ref.globals.sum() + ref.skinning.square().sum() + ref.positions.sum() + ref.points.sum()).backward()
    # Chains of up to 4 fp32 rigid products of O(1) values: 1e-4.
    for got, want in zip(out, ref):
        assert got.dtype == torch.float32 and got.device.type == ("cuda" if gpu == "cuda" else "cpu")
        torch.testing.assert_close(got.double().cpu(), want.detach(), rtol=1e-4, atol=1e-4)
    for i in (0, 1, 3):
        torch.testing.assert_close(args[i].grad.double().cpu(), ref_args[i].grad, rtol=1e-4, atol=1e-4)


def test_gpu_is_deterministic(gpu):
    q, t, _, pts = inputs(batch=4, dtype=torch.float32, seed=2)
    forest = JointForest(PARENTS, POINT_JOINTS)
    runs = [forest(rotations=on(gpu, q), translations=on(gpu, t), points=on(gpu, pts), backend=call_backend(gpu))
            for _ in range(2)]
    for a, b in zip(runs[0], runs[1]):
        if a is not None:
            assert torch.equal(a, b)


def test_bad_input_is_named():
    with pytest.raises(ArmatureError, match="cycle"):
        JointForest([1, 2, 0])
    with pytest.raises(ValueError, match="parents holds 4294967296, past the int32"):
        JointForest([-1, 1 << 32])  # ctypes would have made it joint 0
    forest = JointForest(PARENTS, POINT_JOINTS)
    q, t, _, pts = inputs()
    with pytest.raises(ValueError, match=r"translations has shape \(3, 10, 2\)"):
        forest(rotations=q, translations=t[..., :2], points=pts)
    with pytest.raises(ValueError, match="attached points"):
        forest(rotations=q, translations=t)
    with pytest.raises(ValueError, match="backend must be one of"):
        forest(rotations=q, translations=t, points=pts, backend="metal")
