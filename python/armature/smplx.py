"""smplx's body models (vchoutas/smplx) on Armature's skinning: change only the import.

    import armature.smplx as smplx
    model = smplx.create("models", model_type="smplx", num_betas=10, use_pca=True, num_pca_comps=6)
    out = model(betas=betas, body_pose=body_pose, left_hand_pose=lh, right_hand_pose=rh, return_full_pose=True)
    out.vertices, out.joints, out.full_pose

SMPL, SMPLH, SMPLX and MANO as the originals: stored parameters (`nn.Parameter`s, `.to(device)`, `state_dict`),
`None` inputs taking them, betas and expression broadcast to the pose batch, PCA hands (the default) with the hand
mean unless `flat_hand_mean`, a `v_template` in place of the file's, and joints as smplx returns them: the
skinning's joints, then the vertex-selected ones (face, feet, finger tips; not for MANO), then, for SMPL-X, the 51
face landmarks of the model file's embedding and, with `use_face_contour`, the 17 contour landmarks the head's turn
selects. `pose2rot=False` takes rotation matrices, (..., 3, 3) per joint, for every pose input (hands too: no PCA
and no hand mean, as smplx's layers); their gradients are those of the rotations' tangent directions, exact for
matrices built from any rotation parameterisation (axis-angle, quaternions, the 6D representation). The skinning is
Armature's (exact forward and backward): CUDA tensors on CUDA, CPU tensors on the double reference, or on Vulkan
with backend="vulkan". Not supported: FLAME.
"""
import collections
import ctypes
import math
import os

import torch

from . import _core, _lib
from ._lib import check, lib

# Vertices standing for keypoints the kinematic tree lacks (smplx's vertex_ids; SMPL shares SMPL+H's topology).
_VERTEX_IDS = {
    "smplh": dict(nose=332, reye=6260, leye=2800, rear=4071, lear=583, rthumb=6191, rindex=5782, rmiddle=5905,
                  rring=6016, rpinky=6133, lthumb=2746, lindex=2319, lmiddle=2445, lring=2556, lpinky=2673,
                  LBigToe=3216, LSmallToe=3226, LHeel=3387, RBigToe=6617, RSmallToe=6624, RHeel=6787),
    "smplx": dict(nose=9120, reye=9929, leye=9448, rear=616, lear=6, rthumb=8079, rindex=7669, rmiddle=7794,
                  rring=7905, rpinky=8022, lthumb=5361, lindex=4933, lmiddle=5058, lring=5169, lpinky=5286,
                  LBigToe=5770, LSmallToe=5780, LHeel=8846, RBigToe=8463, RSmallToe=8474, RHeel=8635),
}
# smplx's order: the face, the feet, then each hand's finger tips.
_EXTRA = (["nose", "reye", "leye", "rear", "lear"] + ["LBigToe", "LSmallToe", "LHeel", "RBigToe", "RSmallToe", "RHeel"]
          + [h + t for h in "lr" for t in ("thumb", "index", "middle", "ring", "pinky")])

_Fields = ("vertices", "joints", "full_pose", "global_orient", "transl", "betas", "body_pose", "left_hand_pose",
           "right_hand_pose", "hand_pose", "expression", "jaw_pose", "leye_pose", "reye_pose")


_Keypoints = collections.namedtuple("_Keypoints", "ids weights vertices places")


class ModelOutput(dict):
    """The output, with smplx's field names as attributes (None where the model has no such part)."""

    def __getattr__(self, name):
        if name in _Fields:
            return self.get(name)
        raise AttributeError(name)


class _ModelFile:
    """A body model file read through the library: its sizes and arrays."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.handle = ctypes.c_void_p()
        check(lib.armature_body_model_load(self.path.encode(), ctypes.byref(self.handle)))
        info = _lib.BodyModelInfo()
        check(lib.armature_body_model_info_get(self.handle, ctypes.byref(info)))
        self.info = info

    def shape(self, name):
        """The array's shape; (0,) where the file has none."""
        rank, dims = ctypes.c_uint32(), (ctypes.c_uint64 * 4)()
        check(lib.armature_body_model_array_shape(self.handle, name.encode(), ctypes.byref(rank), dims))
        return tuple(int(d) for d in dims[:rank.value])

    def array(self, name):
        shape = self.shape(name)
        values = torch.empty(shape, dtype=torch.float64)
        check(lib.armature_body_model_array(self.handle, name.encode(), ctypes.c_void_p(values.data_ptr()),
                                            values.numel()))
        return values

    def __del__(self):
        if getattr(self, "handle", None):
            lib.armature_body_model_destroy(self.handle)


