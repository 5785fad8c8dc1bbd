"""The Python package's tests: run with Debian's interpreter (/usr/bin/python3) and its torch, through ctest or
`PYTHONPATH=python /usr/bin/python3 -m pytest python/tests`. Each op runs on every backend there is: the double CPU
reference, Vulkan (lavapipe in CI) and CUDA; a backend that cannot run here skips with the reason (Vulkan fails
instead under ARMATURE_REQUIRE_VULKAN=1)."""
import os
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import armature  # noqa: E402
from armature import _core  # noqa: E402


def _require(backend):
    if backend == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("CUDA: torch sees no CUDA device (Debian's torch is CPU-only)")
        try:
            _core.cuda_device(0)
        except armature.UnavailableError as e:
            pytest.skip(f"CUDA: {e}")
    if backend == "vulkan":
        try:
            _core.vulkan_device()
        except armature.UnavailableError as e:
            if os.environ.get("ARMATURE_REQUIRE_VULKAN") == "1":
                pytest.fail(f"Vulkan required (ARMATURE_REQUIRE_VULKAN): {e}")
            pytest.skip(f"Vulkan: {e}")


@pytest.fixture(params=["vulkan", "cuda"])
def gpu(request):
    """A GPU backend: ("vulkan", the CPU tensors' backend="vulkan") or ("cuda", the device of CUDA tensors)."""
    _require(request.param)
    return request.param


def on(backend, t):
    """t where `backend` takes it: CUDA tensors for CUDA, CPU tensors otherwise."""
    return t.cuda() if backend == "cuda" else t


def call_backend(backend):
    """The backend= argument for a backend: CUDA tensors choose CUDA themselves."""
    return "vulkan" if backend == "vulkan" else "auto"


def capture_cuda_graph(step):
    """step() captured in a CUDA graph after a warm-up on a side stream (torch's recipe): (graph, what the captured
    call returned, which the graph's replays overwrite)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    return graph, captured
