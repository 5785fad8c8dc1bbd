"""smplx's body models (vchoutas/smplx) on Armature's skinning: change only the import.

    import armature.smplx as smplx
    model = smplx.create("models", model_type="smplx", num_betas=10, use_pca=True, num_pca_comps=6)
    out = model(betas=betas, body_pose=body_pose, left_hand_pose=lh, right_hand_pose=rh, return_full_pose=True)
    out.vertices, out.joints, out.full_pose

SMPL, SMPLH and SMPLX as the originals: stored parameters (`nn.Parameter`s, `.to(device)`, `state_dict`), `None`
inputs taking them, betas and expression broadcast to the pose batch, PCA hands (the default) with the hand mean
unless `flat_hand_mean`, and joints as smplx returns them: the skinning's joints, then the vertex-selected ones
(face, feet, finger tips), then, for SMPL-X, the 51 face landmarks of the model file's embedding. The skinning is
Armature's (exact forward and backward): CUDA tensors on CUDA, CPU tensors on the double reference, or on Vulkan
with backend="vulkan". Not supported yet: MANO, FLAME, the dynamic face contour (`use_face_contour`), rotation
matrices as input (`pose2rot=False`) and `v_template` overrides.
"""
import ctypes
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
           "right_hand_pose", "expression", "jaw_pose", "leye_pose", "reye_pose")


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

    def array(self, name, shape):
        n = 1
        for d in shape:
            n *= d
        values = torch.empty(n, dtype=torch.float64)
        check(lib.armature_body_model_array(self.handle, name.encode(), ctypes.c_void_p(values.data_ptr()), n))
        return values.reshape(shape)

    def __del__(self):
        if getattr(self, "handle", None):
            lib.armature_body_model_destroy(self.handle)


class _Skinnings:
    """The library's skinning objects of one model, per backend, device, component counts and batch capacity."""

    def __init__(self, path):
        self.path = path
        self.handles = {}  # key → (handle, batch capacity, the last forward it ran)

    def get(self, kind, device, S, E, batch):
        key = (kind, str(device) if kind == "cuda" else None, S, E)
        handle, capacity, _ = self.handles.get(key, (None, 0, None))
        if handle is None or batch > capacity:
            capacity = max(batch, 2 * capacity)
            library_device = _core.library_device(kind, device)
            backend = {"cuda": _lib.CUDA, "vulkan": _lib.VULKAN, "cpu": _lib.CPU}[kind]
            info = _lib.SkinningInfo(3, ctypes.sizeof(_lib.SkinningInfo), None, self.path.encode(), backend, S, E,
                                     capacity)
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


def _skin_run(skinnings, kind, device, dtype, pose, betas, expression, transl, forward, grads=None):
    """The forward `forward` (grads None): vertices and joints; or its backward: the gradients. The library's
    backward differentiates its handle's last forward, so the forward runs again first only where another has run
    on that handle since."""
    B, J = pose.shape[0], pose.shape[1]
    S = betas.shape[1]
    E = 0 if expression is None else expression.shape[1]
    key, handle = skinnings.get(kind, device, S, E, B)
    V = ctypes.c_uint32()
    check(lib.armature_skinning_sizes(handle, ctypes.byref(V), None))
    call = _core.Call(kind, device, dtype)
    args = [call.arg(pose), call.arg(betas), call.arg(expression), call.arg(transl)]
    if grads is None:
        vertices, joints = call.out((B, V.value, 3)), call.out((B, J, 3))
        results = call.run(lambda dev, e: lib.armature_skinning_forward(handle, e, *args, vertices, joints))
        skinnings.ran(key, forward)
        return results
    again = skinnings.last(key) is not forward
    vertices, joints = (call.out((B, V.value, 3)), call.out((B, J, 3))) if again else (None, None)
    g = [call.arg(grads[0]), call.arg(grads[1])]
    outs = [call.out((B, J, 3)), call.out((B, S)), call.out((B, E)) if E else None, call.out((B, 3))]

    def work(dev, e):
        status = _lib.OK
        if again:
            status = lib.armature_skinning_forward(handle, e, *args, vertices, joints)
            if status == _lib.OK and kind != "cpu":
                status = lib.armature_barrier(dev, e)
        if status == _lib.OK:
            status = lib.armature_skinning_backward(handle, e, args[0], g[0], g[1], *outs)
        return status

    results = call.run(work)[2 if again else 0:]
    skinnings.ran(key, None)  # a second backward of the same forward (retain_graph) runs it again: the safe side
    grad_pose, grad_betas = results[0], results[1]
    grad_expression = results[2] if E else None
    return grad_pose, grad_betas, grad_expression, results[-1]