class _Skinnings:
    """The library's skinning objects of one model, per backend, device, component counts and batch capacity."""

    def __init__(self, path, vertices, v_template=None):
        self.path, self.vertices = path, vertices
        self.v_template = v_template  # (V,3) float64 on the host, or None: the file's
        self.handles = {}  # key → (handle, batch capacity, the last forward it ran)

    def get(self, kind, device, S, E, batch):
        key = (kind, device.index, S, E)  # the CPU's and Vulkan's index: None
        handle, capacity, _ = self.handles.get(key, (None, 0, None))
        if handle is not None and batch <= capacity:
            return key, handle
        if handle is None or batch > capacity:
            capacity = max(batch, 2 * capacity)
            library_device = _core.library_device(kind, device)
            backend = {"cuda": _lib.CUDA, "vulkan": _lib.VULKAN, "cpu": _lib.CPU}[kind]
            template = None if self.v_template is None else ctypes.c_void_p(self.v_template.data_ptr())
            info = _lib.SkinningInfo(3, ctypes.sizeof(_lib.SkinningInfo), None, self.path.encode(), backend, S, E,
                                     capacity, template)
            handle = ctypes.c_void_p()
            with _core.creating_on(kind, device):
                check(lib.armature_skinning_create(library_device, ctypes.byref(info), ctypes.byref(handle)))
            if key in self.handles:
                lib.armature_skinning_destroy(self.handles[key][0])
            self.handles[key] = (handle, capacity, None)
        return key, handle

    def ran(self, key, forward):
        """Notes that the handle of `key` last ran `forward` (a backward differentiates its handle's last forward)."""
        handle, capacity, _ = self.handles[key]
        self.handles[key] = (handle, capacity, forward)

    def last(self, key):
        return self.handles[key][2]

    def __del__(self):
        for handle, _, _ in getattr(self, "handles", {}).values():
            lib.armature_skinning_destroy(handle)


def _skin_run(skinnings, call, pose, betas, expression, transl, forward, grads=None):
    """The forward `forward` (grads None): vertices and joints; or its backward: the gradients. The library's
    backward differentiates its handle's last forward, so the forward runs again first only where another has run
    on that handle since."""
    if grads is None:
        args = [call.input("pose", pose, (None, None, 3))]
        B = pose.shape[0]
        args += [call.input("betas", betas, (B, None)), call.input("expression", expression, (B, None)),
                 call.input("transl", transl, (B, 3))]
    else:
        args = [call.arg(pose), call.arg(betas), call.arg(expression), call.arg(transl)]
    B, J, S = pose.shape[0], pose.shape[1], betas.shape[1]
    E = 0 if expression is None else expression.shape[1]
    key, handle = skinnings.get(call.kind, call.device, S, E, B)
    V = skinnings.vertices
    if grads is None:
        vertices, joints = call.out((B, V, 3)), call.out((B, J, 3))
        results = call.run(lambda dev, e: lib.armature_skinning_forward(handle, e, *args, vertices, joints))
        skinnings.ran(key, forward)
        return results
    again = skinnings.last(key) is not forward
    vertices, joints = (call.out((B, V, 3)), call.out((B, J, 3))) if again else (None, None)
    g = [call.arg(grads[0]), call.arg(grads[1])]
    outs = [call.out((B, J, 3)), call.out((B, S)), call.out((B, E)) if E else None, call.out((B, 3))]

    def work(dev, e):
        status = _lib.OK
        if again:
            status = lib.armature_skinning_forward(handle, e, *args, vertices, joints)
            if status == _lib.OK and call.kind != "cpu":
                status = lib.armature_barrier(dev, e)
        if status == _lib.OK:
            status = lib.armature_skinning_backward(handle, e, args[0], g[0], g[1], *outs)
        return status

    results = call.run(work)[2 if again else 0:]
    skinnings.ran(key, None)  # a second backward of the same forward (retain_graph) runs it again: the safe side
    grad_pose, grad_betas = results[0], results[1]
    grad_expression = results[2] if E else None
    return grad_pose, grad_betas, grad_expression, results[-1]


