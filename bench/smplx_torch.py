"""smplx's lbs() in plain PyTorch, structured as smplx/lbs.py is (blend shapes, joint regression, batch Rodrigues,
pose correctives, batch_rigid_transform's chain walked joint by joint in Python, linear blend skinning): the eager
baseline of the Python benchmark, and the function its CUDA graph captures."""
import numpy as np
import torch


class Model:
    """The arrays lbs() reads, from an SMPL-X-layout npz (the default avatar), on `device` in float32."""

    def __init__(self, path, device, shape_components=10, expression_components=10):
        f = np.load(path)
        t = lambda a: torch.tensor(np.asarray(a, dtype=np.float32), device=device)
        S, E = shape_components, expression_components
        dirs = f["shapedirs"]
        self.shapedirs = t(np.concatenate([dirs[:, :, :S], dirs[:, :, 300:300 + E]], 2))
        self.v_template, self.J_regressor, self.weights = t(f["v_template"]), t(f["J_regressor"]), t(f["weights"])
        self.posedirs = t(f["posedirs"].reshape(-1, f["posedirs"].shape[2]).T)  # (P, V*3), as smplx stores it
        self.parents = [-1] + [int(p) for p in f["kintree_table"][0][1:]]
        # On the device already, so that a CUDA graph can capture lbs() (no host-to-device copies inside).
        self.parent_index = torch.tensor(self.parents[1:], device=device)
        self.bottom_row = torch.tensor([0, 0, 0, 1.0], device=device)


def batch_rodrigues(rot_vecs):
    angle = torch.norm(rot_vecs + 1e-8, dim=1, keepdim=True)
    rx, ry, rz = torch.split(rot_vecs / angle, 1, dim=1)
    zeros = torch.zeros_like(rx)
    K = torch.cat([zeros, -rz, ry, rz, zeros, -rx, -ry, rx, zeros], dim=1).view(-1, 3, 3)
    sin, cos = torch.sin(angle).unsqueeze(1), torch.cos(angle).unsqueeze(1)
    eye = torch.eye(3, dtype=rot_vecs.dtype, device=rot_vecs.device).unsqueeze(0)
    return eye + sin * K + (1 - cos) * torch.bmm(K, K)


def batch_rigid_transform(m, rot_mats, joints):
    rel_joints = joints.clone()
    rel_joints[:, 1:] -= joints[:, m.parent_index]
    local = torch.cat([torch.cat([rot_mats, rel_joints.unsqueeze(-1)], 3),
                       m.bottom_row.expand(*rot_mats.shape[:2], 1, 4)], 2)
    chain = [local[:, 0]]
    for i in range(1, len(m.parents)):
        chain.append(torch.matmul(chain[m.parents[i]], local[:, i]))
    transforms = torch.stack(chain, dim=1)
    posed_joints = transforms[:, :, :3, 3]
    rest = torch.matmul(transforms[:, :, :3, :3], joints.unsqueeze(-1)).squeeze(-1)
    relative = transforms.clone()
    relative[:, :, :3, 3] -= rest
    return posed_joints, relative


def lbs(m, pose, betas, transl):
    """pose (B,J*3) axis-angle, betas (B,S+E) shape and expression → vertices (B,V,3), joints (B,J,3)."""
    B = pose.shape[0]
    v_shaped = m.v_template + torch.einsum("bl,mkl->bmk", betas, m.shapedirs)
    joints = torch.einsum("bik,ji->bjk", v_shaped, m.J_regressor)
    rot_mats = batch_rodrigues(pose.view(-1, 3)).view(B, -1, 3, 3)
    eye = torch.eye(3, dtype=pose.dtype, device=pose.device)
    pose_feature = (rot_mats[:, 1:] - eye).view(B, -1)
    v_posed = v_shaped + torch.matmul(pose_feature, m.posedirs).view(B, -1, 3)
    posed_joints, A = batch_rigid_transform(m, rot_mats, joints)
    T = torch.matmul(m.weights, A.view(B, -1, 16)).view(B, -1, 4, 4)
    homogeneous = torch.cat([v_posed, torch.ones(B, v_posed.shape[1], 1, dtype=pose.dtype, device=pose.device)], 2)
    vertices = torch.matmul(T, homogeneous.unsqueeze(-1))[:, :, :3, 0]
    return vertices + transl.unsqueeze(1), posed_joints + transl.unsqueeze(1)
