"""armature.smplx against smplx's lbs() written here in plain PyTorch from the published formulas (blend shapes,
joint regression, Rodrigues, pose correctives, the kinematic chain, linear blend skinning), on the default avatar
(an SMPL-X-layout model with PCA hands and a landmark embedding); gradcheck in float64 through the module; the GPU
backends against the reference; and the originals' conventions (joint count, stored parameters, broadcasting)."""
import os

import numpy as np
import pytest
import torch

import armature.smplx as smplx

from conftest import _require, call_backend, on

MODEL = os.environ.get("ARMATURE_DEFAULT_MODEL", os.path.join(os.path.dirname(__file__), "..", "..", "build", "assets",
                                                              "armature_default_smplx.npz"))
pytestmark = pytest.mark.skipif(not os.path.exists(MODEL), reason=f"no default avatar at {MODEL} (build first)")


def rodrigues(r):
    angle = (r + 1e-8).norm(dim=-1, keepdim=True)
    k = r / angle
    x, y, z = k.unbind(-1)
    zero = torch.zeros_like(x)
    K = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(r.shape[:-1] + (3, 3))
    s, c = torch.sin(angle).unsqueeze(-1), torch.cos(angle).unsqueeze(-1)
    return torch.eye(3, dtype=r.dtype) + s * K + (1 - c) * K @ K


def lbs_torch(d, full_pose, betas, expression, transl):
    """smplx's lbs() on the npz arrays `d` (float64)."""
    B = full_pose.shape[0]
    S, E = betas.shape[1], expression.shape[1]
    shapedirs = torch.cat([d["shapedirs"][:, :, :S], d["shapedirs"][:, :, 300:300 + E]], 2)
    v_shaped = d["v_template"] + torch.einsum("bl,vkl->bvk", torch.cat([betas, expression], 1), shapedirs)
    J = torch.einsum("jv,bvk->bjk", d["J_regressor"], v_shaped)
    R = rodrigues(full_pose.reshape(B, -1, 3))
    P = d["posedirs"].shape[2]
    pose_feature = (R[:, 1:] - torch.eye(3, dtype=R.dtype)).reshape(B, -1)
    v_posed = v_shaped + (pose_feature @ d["posedirs"].reshape(-1, P).T).reshape(B, -1, 3)
    parents = d["parents"]
    G = [None] * len(parents)
    for j, p in enumerate(parents):
        local = torch.cat([torch.cat([R[:, j], (J[:, j] - (J[:, p] if p >= 0 else 0)).unsqueeze(-1)], 2),
                           torch.tensor([[[0, 0, 0, 1.0]]], dtype=R.dtype).expand(B, 1, 4)], 1)
        G[j] = local if p < 0 else G[p] @ local
    G = torch.stack(G, 1)  # (B,J,4,4)
    posed_joints = G[:, :, :3, 3]
    A = G.clone()
    A[:, :, :3, 3] -= (G[:, :, :3, :3] @ J.unsqueeze(-1)).squeeze(-1)
    T = torch.einsum("vj,bjrc->bvrc", d["weights"], A)
    vertices = (T[:, :, :3, :3] @ v_posed.unsqueeze(-1)).squeeze(-1) + T[:, :, :3, 3]
    return vertices + transl.unsqueeze(1), posed_joints + transl.unsqueeze(1)


@pytest.fixture(scope="module")
def arrays():
    f = np.load(MODEL)
    d = {k: torch.tensor(f[k].astype(np.float64)) for k in ("v_template", "shapedirs", "J_regressor", "posedirs",
                                                            "weights", "hands_componentsl", "hands_componentsr",
                                                            "hands_meanl", "hands_meanr", "lmk_bary_coords")}
    d["parents"] = [-1] + [int(p) for p in f["kintree_table"][0][1:]]
    d["f"] = torch.tensor(f["f"].astype(np.int64))
    d["lmk_faces_idx"] = torch.tensor(f["lmk_faces_idx"].astype(np.int64))
    return d