class _Body(torch.autograd.Function):
    """A body model's forward as one autograd node: the pose pieces concatenated (through the PCA and mean-hand map
    where the model has one), skinned by the library, and the vertex-selected joints and landmarks gathered; the
    backward is the skinning's and those steps' transposes. At small batches each autograd node's bookkeeping costs
    more host time than its GPU work, so the steps are not left to autograd one by one.

    Outputs: vertices (B,V,3), joints (B,J+K,3) (the skinning's, then the K gathered ones), and the full pose
    (B,3J) (a copy where a single piece is the pose already: an output must not be an input)."""

    @staticmethod
    def forward(ctx, model, pose_map, pose_mean, betas, expression, transl, *pieces):
        ctx.forward = object()  # this forward, as the skinning handle remembers it
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None: no zeros made and read
        if len(pieces) > 1:
            full = torch.cat(pieces, dim=1)
        else:
            full = pieces[0].clone()
        if pose_map is not None:
            full = torch.addmm(pose_mean, full, pose_map)
        B = full.shape[0]
        call = _core.Call(model.backend)
        vertices, joints = _skin_run(model._skinnings, call, full.view(B, -1, 3), betas, expression, transl,
                                     ctx.forward)
        keypoints = model._keypoints(vertices)
        if keypoints is not None:
            ids, weights = keypoints.ids, keypoints.weights
            corners = vertices.index_select(1, ids.view(-1)).view(B, ids.shape[0], 3, 3)
            joints = torch.cat([joints, (corners * weights.unsqueeze(-1)).sum(2)], dim=1)
        ctx.save_for_backward(full, betas, expression, transl, pose_map)
        ctx.model, ctx.place, ctx.widths = model, call.place, [p.shape[1] for p in pieces]
        return vertices, joints, full

    @staticmethod
    def backward(ctx, grad_vertices, grad_joints, grad_full):
        full, betas, expression, transl, pose_map = ctx.saved_tensors
        model = ctx.model
        B = full.shape[0]
        J = full.shape[1] // 3
        grad_pose = grad_betas = grad_expression = grad_transl = None
        if grad_joints is not None:
            if grad_joints.shape[1] > J:  # the gathered joints: back onto their vertices
                keypoints = model._keypoints(grad_joints)
                corners = (keypoints.weights.unsqueeze(-1) * grad_joints[:, J:].unsqueeze(2)).reshape(B, -1, 3)
                # Each vertex's corners summed in a fixed order, then added once: no float atomics, the same bits
                # every run.
                table = keypoints.places
                corners = torch.cat([corners, corners.new_zeros(B, 1, 3)], dim=1)  # the table's padding: zero
                summed = corners.index_select(1, table.view(-1)).view(B, table.shape[0], table.shape[1], 3).sum(2)
                if grad_vertices is None:
                    grad_vertices = grad_joints.new_zeros(B, model._skinnings.vertices, 3)
                grad_vertices = grad_vertices.index_add(1, keypoints.vertices, summed)
                grad_joints = grad_joints[:, :J]
            elif grad_vertices is None:  # the library takes the joints' gradient alone as optional
                grad_vertices = grad_joints.new_zeros(B, model._skinnings.vertices, 3)
        if grad_vertices is not None:
            grad_pose, grad_betas, grad_expression, grad_transl = _skin_run(
                model._skinnings, _core.Call(place=ctx.place), full.view(B, J, 3), betas, expression, transl,
                ctx.forward, (grad_vertices, grad_joints))
            grad_pose = grad_pose.view(B, -1)
        if grad_full is not None:
            grad_pose = grad_full if grad_pose is None else grad_pose + grad_full
        grad_pieces = [None] * len(ctx.widths)
        if grad_pose is not None:
            if pose_map is not None:
                grad_pose = grad_pose.mm(pose_map.t())
            grad_pieces = grad_pose.split(ctx.widths, dim=1)
        return (None, None, None, grad_betas, grad_expression, grad_transl, *grad_pieces)


