"""armature.smplx against smplx's lbs() written here in plain PyTorch from the published formulas (blend shapes,
joint regression, Rodrigues, pose correctives, the kinematic chain, linear blend skinning), on the default avatar
(an SMPL-X-layout model with PCA hands and a landmark embedding); gradcheck in float64 through the module; the GPU
backends against the reference; and the originals' conventions (joint count, stored parameters, broadcasting)."""
import math
import os

import numpy as np
import pytest
import torch

import armature.smplx as smplx

from conftest import _require, call_backend, capture_cuda_graph, on

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


def lbs_torch(d, full_pose, betas, expression, transl, pose2rot=True):
    """smplx's lbs() on the npz arrays `d` (float64); full_pose axis-angle, or rotation matrices (B,J,3,3)."""
    B = full_pose.shape[0]
    S, E = betas.shape[1], expression.shape[1]
    shapedirs = torch.cat([d["shapedirs"][:, :, :S], d["shapedirs"][:, :, 300:300 + E]], 2)
    v_shaped = d["v_template"] + torch.einsum("bl,vkl->bvk", torch.cat([betas, expression], 1), shapedirs)
    J = torch.einsum("jv,bvk->bjk", d["J_regressor"], v_shaped)
    R = rodrigues(full_pose.reshape(B, -1, 3)) if pose2rot else full_pose
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
                    left_hand_pose=left_hand_pose, return_full_pose=True)
        return (out.vertices * mix).sum(1), out.joints[:, [0, 20, 60, 100]].reshape(1, -1), out.full_pose[:, -50:]

    assert torch.autograd.gradcheck(f, inputs, atol=1e-7)

    def joints_alone(betas, left_hand_pose):  # no gradient reaches the vertices but through the gathered joints
        return model(betas=betas, left_hand_pose=left_hand_pose).joints[:, [3, 60, 90]].reshape(1, -1)

    assert torch.autograd.gradcheck(joints_alone, (inputs[2], inputs[4]), atol=1e-7)


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


def test_gradients_are_the_same_bits_twice(gpu):
    """Deterministic backward, the gathered joints' included (their corners share vertices: no float atomics)."""
    model = smplx.SMPLX(MODEL, batch_size=2, backend=call_backend(gpu))
    if gpu == "cuda":
        model = model.cuda()
    grads = []
    for _ in range(2):
        p = {k: on(gpu, v.float()).requires_grad_() for k, v in params(2, seed=21).items()}
        out = model(**p)
        (out.joints.square().sum() + out.vertices.sum()).backward()
        grads.append([v.grad for v in p.values()])
    for a, b in zip(*grads):
        assert torch.equal(a, b)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="model_type 'flame'"):
        smplx.create(MODEL, model_type="flame")
    with pytest.raises(ValueError, match="use_face_contour needs"):
        smplx.SMPLX(MODEL, use_face_contour=True)  # the default avatar has no contour embedding
    with pytest.raises(ValueError, match="v_template has 6 values"):
        smplx.SMPLX(MODEL, v_template=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="pose2rot=False takes"):
        smplx.SMPLX(MODEL)(body_pose=torch.zeros(1, 63), pose2rot=False)
    with pytest.raises(Exception, match="nonexistent"):
        smplx.SMPLX("/nonexistent/SMPLX_NEUTRAL.npz")


def backend_setup(backend):
    """The dtype and backend= argument of a test run on "cpu" (the float64 reference) or "vulkan" (float32)."""
    if backend == "vulkan":
        _require("vulkan")
        return torch.float32, "vulkan"
    return torch.float64, "auto"


def random_model(path, rng, V, J, parents, shape_directions, faces, scale, **extra):
    """A random model of V vertices and J joints written as smplx's npz files are (float32), and its arrays as the
    file holds them (float64 tensors), with the parents."""
    weights = rng.random((V, J)) ** 8
    d = dict(v_template=(rng.random((V, 3)) - 0.5) * scale, f=rng.integers(0, V, (faces, 3)).astype(np.uint32),
             J_regressor=(lambda r: r / r.sum(1, keepdims=True))(rng.random((J, V)) ** 16),
             kintree_table=np.array([[2 ** 32 - 1] + parents[1:], list(range(J))], dtype=np.int64),
             weights=weights / weights.sum(1, keepdims=True), posedirs=(rng.random((V, 3, (J - 1) * 9)) - 0.5) * 0.01,
             shapedirs=(rng.random((V, 3, shape_directions)) - 0.5) * 0.05 * scale, **extra)
    np.savez(path, **{k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in d.items()})
    arrays = {k: torch.tensor(np.asarray(v, dtype=np.float32).astype(np.float64)) for k, v in d.items()
              if k not in ("f", "kintree_table")}
    arrays["parents"] = parents
    return arrays