def params(B, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, scale=0.3: (torch.rand(*shape, generator=g, dtype=dtype) * 2 - 1) * scale
    return dict(betas=r(B, 10, scale=1), expression=r(B, 10, scale=1), global_orient=r(B, 3), body_pose=r(B, 63),
                jaw_pose=r(B, 3), leye_pose=r(B, 3), reye_pose=r(B, 3), left_hand_pose=r(B, 6, scale=1),
                right_hand_pose=r(B, 6, scale=1), transl=r(B, 3))


def expected(d, p):
    lh = p["left_hand_pose"] @ d["hands_componentsl"][:6] + d["hands_meanl"]
    rh = p["right_hand_pose"] @ d["hands_componentsr"][:6] + d["hands_meanr"]
    full = torch.cat([p["global_orient"], p["body_pose"], p["jaw_pose"], p["leye_pose"], p["reye_pose"], lh, rh], 1)
    vertices, joints = lbs_torch(d, full, p["betas"], p["expression"], p["transl"])
    ids = smplx._VERTEX_IDS["smplx"]
    extra = vertices[:, [ids[n] for n in smplx._EXTRA]]
    corners = vertices[:, d["f"][d["lmk_faces_idx"]]]
    landmarks = (corners * d["lmk_bary_coords"].unsqueeze(-1)).sum(2)
    return vertices, torch.cat([joints, extra, landmarks], 1), full


def test_reference_matches_lbs(arrays):
    model = smplx.create(MODEL, model_type="smplx", num_betas=10, num_expression_coeffs=10, dtype=torch.float64,
                         batch_size=2)
    p = params(2)
    out = model(**p, return_full_pose=True)
    vertices, joints, full = expected(arrays, p)
    assert out.joints.shape == (2, 127, 3)  # 55 + 21 vertex-selected + 51 landmarks, as smplx
    torch.testing.assert_close(out.full_pose, full, rtol=0, atol=1e-12)
    torch.testing.assert_close(out.vertices, vertices, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(out.joints, joints, rtol=1e-9, atol=1e-9)


def test_stored_parameters_and_broadcasting():
    model = smplx.SMPLX(MODEL, batch_size=3, dtype=torch.float64, flat_hand_mean=True)
    names = {n for n, _ in model.named_parameters()}
    assert {"betas", "expression", "global_orient", "body_pose", "jaw_pose", "left_hand_pose", "transl"} <= names
    assert model.left_hand_pose.shape == (3, 6)  # PCA hands by default
    rest = model()  # every input from the stored (zero) parameters
    assert rest.vertices.shape == (3, 10475, 3)
    p = params(3)
    one_shape = model(betas=p["betas"][:1], body_pose=p["body_pose"])  # betas broadcast to the pose batch
    assert torch.equal(one_shape.vertices[1], model(betas=p["betas"][:1].expand(3, -1),
                                                    body_pose=p["body_pose"]).vertices[1])
    state = model.state_dict()
    assert "betas" in state and "faces_tensor" not in state


def test_gradcheck_through_the_module():
    model = smplx.SMPLX(MODEL, num_betas=3, num_expression_coeffs=2, num_pca_comps=2, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    mix = torch.randn(10475, 3, generator=g, dtype=torch.float64) / 10475
    inputs = [t.requires_grad_() for t in (torch.rand(1, 3, dtype=torch.float64) * 0.4,
                                           torch.rand(1, 63, dtype=torch.float64) * 0.4,
                                           torch.rand(1, 3, dtype=torch.float64),
                                           torch.rand(1, 2, dtype=torch.float64),
                                           torch.rand(1, 2, dtype=torch.float64))]

    def f(global_orient, body_pose, betas, expression, left_hand_pose):
        out = model(global_orient=global_orient, body_pose=body_pose, betas=betas, expression=expression,
                    left_hand_pose=left_hand_pose)
        return (out.vertices * mix).sum(1), out.joints[:, [0, 20, 60, 100]].reshape(1, -1)

    assert torch.autograd.gradcheck(f, inputs, atol=1e-7)


def test_gpu_matches_the_reference(gpu):
    kwargs = dict(num_betas=10, num_expression_coeffs=10, batch_size=4)
    ref_model = smplx.SMPLX(MODEL, dtype=torch.float64, **kwargs)
    model = smplx.SMPLX(MODEL, backend=call_backend(gpu), **kwargs)
    if gpu == "cuda":
        model = model.cuda()
    p32 = {k: on(gpu, v.float()).requires_grad_() for k, v in params(4, seed=2).items()}
    out = model(**p32)
    (out.vertices.square().sum() + out.joints.sum()).backward()
    p64 = {k: v.detach().cpu().double().requires_grad_() for k, v in p32.items()}
    ref = ref_model(**p64)
    (ref.vertices.square().sum() + ref.joints.sum()).backward()
    # fp32 blend products over 10,475 vertices and chains of 15 joints, in metres: 2e-5 m; gradients of sums over
    # every vertex: 1e-3 relative.
    torch.testing.assert_close(out.vertices.detach().double().cpu(), ref.vertices.detach(), rtol=0, atol=2e-5)
    torch.testing.assert_close(out.joints.detach().double().cpu(), ref.joints.detach(), rtol=0, atol=2e-5)
    for k in ("betas", "body_pose", "left_hand_pose", "expression", "transl"):
        torch.testing.assert_close(p32[k].grad.double().cpu(), p64[k].grad, rtol=1e-3, atol=1e-3, msg=k)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="model_type 'flame'"):
        smplx.create(MODEL, model_type="flame")
    with pytest.raises(NotImplementedError, match="use_face_contour"):
        smplx.SMPLX(MODEL, use_face_contour=True)
    with pytest.raises(Exception, match="nonexistent"):
        smplx.SMPLX("/nonexistent/SMPLX_NEUTRAL.npz")


@pytest.fixture(scope="module")
def smplh_file(tmp_path_factory):
    """A random model of SMPL+H's layout (6,890 vertices, 52 joints, 16 shape directions, no expressions, PCA hands),
    written as smplx's npz files are."""
    rng = np.random.default_rng(3)
    V, J = 6890, 52
    parents = [-1] + [max(0, (j - 1) // 2) for j in range(1, J)]
    weights = rng.random((V, J)) ** 8
    d = dict(v_template=rng.random((V, 3)) - 0.5, f=rng.integers(0, V, (2000, 3)).astype(np.uint32),
             J_regressor=(lambda r: r / r.sum(1, keepdims=True))(rng.random((J, V)) ** 16),
             kintree_table=np.array([[2 ** 32 - 1] + parents[1:], list(range(J))], dtype=np.int64),
             weights=weights / weights.sum(1, keepdims=True), posedirs=(rng.random((V, 3, (J - 1) * 9)) - 0.5) * 0.01,
             shapedirs=(rng.random((V, 3, 16)) - 0.5) * 0.05, hands_componentsl=rng.random((45, 45)) - 0.5,
             hands_componentsr=rng.random((45, 45)) - 0.5, hands_meanl=(rng.random(45) - 0.5) * 0.2,
             hands_meanr=(rng.random(45) - 0.5) * 0.2)
    path = tmp_path_factory.mktemp("smplh") / "SMPLH_NEUTRAL.npz"
    np.savez(path, **{k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in d.items()})
    arrays = {k: torch.tensor(np.asarray(v, dtype=np.float32).astype(np.float64)) for k, v in d.items()
              if k not in ("f", "kintree_table")}
    arrays["parents"] = parents
    return path, arrays


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_smplh_has_no_expression_buffers(smplh_file, backend):
    """A model without expressions (SMPL+H) skins with none passed, on the reference and on the GPU."""
    if backend == "vulkan":
        _require("vulkan")
    path, d = smplh_file
    dtype = torch.float64 if backend == "cpu" else torch.float32
    model = smplx.SMPLH(path, dtype=dtype, batch_size=2, backend="vulkan" if backend == "vulkan" else "auto")
    p = {k: v.to(dtype) for k, v in params(2, seed=4).items() if k in ("betas", "global_orient", "transl",
                                                                        "left_hand_pose", "right_hand_pose")}
    p["body_pose"] = params(2, seed=5)["body_pose"][:, :63].to(dtype)
    out = model(**p, return_full_pose=True)
    assert out.joints.shape == (2, 52 + 21, 3) and out.expression is None
    lh = p["left_hand_pose"].double() @ d["hands_componentsl"][:6] + d["hands_meanl"]
    rh = p["right_hand_pose"].double() @ d["hands_componentsr"][:6] + d["hands_meanr"]
    full = torch.cat([p["global_orient"].double(), p["body_pose"].double(), lh, rh], 1)
    vertices, joints = lbs_torch(d, full, p["betas"].double(), torch.zeros(2, 0, dtype=torch.float64),
                                 p["transl"].double())
    tol = 1e-9 if backend == "cpu" else 5e-5
    torch.testing.assert_close(out.vertices.double(), vertices, rtol=0, atol=tol)
    torch.testing.assert_close(out.joints[:, :52].double(), joints, rtol=0, atol=tol)


def test_create_finds_the_file_in_a_folder(smplh_file):
    path, _ = smplh_file
    folder = path.parent.parent / "models"
    (folder / "smplh").mkdir(parents=True, exist_ok=True)
    target = folder / "smplh" / "SMPLH_FEMALE.npz"
    if not target.exists():
        target.symlink_to(path)
    model = smplx.create(folder, model_type="smplh", gender="female", dtype=torch.float64)
    assert isinstance(model, smplx.SMPLH) and model.model.info.joints == 52


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_backward_of_an_earlier_forward(backend):
    """The library differentiates its skinning's last forward: a backward after another forward must still give the
    gradients of its own (the forward runs again), and one right after its forward the same (it does not)."""
    if backend == "vulkan":
        _require("vulkan")
    dtype = torch.float64 if backend == "cpu" else torch.float32
    model = smplx.SMPLX(MODEL, dtype=dtype, backend="vulkan" if backend == "vulkan" else "auto")
    first = {k: v.to(dtype).requires_grad_() for k, v in params(1, seed=6).items()}
    second = {k: v.to(dtype) for k, v in params(1, seed=7).items()}
    model(**first).vertices.square().sum().backward()
    alone = {k: v.grad.clone() for k, v in first.items()}
    for v in first.values():
        v.grad = None
    out = model(**first)
    model(**second)  # another forward on the same skinning before the first's backward
    out.vertices.square().sum().backward()
    for k, v in first.items():
        assert torch.equal(v.grad, alone[k]), k