def _matrix_to_axis_angle(R):
    """Rotation matrices (..., 3, 3) → axis-angle (..., 3), differentiable everywhere: the unit quaternion read off
    R the best-conditioned of the four ways (Shepperd's: through its largest component), then the angle
    2·atan2(|v|, w) along v/|v|, whose ratio to |v| tends to 2/w as |v| → 0."""
    m = R.reshape(R.shape[:-2] + (9,)).unbind(-1)
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    # 4q_k² for k = w, x, y, z; they sum to 4, so the largest is at least 1.
    c = torch.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    # Row k is 4·q_k·q.
    rows = torch.stack([torch.stack([c[..., 0], m21 - m12, m02 - m20, m10 - m01], -1),
                        torch.stack([m21 - m12, c[..., 1], m01 + m10, m02 + m20], -1),
                        torch.stack([m02 - m20, m01 + m10, c[..., 2], m12 + m21], -1),
                        torch.stack([m10 - m01, m02 + m20, m12 + m21, c[..., 3]], -1)], -2)
    best = c.argmax(-1, keepdim=True)
    q = rows.gather(-2, best.unsqueeze(-1).expand(best.shape + (4,))).squeeze(-2)
    q = q / (2 * c.gather(-1, best).sqrt())
    q = torch.where(q[..., :1] < 0, -q, q)  # w ≥ 0: the angle in [0, π]
    w, v = q[..., 0], q[..., 1:]
    n2 = (v * v).sum(-1)
    small = n2 < 1e-12
    n = torch.where(small, torch.ones_like(n2), n2).sqrt()
    ratio = torch.where(small, 2 / w - 2 * n2 / (3 * w ** 3), 2 * torch.atan2(n, w) / n)
    return v * ratio.unsqueeze(-1)


