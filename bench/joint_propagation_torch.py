"""PyTorch baselines for armature-bench joint_propagation, run beside it on the GPU machine: the level-synchronous method (one
batched product per depth level) and pointer jumping (log2(depth) passes composing with the ancestor 2^k up), on
the same workloads, rigid locals (quaternion + translation) to 4x4 globals, forward and forward + backward
(autograd of a weighted sum). Medians of CUDA-event-timed calls after warm-up. Usage: python3 joint_propagation_torch.py [OUT.json]
"""
import random

import torch

from torch_timing import Rows, time_ms

DEV = "cuda"


def smplx_parents():
    p = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 15, 15, 15]
    for wrist in (20, 21):
        for _ in range(5):
            first = len(p)
            p += [wrist, first, first + 1]
    return p


def random_tree(n):
    rng = random.Random(7)
    return [-1] + [i - 1 - rng.randrange(min(i, 64)) for i in range(1, n)]


def local_matrices(q, t):
    q = q / q.norm(dim=-1, keepdim=True)
    x, y, z, w = q.unbind(-1)
    rows = [
        torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), t[..., 0]], -1),
        torch.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w), t[..., 1]], -1),
        torch.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y), t[..., 2]], -1),
        torch.stack([torch.zeros_like(x), torch.zeros_like(x), torch.zeros_like(x), torch.ones_like(x)], -1),
    ]
    return torch.stack(rows, -2)


class LevelSync:
    """One product per depth level; each level's globals gathered from the level above (autograd-friendly)."""

    def __init__(self, parents):
        n = len(parents)
        children = [[] for _ in range(n)]
        roots = [j for j in range(n) if parents[j] < 0]
        for j in range(n):
            if parents[j] >= 0:
                children[parents[j]].append(j)
        levels, frontier = [], roots
        while frontier:
            levels.append(frontier)
            frontier = [c for j in frontier for c in children[j]]
        pos = {}
        for lv in levels:
            for k, j in enumerate(lv):
                pos[j] = k
        self.idx = [torch.tensor(lv, device=DEV) for lv in levels]
        self.parent_pos = [None] + [torch.tensor([pos[parents[j]] for j in lv], device=DEV) for lv in levels[1:]]
        order = torch.cat(self.idx)
        self.inverse = torch.empty_like(order)
        self.inverse[order] = torch.arange(n, device=DEV)

    def __call__(self, L):
        g = [L[:, self.idx[0]]]
        for d in range(1, len(self.idx)):
            g.append(g[-1][:, self.parent_pos[d]] @ L[:, self.idx[d]])
        return torch.cat(g, 1)[:, self.inverse]


class PointerJumping:
    def __init__(self, parents):
        self.anc = torch.tensor(parents, device=DEV)

    def __call__(self, M):
        anc = self.anc
        while bool((anc >= 0).any()):
            has = anc >= 0
            safe = torch.where(has, anc, torch.zeros_like(anc))
            M = torch.where(has[None, :, None, None], M[:, safe] @ M, M)
            anc = torch.where(has, anc[safe], anc)
        return M


def main():
    out = Rows()
    workloads = [("smplx", smplx_parents(), 65536), ("random100k", random_tree(100000), 1),
                 ("random1m", random_tree(1000000), 1),
                 ("chains", [i - 1 if i % 1000 else -1 for i in range(1000000)], 1)]
    for name, parents, batch in workloads:
        n = len(parents)
        q = torch.randn(batch, n, 4, device=DEV, requires_grad=True)
        t = (0.1 * torch.randn(batch, n, 3, device=DEV)).requires_grad_()
        weights = torch.full((batch, n, 4, 4), 0.01, device=DEV)
        for method, cls in (("level-sync", LevelSync), ("pointer-jumping", PointerJumping)):
            prop = cls(parents)
            with torch.no_grad():
                fwd = time_ms(lambda: prop(local_matrices(q, t)))

            def step():
                (prop(local_matrices(q, t)) * weights).sum().backward()

            both = time_ms(step, iters=5, warmup=1)
            out.add(method, name, batch, fwd, both)
    out.write()


if __name__ == "__main__":
    main()
