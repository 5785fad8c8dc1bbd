"""Armature's GPU kernels from PyTorch, through libarmature's C API (docs/python.md).

    import armature
    armature.info()                  # the library found, its version, the backends it can run here

Modules: armature.smplx (smplx's body models), armature.sparsedrive (deformable aggregation, as SparseDrive's op),
armature.custom_rasterizer (Hunyuan3D's rasteriser), armature.gaussian (the anisotropic Gaussian field and a
learnable module), armature.joints (joint propagation over any forest). CUDA tensors run on
CUDA, on torch's current stream; CPU tensors on the double CPU reference, or on Vulkan with backend="vulkan".
"""
from ._lib import ArmatureError, UnavailableError

__version__ = "0.1.0"
__all__ = ["ArmatureError", "UnavailableError", "info", "__version__"]


def info():
    """A description of the library found and what it can run here (as `python3 -m armature info` prints)."""
    from . import _core, _lib
    from ._lib import lib

    lines = [f"armature {__version__} (Python), libarmature at {_lib_path()} (C API {lib.armature_api_version()})"]
    lines.append("cpu: the double reference (float64 and float32 CPU tensors)")
    try:
        import torch

        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                try:
                    _core.cuda_device(i)
                    lines.append(f"cuda:{i}: {torch.cuda.get_device_name(i)}")
                except _lib.ArmatureError as e:
                    lines.append(f"cuda:{i}: unavailable ({e})")
        else:
            lines.append("cuda: unavailable (torch sees no CUDA device)")
    except ImportError:
        lines.append("torch: not installed (the ops take torch tensors)")
    try:
        lines.append("vulkan: " + _core.vulkan_description())
    except _lib.ArmatureError as e:
        lines.append(f"vulkan: unavailable ({e})")
    return "\n".join(lines)


def _lib_path():
    from ._lib import lib

    lib.armature_api_version()  # loads it
    return lib.path