class SMPL(torch.nn.Module):
    NUM_BODY_JOINTS = 23
    KIND = "smplh"  # the vertex ids of SMPL's topology

    def __init__(self, model_path, num_betas=10, batch_size=1, dtype=torch.float32, create_betas=True,
                 betas=None, create_global_orient=True, global_orient=None, create_body_pose=True, body_pose=None,
                 create_transl=True, transl=None, joint_mapper=None, gender="neutral", v_template=None,
                 backend="auto", **kwargs):
        super().__init__()
        self.model = _ModelFile(model_path)
        info = self.model.info
        self.num_betas = min(int(num_betas), info.shape_count)
        self.batch_size, self.dtype, self.joint_mapper, self.gender, self.backend = (
            batch_size, dtype, joint_mapper, gender, backend)
        template = None
        if v_template is not None:
            template = torch.as_tensor(v_template).detach().to("cpu", torch.float64).reshape(-1).contiguous()
            if template.numel() != info.vertices * 3:
                raise ValueError(f"v_template has {template.numel()} values; the model's {info.vertices} vertices "
                                 f"need {info.vertices * 3}")
        self._skinnings = _Skinnings(self.model.path, info.vertices, template)
        self.register_buffer("faces_tensor", self.model.array("f").long(), persistent=False)
        self.faces = self.faces_tensor.numpy()
        extra = torch.zeros(0, dtype=torch.long)
        if self.KIND:
            ids = _VERTEX_IDS[self.KIND]
            extra = torch.tensor([ids[n] for n in _EXTRA], dtype=torch.long)
            if int(extra.max()) >= info.vertices:
                raise ValueError(f"{model_path}: {info.vertices} vertices, too few for {self.KIND}'s keypoint "
                                 "vertices")
        # The joints after the skinning's, each a weighted sum of three vertices: a vertex-selected joint is one
        # vertex (weights 1, 0, 0), a landmark its face's corners and barycentric weights. One gather for all.
        self.register_buffer("keypoint_ids", extra.unsqueeze(1).repeat(1, 3), persistent=False)  # (K,3)
        self.register_buffer("keypoint_weights", torch.tensor([[1.0, 0, 0]], dtype=dtype).repeat(len(extra), 1),
                             persistent=False)
        self._keypoint_cache = {}  # (device index, dtype) → _Keypoints
        self._parameter("betas", create_betas, betas, self.num_betas)
        self._parameter("global_orient", create_global_orient, global_orient, 3)
        self._parameter("body_pose", create_body_pose, body_pose, self.NUM_BODY_JOINTS * 3)
        self._parameter("transl", create_transl, transl, 3)

    def _parameter(self, name, create, value, width):
        if not create:
            setattr(self, name, None)
            return
        if value is None:
            value = torch.zeros(self.batch_size, width, dtype=self.dtype)
        self.register_parameter(name, torch.nn.Parameter(torch.as_tensor(value, dtype=self.dtype)))

    @property
    def num_joints(self):
        return self.model.info.joints

    def _pose_parts(self, parts):
        """The full pose's pieces, in the model's joint order (hands as given: PCA coefficients or not)."""
        return [parts["global_orient"], parts["body_pose"]]

    def _given(self, name, value):
        value = value if value is not None else getattr(self, name, None)
        if value is None:
            raise ValueError(f"{name} was not given and the model stores none (create_{name}=False)")
        return value

    def _forward(self, inputs, expression=None, return_verts=True, return_full_pose=False, pose2rot=True):
        parts = {k: self._given(k, v) for k, v in inputs.items()}
        pieces = self._pose_parts(parts)
        B = max(p.shape[0] for p in pieces)
        betas = parts["betas"]
        transl = parts.get("transl")
        if transl is None:
            transl = pieces[0].new_zeros(B, 3)
        if B != 1:  # broadcast one row to the pose batch (at batch 1 there is nothing to do, and a view costs a call)
            betas = betas.expand(B, -1) if betas.shape[0] == 1 else betas
            if expression is not None and expression.shape[0] == 1:
                expression = expression.expand(B, -1)
            transl = transl.expand(B, -1) if transl.shape[0] == 1 else transl
        if pose2rot:
            pose_map, mean = getattr(self, "pose_map", None), getattr(self, "pose_mean", None)
            if pose_map is not None:  # PCA hands and the mean hand: one product
                like = pieces[0]
                if pose_map.dtype is not like.dtype or pose_map.get_device() != like.get_device():
                    pose_map, mean = pose_map.to(like), mean.to(like)
            vertices, joints, full_pose = _core.apply(_Body, self, pose_map, mean, betas, expression, transl,
                                                      *pieces)
            axis_angle = full_pose
        else:  # rotation matrices, (B, 9k) or (B, k, 3, 3) per piece
            for p in pieces:
                if p.shape[0] != B or p[0].numel() % 9:
                    raise ValueError(f"pose2rot=False takes every pose input as rotation matrices, (B, k, 3, 3) or "
                                     f"(B, 9k) with B = {B}; got one of shape {tuple(p.shape)}")
            full_pose = torch.cat([p.reshape(B, -1, 3, 3) for p in pieces], dim=1)
            axis_angle = _matrix_to_axis_angle(full_pose)
            axis_angle = axis_angle.reshape(B, -1)
            vertices, joints, _ = _core.apply(_Body, self, None, None, betas, expression, transl, axis_angle)
        contour = self._contour(vertices, axis_angle)
        if contour is not None:
            joints = torch.cat([joints, contour], dim=1)
        if self.joint_mapper is not None:
            joints = self.joint_mapper(joints)
        out = ModelOutput(vertices=vertices if return_verts else None, joints=joints,
                          full_pose=full_pose if return_full_pose else None, **parts)
        if expression is not None:
            out["expression"] = expression
        return out

    def _contour(self, vertices, axis_angle):
        """The face contour's landmarks (SMPL-X with use_face_contour), from the full pose (B,3J); else None."""
        return None

    def _keypoints(self, like):
        """The gathered joints' tables on `like`'s device and in its dtype (made once each; None where the model
        gathers none): ids and weights (K,3) of each joint's three vertices; and, for the backward, the distinct
        vertices (U,) with their corners' places in the flattened (K·3) order (U, M), padded with K·3 (a zero row
        the caller appends)."""
        key = (like.get_device(), like.dtype)
        cache = self._keypoint_cache
        if key not in cache:
            if not self.keypoint_ids.shape[0]:
                cache[key] = None
            else:
                flat = self.keypoint_ids.reshape(-1).cpu()
                vertices, inverse = torch.unique(flat, return_inverse=True)
                places = [[] for _ in range(len(vertices))]
                for place, u in enumerate(inverse.tolist()):
                    places[u].append(place)
                most = max(len(p) for p in places)
                table = torch.tensor([p + [len(flat)] * (most - len(p)) for p in places], dtype=torch.long)
                to = lambda t: t.to(like.device)
                cache[key] = _Keypoints(to(self.keypoint_ids), self.keypoint_weights.to(like.device, like.dtype),
                                        to(vertices), to(table))
        return cache[key]

    def forward(self, betas=None, body_pose=None, global_orient=None, transl=None, return_verts=True,
                return_full_pose=False, pose2rot=True, **kwargs):
        return self._forward(dict(betas=betas, global_orient=global_orient, body_pose=body_pose, transl=transl),
                             return_verts=return_verts, return_full_pose=return_full_pose, pose2rot=pose2rot)