class _Skin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, skinnings, backend, pose, betas, expression, transl):
        kind, device = _core.backend_of([pose, betas, expression, transl], backend)
        dtype = _core.result_dtype(pose, betas, expression, transl)
        ctx.forward = object()  # this forward, as the handle remembers it
        vertices, joints = _skin_run(skinnings, kind, device, dtype, pose, betas, expression, transl, ctx.forward)
        ctx.save_for_backward(pose, betas, expression, transl)
        ctx.skinnings, ctx.kind, ctx.device, ctx.dtype = skinnings, kind, device, dtype
        return vertices, joints

    @staticmethod
    def backward(ctx, grad_vertices, grad_joints):
        pose, betas, expression, transl = ctx.saved_tensors
        grad_pose, grad_betas, grad_expression, grad_transl = _skin_run(
            ctx.skinnings, ctx.kind, ctx.device, ctx.dtype, pose, betas, expression, transl, ctx.forward,
            (grad_vertices, grad_joints))
        return None, None, grad_pose, grad_betas, grad_expression, grad_transl


class SMPL(torch.nn.Module):
    NUM_BODY_JOINTS = 23
    KIND = "smplh"  # the vertex ids of SMPL's topology

    def __init__(self, model_path, num_betas=10, batch_size=1, dtype=torch.float32, create_betas=True,
                 betas=None, create_global_orient=True, global_orient=None, create_body_pose=True, body_pose=None,
                 create_transl=True, transl=None, joint_mapper=None, gender="neutral", v_template=None,
                 backend="auto", **kwargs):
        super().__init__()
        if v_template is not None:
            raise NotImplementedError("v_template overrides are not supported yet")
        self.model = _ModelFile(model_path)
        info = self.model.info
        self.num_betas = min(int(num_betas), info.shape_count)
        self.batch_size, self.dtype, self.joint_mapper, self.gender, self.backend = (
            batch_size, dtype, joint_mapper, gender, backend)
        self._skinnings = _Skinnings(self.model.path)
        self.register_buffer("faces_tensor", self.model.array("f", (info.faces, 3)).long(), persistent=False)
        self.faces = self.faces_tensor.numpy()
        ids = _VERTEX_IDS[self.KIND]
        extra = torch.tensor([ids[n] for n in _EXTRA], dtype=torch.long)
        if int(extra.max()) >= info.vertices:
            raise ValueError(f"{model_path}: {info.vertices} vertices, too few for {self.KIND}'s keypoint vertices")
        self.register_buffer("extra_joint_ids", extra, persistent=False)
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
        """The full pose's pieces, in the model's joint order."""
        return [parts["global_orient"], parts["body_pose"]]

    def _given(self, name, value):
        value = value if value is not None else getattr(self, name, None)
        if value is None:
            raise ValueError(f"{name} was not given and the model stores none (create_{name}=False)")
        return value

    def _forward(self, inputs, expression=None, return_verts=True, return_full_pose=False, pose2rot=True):
        if not pose2rot:
            raise NotImplementedError("pose2rot=False (rotation matrices as input) is not supported yet")
        parts = {k: self._given(k, v) for k, v in inputs.items()}
        full_pose = torch.cat(self._pose_parts(parts), dim=1)
        B = full_pose.shape[0]
        betas = parts["betas"].expand(B, -1) if parts["betas"].shape[0] == 1 else parts["betas"]
        if expression is not None and expression.shape[0] == 1:
            expression = expression.expand(B, -1)
        transl = parts.get("transl")
        transl = torch.zeros(B, 3, dtype=full_pose.dtype, device=full_pose.device) if transl is None else transl
        transl = transl.expand(B, -1) if transl.shape[0] == 1 else transl
        vertices, joints = _Skin.apply(self._skinnings, self.backend, full_pose.reshape(B, -1, 3), betas, expression,
                                       transl)
        joints = torch.cat([joints, vertices[:, self.extra_joint_ids.to(vertices.device)]] +
                           self._landmarks(vertices), dim=1)
        if self.joint_mapper is not None:
            joints = self.joint_mapper(joints)
        out = ModelOutput(vertices=vertices if return_verts else None, joints=joints,
                          full_pose=full_pose if return_full_pose else None, **parts)
        if expression is not None:
            out["expression"] = expression
        return out

    def _landmarks(self, vertices):
        return []

    def forward(self, betas=None, body_pose=None, global_orient=None, transl=None, return_verts=True,
                return_full_pose=False, pose2rot=True, **kwargs):
        return self._forward(dict(betas=betas, global_orient=global_orient, body_pose=body_pose, transl=transl),
                             return_verts=return_verts, return_full_pose=return_full_pose, pose2rot=pose2rot)