@pytest.fixture(scope="module")
def smplh_file(tmp_path_factory):
    """A random model of SMPL+H's layout (6,890 vertices, 52 joints, 16 shape directions, no expressions, PCA
    hands)."""
    rng = np.random.default_rng(3)
    parents = [-1] + [max(0, (j - 1) // 2) for j in range(1, 52)]
    path = tmp_path_factory.mktemp("smplh") / "SMPLH_NEUTRAL.npz"
    arrays = random_model(path, rng, 6890, 52, parents, 16, 2000, 1.0,
                          hands_componentsl=rng.random((45, 45)) - 0.5, hands_componentsr=rng.random((45, 45)) - 0.5,
                          hands_meanl=(rng.random(45) - 0.5) * 0.2, hands_meanr=(rng.random(45) - 0.5) * 0.2)
    return path, arrays


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_smplh_has_no_expression_buffers(smplh_file, backend):
    """A model without expressions (SMPL+H) skins with none passed, on the reference and on the GPU."""
    dtype, on = backend_setup(backend)
    path, d = smplh_file
    model = smplx.SMPLH(path, dtype=dtype, batch_size=2, backend=on)
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
    model = smplx.create(folder, model_type="smplh", gender="female", ext="npz", dtype=torch.float64)
    assert isinstance(model, smplx.SMPLH) and model.model.info.joints == 52


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_backward_of_an_earlier_forward(backend):
    """The library differentiates its skinning's last forward: a backward after another forward must still give the
    gradients of its own (the forward runs again), and one right after its forward the same (it does not)."""
    dtype, on = backend_setup(backend)
    model = smplx.SMPLX(MODEL, dtype=dtype, backend=on)
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


def test_v_template_replaces_the_files(arrays):
    g = torch.Generator().manual_seed(8)
    template = arrays["v_template"] + torch.randn(arrays["v_template"].shape, generator=g, dtype=torch.float64) * 0.01
    model = smplx.SMPLX(MODEL, dtype=torch.float64, batch_size=2, v_template=template)
    p = params(2, seed=9)
    vertices, joints, _ = expected(dict(arrays, v_template=template), p)
    out = model(**p)
    torch.testing.assert_close(out.vertices, vertices, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(out.joints, joints, rtol=1e-9, atol=1e-9)


def exact_rotation(r):
    """Axis-angle → matrix as the exponential of its cross-product matrix (rodrigues() above shifts the angle by
    1e-8, as smplx's batch_rodrigues does)."""
    x, y, z = r.unbind(-1)
    zero = torch.zeros_like(x)
    return torch.linalg.matrix_exp(torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(r.shape + (3,)))


def test_matrix_to_axis_angle_round_trips_at_every_angle():
    g = torch.Generator().manual_seed(10)
    axes = torch.nn.functional.normalize(torch.randn(8, 3, generator=g, dtype=torch.float64), dim=1)
    for angle in (0.0, 1e-9, 1e-4, 1.0, 3.0, math.pi - 1e-7, math.pi):
        r = axes * angle
        back = smplx._matrix_to_axis_angle(exact_rotation(r))
        if angle > math.pi - 1e-6:  # ±axis·π are one rotation
            back = back * torch.sign((back * r).sum(1, keepdim=True))
        torch.testing.assert_close(back, r, rtol=0, atol=1e-7 if angle > 3 else 1e-12, msg=str(angle))


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_rotation_matrices_as_input(arrays, backend):
    """pose2rot=False: the same surface from the axis-angles' matrices, and the gradients of a 6D-parameterised pose
    (matrices by Gram–Schmidt, as fitting code builds them) equal to those of smplx's lbs() on the matrices."""
    dtype, on = backend_setup(backend)
    kwargs = dict(dtype=dtype, batch_size=2, use_pca=False, flat_hand_mean=True, backend=on)
    model = smplx.SMPLX(MODEL, **kwargs)
    g = torch.Generator().manual_seed(11)
    pose = (torch.rand(2, 55, 3, generator=g, dtype=torch.float64) * 2 - 1) * 0.8
    betas, expression = params(2, seed=12)["betas"], params(2, seed=12)["expression"]
    names = ["global_orient", "body_pose", "jaw_pose", "leye_pose", "reye_pose", "left_hand_pose", "right_hand_pose"]
    sizes = [1, 21, 1, 1, 1, 15, 15]
    split = lambda x: dict(zip(names, x.split(sizes, dim=1)))

    # 6D: the first two columns of each rotation, orthonormalised back into a matrix.
    six = exact_rotation(pose)[..., :2].clone().requires_grad_()

    def matrices(s6):
        a, b = s6[..., 0], s6[..., 1]
        x = torch.nn.functional.normalize(a, dim=-1)
        y = torch.nn.functional.normalize(b - (x * b).sum(-1, keepdim=True) * x, dim=-1)
        return torch.stack([x, y, torch.cross(x, y, dim=-1)], -1)

    R = matrices(six)
    out = model(betas=betas.to(dtype), expression=expression.to(dtype), transl=torch.zeros(2, 3, dtype=dtype),
                pose2rot=False, return_full_pose=True, **{k: v.to(dtype) for k, v in split(R).items()})
    assert out.full_pose.shape == (2, 55, 3, 3)
    by_angles = model(betas=betas.to(dtype), expression=expression.to(dtype), transl=torch.zeros(2, 3, dtype=dtype),
                      **{k: v.reshape(2, -1).to(dtype) for k, v in split(pose).items()})
    tol = 1e-9 if backend == "cpu" else 2e-5
    torch.testing.assert_close(out.vertices.double(), by_angles.vertices.double(), rtol=0, atol=tol)
    out.vertices.double().square().sum().backward()
    mine = six.grad.clone()
    six.grad = None
    vertices, _ = lbs_torch(arrays, matrices(six), betas, expression, torch.zeros(2, 3, dtype=torch.float64),
                            pose2rot=False)
    vertices.square().sum().backward()
    # Each is a sum over 10,475 vertices whose terms largely cancel: compared against the largest gradient, 1e-7 of
    # it in float64 (the reference's chain of 15 joints and the log map), 1e-3 in float32.
    scale = six.grad.abs().max().item()
    torch.testing.assert_close(mine, six.grad, rtol=0, atol=(1e-7 if backend == "cpu" else 1e-3) * scale)


@pytest.fixture(scope="module")
def contour_file(tmp_path_factory):
    """The default avatar with a face contour embedding added (79 head turns × 17 landmarks, random faces)."""
    f = dict(np.load(MODEL))
    rng = np.random.default_rng(13)
    F = f["f"].shape[0]
    f["dynamic_lmk_faces_idx"] = rng.integers(0, F, (79, 17)).astype(np.int64)
    bary = rng.random((79, 17, 3))
    f["dynamic_lmk_bary_coords"] = (bary / bary.sum(-1, keepdims=True)).astype(np.float32)
    path = tmp_path_factory.mktemp("contour") / "SMPLX_NEUTRAL.npz"
    np.savez(path, **f)
    return path, f


def test_face_contour_follows_the_head_turn(arrays, contour_file):
    path, f = contour_file
    B = 6
    model = smplx.create(path, model_type="smplx", use_face_contour=True, dtype=torch.float64, batch_size=B)
    p = params(B, seed=14)
    # Turns about y of the neck chain: every branch of smplx's angle → row mapping (past ±39°, inside, zero).
    turns = torch.tensor([-1.2, -0.1, 0.0, 0.3, 0.9, 1.8], dtype=torch.float64)
    p["global_orient"] = torch.zeros(B, 3, dtype=torch.float64)
    p["global_orient"][:, 1] = turns
    out = model(**p)
    assert out.joints.shape == (B, 127 + 17, 3)
    vertices, joints, full = expected(arrays, p)
    # smplx's find_dynamic_lmk_idx_and_bcoords, from its formulas.
    R = rodrigues(full.reshape(B, -1, 3))
    rel = torch.eye(3, dtype=torch.float64).expand(B, 3, 3)
    for j in (12, 9, 6, 3, 0):
        rel = R[:, j] @ rel
    euler = torch.atan2(-rel[:, 2, 0], torch.sqrt(rel[:, 0, 0] ** 2 + rel[:, 1, 0] ** 2))
    y = torch.round(torch.clamp(-euler * 180 / math.pi, max=39)).long()
    row = torch.where(y < 0, torch.where(y < -39, torch.full_like(y, 78), 39 - y), y)
    assert {39, 78} <= set(row.tolist()) and row.min() < 39  # clamped, past -39°, and one of the rows between
    faces = torch.tensor(f["f"].astype(np.int64))[torch.tensor(f["dynamic_lmk_faces_idx"])[row]]  # (B,17,3)
    bary = torch.tensor(f["dynamic_lmk_bary_coords"].astype(np.float64))[row]
    contour = (vertices[torch.arange(B)[:, None, None], faces] * bary.unsqueeze(-1)).sum(2)
    torch.testing.assert_close(out.joints, torch.cat([joints, contour], 1), rtol=1e-9, atol=1e-9)


@pytest.fixture(scope="module")
def mano_file(tmp_path_factory):
    """A random model of MANO's layout (778 vertices, 16 joints, 10 shape directions, one hand's PCA), in a folder
    as smplx.create finds it."""
    rng = np.random.default_rng(15)
    parents = [-1] + [0 if j % 3 == 1 else j - 1 for j in range(1, 16)]
    folder = tmp_path_factory.mktemp("models")
    (folder / "mano").mkdir()
    arrays = random_model(folder / "mano" / "MANO_RIGHT.npz", rng, 778, 16, parents, 10, 1538, 0.1,
                          hands_components=rng.random((45, 45)) - 0.5, hands_mean=(rng.random(45) - 0.5) * 0.2)
    return folder, arrays


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_mano(mano_file, backend):
    dtype, on = backend_setup(backend)
    folder, d = mano_file
    model = smplx.create(folder, model_type="mano", ext="npz", dtype=dtype, batch_size=3, backend=on)
    assert isinstance(model, smplx.MANO) and model.hand_pose.shape == (3, 6)
    p = params(3, seed=16)
    hand_pose, betas = p["left_hand_pose"], p["betas"]
    out = model(betas=betas.to(dtype), global_orient=p["global_orient"].to(dtype), hand_pose=hand_pose.to(dtype),
                transl=p["transl"].to(dtype), return_full_pose=True)
    full = torch.cat([p["global_orient"], hand_pose @ d["hands_components"][:6] + d["hands_mean"]], 1)
    vertices, joints = lbs_torch(d, full, betas, torch.zeros(3, 0, dtype=torch.float64), p["transl"])
    tol = 1e-9 if backend == "cpu" else 2e-5
    assert out.joints.shape == (3, 16, 3) and out.full_pose.shape == (3, 48)
    torch.testing.assert_close(out.vertices.double(), vertices, rtol=0, atol=tol)
    torch.testing.assert_close(out.joints.double(), joints, rtol=0, atol=tol)
    torch.testing.assert_close(out.full_pose.double(), full, rtol=0, atol=1e-6)


def test_cuda_graph_capture_replays_the_eager_results():
    """The calls launch on torch's current stream into torch's memory, with no host synchronisation, so a training
    step through armature.smplx can be captured in a CUDA graph: its replay on new inputs equals the eager step."""
    _require("cuda")
    model = smplx.SMPLX(MODEL, batch_size=2).cuda()
    static = {k: v.float().cuda().requires_grad_() for k, v in params(2, seed=17).items()}
    grad = torch.rand(2, 10475, 3, device="cuda")
    names = list(static)

    def step():  # detached results: a graph kept alive past its step would tie the leaves to the capture's stream
        out = model(**static)
        grads = torch.autograd.grad(out.vertices, list(static.values()), grad)
        return [out.vertices.detach(), out.joints.detach()] + list(grads)

    graph, captured = capture_cuda_graph(step)
    fresh = {k: v.float().cuda() for k, v in params(2, seed=18).items()}
    with torch.no_grad():
        for k in names:
            static[k].copy_(fresh[k])
    graph.replay()
    eager = step()
    for name, a, b in zip(["vertices", "joints"] + names, captured, eager):
        assert torch.equal(a, b), name  # deterministic kernels: the same bits