class _Hands:
    """The PCA hands of SMPL+H, SMPL-X and MANO: coefficients through the file's components, plus its mean hand
    unless flat_hand_mean. `sides` maps each hand's name to the suffix of its arrays in the file."""

    def _init_hands(self, model_path, sides, use_pca, num_pca_comps, flat_hand_mean):
        self.use_pca, self.num_pca_comps, self.flat_hand_mean = use_pca, int(num_pca_comps), flat_hand_mean
        has_pca = all(self.model.shape(f"hands_components{suffix}") == (45, 45) for suffix in sides.values())
        if use_pca and not has_pca:
            raise ValueError(f"{model_path}: the file has no hand PCA (hands_components); use use_pca=False")
        if use_pca and not 1 <= self.num_pca_comps <= 45:
            raise ValueError(f"num_pca_comps must be 1 … 45, got {num_pca_comps}")
        if has_pca:
            for side, suffix in sides.items():
                self.register_buffer(f"{side}_hand_components", self.model.array(f"hands_components{suffix}")
                                     [:self.num_pca_comps].to(self.dtype), persistent=False)
                mean = self.model.array(f"hands_mean{suffix}").to(self.dtype)
                self.register_buffer(f"{side}_hand_mean", torch.zeros_like(mean) if flat_hand_mean else mean,
                                     persistent=False)
        elif not flat_hand_mean:
            raise ValueError(f"{model_path}: the file has no hand mean (hands_mean); use flat_hand_mean=True")
        self._build_pose_map()
        return self.num_pca_comps if use_pca else 45

    def _build_pose_map(self):
        """full pose = cat(inputs) @ pose_map + pose_mean (POSE_LAYOUT: a width per piece, or a hand's name): one
        product for the PCA hands and the mean hand; none where the hands are given whole and flat."""
        if not self.use_pca and self.flat_hand_mean:
            return
        blocks, means = [], []
        for piece in self.POSE_LAYOUT:
            if isinstance(piece, int):
                blocks.append(torch.eye(piece, dtype=self.dtype))
                means.append(torch.zeros(piece, dtype=self.dtype))
            else:
                blocks.append(getattr(self, f"{piece}_hand_components") if self.use_pca
                              else torch.eye(45, dtype=self.dtype))
                means.append(getattr(self, f"{piece}_hand_mean", torch.zeros(45, dtype=self.dtype)))
        self.register_buffer("pose_map", torch.block_diag(*blocks), persistent=False)
        self.register_buffer("pose_mean", torch.cat(means), persistent=False)


class SMPLH(_Hands, SMPL):
    NUM_BODY_JOINTS = 21
    NUM_HAND_JOINTS = 15
    POSE_LAYOUT = (3, 63, "left", "right")

    def __init__(self, model_path, use_pca=True, num_pca_comps=6, flat_hand_mean=False, create_left_hand_pose=True,
                 left_hand_pose=None, create_right_hand_pose=True, right_hand_pose=None, **kwargs):
        kwargs.setdefault("num_betas", 10)
        super().__init__(model_path, **kwargs)
        width = self._init_hands(model_path, {"left": "l", "right": "r"}, use_pca, num_pca_comps, flat_hand_mean)
        self._parameter("left_hand_pose", create_left_hand_pose, left_hand_pose, width)
        self._parameter("right_hand_pose", create_right_hand_pose, right_hand_pose, width)

    def _pose_parts(self, p):
        return [p["global_orient"], p["body_pose"], p["left_hand_pose"], p["right_hand_pose"]]

    def forward(self, betas=None, global_orient=None, body_pose=None, left_hand_pose=None, right_hand_pose=None,
                transl=None, return_verts=True, return_full_pose=False, pose2rot=True, **kwargs):
        return self._forward(dict(betas=betas, global_orient=global_orient, body_pose=body_pose,
                                  left_hand_pose=left_hand_pose, right_hand_pose=right_hand_pose, transl=transl),
                             return_verts=return_verts, return_full_pose=return_full_pose, pose2rot=pose2rot)