class SMPLH(SMPL):
    NUM_BODY_JOINTS = 21
    NUM_HAND_JOINTS = 15

    def __init__(self, model_path, use_pca=True, num_pca_comps=6, flat_hand_mean=False, create_left_hand_pose=True,
                 left_hand_pose=None, create_right_hand_pose=True, right_hand_pose=None, **kwargs):
        kwargs.setdefault("num_betas", 10)
        super().__init__(model_path, **kwargs)
        self.use_pca, self.num_pca_comps, self.flat_hand_mean = use_pca, int(num_pca_comps), flat_hand_mean
        if use_pca and not self.model.info.hand_pca:
            raise ValueError(f"{model_path}: the file has no hand PCA (hands_components); use use_pca=False")
        if use_pca and not 1 <= self.num_pca_comps <= 45:
            raise ValueError(f"num_pca_comps must be 1 … 45, got {num_pca_comps}")
        width = self.num_pca_comps if use_pca else 45
        if self.model.info.hand_pca:
            for side in "lr":
                self.register_buffer(f"{'left' if side == 'l' else 'right'}_hand_components",
                                     self.model.array(f"hands_components{side}", (45, 45))[:self.num_pca_comps]
                                     .to(self.dtype), persistent=False)
                mean = self.model.array(f"hands_mean{side}", (45,)).to(self.dtype)
                self.register_buffer(f"{'left' if side == 'l' else 'right'}_hand_mean",
                                     torch.zeros_like(mean) if flat_hand_mean else mean, persistent=False)
        elif not flat_hand_mean:
            raise ValueError(f"{model_path}: the file has no hand mean (hands_mean); use flat_hand_mean=True")
        self._parameter("left_hand_pose", create_left_hand_pose, left_hand_pose, width)
        self._parameter("right_hand_pose", create_right_hand_pose, right_hand_pose, width)

    def _hand(self, pose, side):
        if self.use_pca:
            pose = pose @ getattr(self, f"{side}_hand_components").to(pose)
        if not self.flat_hand_mean:
            pose = pose + getattr(self, f"{side}_hand_mean").to(pose)
        return pose

    def _pose_parts(self, p):
        return [p["global_orient"], p["body_pose"], self._hand(p["left_hand_pose"], "left"),
                self._hand(p["right_hand_pose"], "right")]

    def forward(self, betas=None, global_orient=None, body_pose=None, left_hand_pose=None, right_hand_pose=None,
                transl=None, return_verts=True, return_full_pose=False, pose2rot=True, **kwargs):
        return self._forward(dict(betas=betas, global_orient=global_orient, body_pose=body_pose,
                                  left_hand_pose=left_hand_pose, right_hand_pose=right_hand_pose, transl=transl),
                             return_verts=return_verts, return_full_pose=return_full_pose, pose2rot=pose2rot)