class SMPLX(SMPLH):
    NUM_BODY_JOINTS = 21
    KIND = "smplx"
    NECK_IDX = 12
    POSE_LAYOUT = (3, 63, 3, 3, 3, "left", "right")

    def __init__(self, model_path, num_expression_coeffs=10, create_expression=True, expression=None,
                 create_jaw_pose=True, jaw_pose=None, create_leye_pose=True, leye_pose=None, create_reye_pose=True,
                 reye_pose=None, use_face_contour=False, **kwargs):
        super().__init__(model_path, **kwargs)
        info = self.model.info
        self.num_expression_coeffs = min(int(num_expression_coeffs), info.expression_count)
        self._parameter("expression", create_expression, expression, self.num_expression_coeffs)
        for name, create, value in (("jaw_pose", create_jaw_pose, jaw_pose), ("leye_pose", create_leye_pose, leye_pose),
                                    ("reye_pose", create_reye_pose, reye_pose)):
            self._parameter(name, create, value, 3)
        if info.landmarks:  # after the vertex-selected joints, as smplx orders them
            faces = self.faces_tensor[self.model.array("lmk_faces_idx").long()]
            bary = self.model.array("lmk_bary_coords").to(self.dtype)
            self.keypoint_ids = torch.cat([self.keypoint_ids, faces])
            self.keypoint_weights = torch.cat([self.keypoint_weights, bary])
        self.use_face_contour = use_face_contour
        if use_face_contour:
            if self.model.shape("dynamic_lmk_faces_idx") == (0,) or not info.landmarks:
                raise ValueError(f"{model_path}: use_face_contour needs the file's landmark embedding "
                                 "(lmk_faces_idx and dynamic_lmk_faces_idx with their bary_coords)")
            faces = self.faces_tensor[self.model.array("dynamic_lmk_faces_idx").long()]
            self.register_buffer("dynamic_lmk_vertex_ids", faces, persistent=False)  # (A,C,3)
            self.register_buffer("dynamic_lmk_bary_coords", self.model.array("dynamic_lmk_bary_coords")
                                 .to(self.dtype), persistent=False)
            parents = self.model.array("kintree_parents").long().tolist()
            chain, j = [], self.NECK_IDX
            while j != -1:
                chain.append(j)
                j = parents[j]
            self.register_buffer("neck_kin_chain", torch.tensor(chain, dtype=torch.long), persistent=False)

    def _pose_parts(self, p):
        return [p["global_orient"], p["body_pose"], p["jaw_pose"], p["leye_pose"], p["reye_pose"],
                p["left_hand_pose"], p["right_hand_pose"]]

    def _contour_row(self, axis_angle):
        """smplx's find_dynamic_lmk_idx_and_bcoords: the head's turn about y (the neck chain's rotations composed,
        read as an Euler angle, in whole degrees, clamped to ±39) picks one of the file's rows of contour landmarks."""
        R = _rodrigues(axis_angle[:, self.neck_kin_chain.to(axis_angle.device)])  # (B,chain,3,3)
        turn = R[:, 0]
        for k in range(1, R.shape[1]):
            turn = R[:, k] @ turn
        euler = torch.atan2(-turn[:, 2, 0], torch.sqrt(turn[:, 0, 0] ** 2 + turn[:, 1, 0] ** 2))
        angle = torch.round(torch.clamp(-euler * 180.0 / math.pi, max=39)).long()
        row = torch.where(angle < 0, torch.where(angle < -39, torch.full_like(angle, 78), 39 - angle), angle)
        return row

    def _contour(self, vertices, axis_angle):
        if not self.use_face_contour:
            return None
        row = self._contour_row(axis_angle.detach().view(vertices.shape[0], -1, 3)).to(vertices.device)
        ids = self.dynamic_lmk_vertex_ids.to(vertices.device)[row]  # (B,C,3)
        bary = self.dynamic_lmk_bary_coords.to(vertices)[row]  # (B,C,3)
        corners = torch.gather(vertices.unsqueeze(1).expand(-1, ids.shape[1], -1, -1), 2,
                               ids.unsqueeze(-1).expand(-1, -1, -1, 3))  # (B,C,3,3)
        return (corners * bary.unsqueeze(-1)).sum(2)

    def forward(self, betas=None, global_orient=None, body_pose=None, left_hand_pose=None, right_hand_pose=None,
                transl=None, expression=None, jaw_pose=None, leye_pose=None, reye_pose=None, return_verts=True,
                return_full_pose=False, pose2rot=True, **kwargs):
        expression = self._given("expression", expression) if self.num_expression_coeffs else None
        return self._forward(dict(betas=betas, global_orient=global_orient, body_pose=body_pose,
                                  jaw_pose=jaw_pose, leye_pose=leye_pose, reye_pose=reye_pose,
                                  left_hand_pose=left_hand_pose, right_hand_pose=right_hand_pose, transl=transl),
                             expression=expression, return_verts=return_verts, return_full_pose=return_full_pose,
                             pose2rot=pose2rot)


class MANO(_Hands, SMPL):
    """One hand (16 joints: the wrist, then 15 finger joints); joints are the skinning's alone, as smplx's MANO."""
    NUM_BODY_JOINTS = 1
    NUM_HAND_JOINTS = 15
    KIND = None  # no vertex-selected joints
    POSE_LAYOUT = (3, "hand")

    def __init__(self, model_path, is_rhand=True, create_hand_pose=True, hand_pose=None, use_pca=True,
                 num_pca_comps=6, flat_hand_mean=False, **kwargs):
        kwargs.setdefault("num_betas", 10)
        kwargs["create_body_pose"] = False
        super().__init__(model_path, **kwargs)
        if self.model.info.joints != 16:
            raise ValueError(f"{model_path}: {self.model.info.joints} joints; MANO has 16")
        self.is_rhand = is_rhand
        width = self._init_hands(model_path, {"hand": ""}, use_pca, num_pca_comps, flat_hand_mean)
        self._parameter("hand_pose", create_hand_pose, hand_pose, width)

    def _pose_parts(self, p):
        return [p["global_orient"], p["hand_pose"]]

    def forward(self, betas=None, global_orient=None, hand_pose=None, transl=None, return_verts=True,
                return_full_pose=False, pose2rot=True, **kwargs):
        return self._forward(dict(betas=betas, global_orient=global_orient, hand_pose=hand_pose, transl=transl),
                             return_verts=return_verts, return_full_pose=return_full_pose, pose2rot=pose2rot)


def _rodrigues(r):
    """Axis-angle (..., 3) → rotation matrices (..., 3, 3)."""
    angle = torch.sqrt((r * r).sum(-1, keepdim=True) + 1e-16)
    k = r / angle
    x, y, z = k.unbind(-1)
    zero = torch.zeros_like(x)
    K = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(r.shape[:-1] + (3, 3))
    s, c = torch.sin(angle).unsqueeze(-1), torch.cos(angle).unsqueeze(-1)
    return torch.eye(3, dtype=r.dtype, device=r.device) + s * K + (1 - c) * K @ K


_CLASSES = {"smpl": SMPL, "smplh": SMPLH, "smplx": SMPLX, "mano": MANO}
_EXT = {"smpl": "pkl", "smplh": "pkl", "smplx": "npz", "mano": "pkl"}  # smplx's defaults


def create(model_path, model_type="smpl", **kwargs):
    """smplx.create: a folder holds <model_type>/<MODEL>_<GENDER>.<ext> (MANO: mano/MANO_RIGHT.<ext>, or _LEFT with
    is_rhand=False); a file is used as is, its model type read from its name (SMPLX_NEUTRAL.npz) where it names one."""
    path = os.fspath(model_path)
    if not os.path.isdir(path):
        named = os.path.basename(path).split("_")[0].lower()
        model_type = named if named in _CLASSES else model_type
    model_type = model_type.lower()
    if model_type not in _CLASSES:
        raise ValueError(f"model_type {model_type!r}: supported are {sorted(_CLASSES)} (FLAME is not)")
    ext = kwargs.pop("ext", _EXT[model_type])
    if os.path.isdir(path):
        if model_type == "mano":
            name = "MANO_" + ("RIGHT" if kwargs.get("is_rhand", True) else "LEFT")
        else:
            name = f"{model_type.upper()}_{kwargs.get('gender', 'neutral').upper()}"
        path = os.path.join(path, model_type, f"{name}.{ext}")
    return _CLASSES[model_type](path, **kwargs)