class SMPLX(SMPLH):
    NUM_BODY_JOINTS = 21
    KIND = "smplx"

    def __init__(self, model_path, num_expression_coeffs=10, create_expression=True, expression=None,
                 create_jaw_pose=True, jaw_pose=None, create_leye_pose=True, leye_pose=None, create_reye_pose=True,
                 reye_pose=None, use_face_contour=False, **kwargs):
        if use_face_contour:
            raise NotImplementedError("use_face_contour (the dynamic face contour) is not supported yet")
        super().__init__(model_path, **kwargs)
        info = self.model.info
        self.num_expression_coeffs = min(int(num_expression_coeffs), info.expression_count)
        self._parameter("expression", create_expression, expression, self.num_expression_coeffs)
        for name, create, value in (("jaw_pose", create_jaw_pose, jaw_pose), ("leye_pose", create_leye_pose, leye_pose),
                                    ("reye_pose", create_reye_pose, reye_pose)):
            self._parameter(name, create, value, 3)
        if info.landmarks:
            faces = self.faces_tensor[self.model.array("lmk_faces_idx", (info.landmarks,)).long()]
            self.register_buffer("lmk_vertex_ids", faces, persistent=False)  # (L,3)
            self.register_buffer("lmk_bary_coords", self.model.array("lmk_bary_coords", (info.landmarks, 3))
                                 .to(self.dtype), persistent=False)
        else:
            self.lmk_vertex_ids = None

    def _pose_parts(self, p):
        return [p["global_orient"], p["body_pose"], p["jaw_pose"], p["leye_pose"], p["reye_pose"],
                self._hand(p["left_hand_pose"], "left"), self._hand(p["right_hand_pose"], "right")]

    def _landmarks(self, vertices):
        if self.lmk_vertex_ids is None:
            return []
        corners = vertices[:, self.lmk_vertex_ids.to(vertices.device)]  # (B,L,3,3)
        return [(corners * self.lmk_bary_coords.to(vertices).unsqueeze(-1)).sum(2)]

    def forward(self, betas=None, global_orient=None, body_pose=None, left_hand_pose=None, right_hand_pose=None,
                transl=None, expression=None, jaw_pose=None, leye_pose=None, reye_pose=None, return_verts=True,
                return_full_pose=False, pose2rot=True, **kwargs):
        expression = self._given("expression", expression) if self.num_expression_coeffs else None
        return self._forward(dict(betas=betas, global_orient=global_orient, body_pose=body_pose,
                                  jaw_pose=jaw_pose, leye_pose=leye_pose, reye_pose=reye_pose,
                                  left_hand_pose=left_hand_pose, right_hand_pose=right_hand_pose, transl=transl),
                             expression=expression, return_verts=return_verts, return_full_pose=return_full_pose,
                             pose2rot=pose2rot)


_CLASSES = {"smpl": SMPL, "smplh": SMPLH, "smplx": SMPLX}


def create(model_path, model_type="smpl", **kwargs):
    """smplx.create: a file is used as is; a folder holds <model_type>/<MODEL>_<GENDER>.<ext>."""
    model_type = model_type.lower()
    if model_type not in _CLASSES:
        raise ValueError(f"model_type {model_type!r}: supported are {sorted(_CLASSES)} (MANO and FLAME not yet)")
    path = os.fspath(model_path)
    if os.path.isdir(path):
        gender, ext = kwargs.get("gender", "neutral"), kwargs.pop("ext", "npz")
        path = os.path.join(path, model_type, f"{model_type.upper()}_{gender.upper()}.{ext}")
    else:
        kwargs.pop("ext", None)
    return _CLASSES[model_type](path, **kwargs)
