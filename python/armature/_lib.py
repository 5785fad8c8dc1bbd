"""libarmature through ctypes: finding it, the C API's structs and signatures (armature/armature.h), errors.

Nothing here is compiled: the same package serves every Python and torch version, calling the C API, which links
neither libpython nor libtorch.
"""
import ctypes
import ctypes.util
import os
import pathlib

C_API_VERSION = 3  # ARMATURE_C_API_VERSION this package was written against

# armature_status
OK, INVALID_ARGUMENT, UNAVAILABLE, OUT_OF_MEMORY, INTERNAL = range(5)
# armature_backend
VULKAN, CUDA, CPU = 1, 2, 3
# armature_dtype
FLOAT32, INT32, UINT32, BYTE, FLOAT64 = range(5)
MAX_RANK = 6


class ArmatureError(RuntimeError):
    """A call the library refused or could not run; the message is the library's (it names the argument)."""


class UnavailableError(ArmatureError):
    """The backend cannot run here: no Vulkan device, no CUDA device, or a library built without it."""


class Tensor(ctypes.Structure):
    """armature_tensor: memory (a VkBuffer and byte offset, or a pointer), element type, shape, strides."""

    _fields_ = [
        ("vk_buffer", ctypes.c_uint64),
        ("offset", ctypes.c_uint64),
        ("data", ctypes.c_void_p),  # a CUDA device pointer, or host memory for the CPU backend
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_uint32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
    ]


class Exec(ctypes.Structure):
    """armature_exec: where an op's work goes."""

    _fields_ = [("backend", ctypes.c_int), ("command_buffer", ctypes.c_uint64), ("cuda_stream", ctypes.c_void_p)]


class ContextInfo(ctypes.Structure):
    _fields_ = [("s_type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("next", ctypes.c_void_p),
                ("validation", ctypes.c_uint32)]


# A tensor argument is passed as its description's address (an int, or None): building a POINTER(Tensor) object
# per argument was a good part of a small call's host time.
_T = ctypes.c_void_p


class JointLocals(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("rotations", _T), ("translations", _T), ("affine", _T),
                ("inverse_bind", _T)]


class GaussianFieldInputs(ctypes.Structure):
    _fields_ = [("x", _T), ("means", _T), ("cholesky", _T), ("weights", _T), ("grid", _T)]


class RasterDesc(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint32), ("height", ctypes.c_uint32), ("images", ctypes.c_uint32),
                ("ranges", ctypes.c_uint32), ("use_depth_prior", ctypes.c_uint32),
                ("occlusion_truncation", ctypes.c_float), ("scratch_call", ctypes.c_uint32)]


class SkinningInfo(ctypes.Structure):
    _fields_ = [("s_type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("next", ctypes.c_void_p),
                ("model_path", ctypes.c_char_p), ("backend", ctypes.c_int), ("shape_components", ctypes.c_uint32),
                ("expression_components", ctypes.c_uint32), ("max_batch", ctypes.c_uint32),
                ("v_template", ctypes.c_void_p)]


class GridView(ctypes.Structure):
    _fields_ = [("layers", ctypes.c_uint32), ("height", ctypes.c_uint32), ("width", ctypes.c_uint32),
                ("positions", ctypes.c_void_p), ("normals", ctypes.c_void_p), ("features", ctypes.c_void_p)]


class BodyModelInfo(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("vertices", "faces", "joints", "shape_count", "expression_count",
                                                      "hand_pca", "landmarks")]


WORK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Exec))

_E = ctypes.POINTER(Exec)
_h = ctypes.c_void_p  # every opaque handle
_u32, _u64, _i32, _f32, _f64 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_float, ctypes.c_double

# name: (argument types); every function returns armature_status unless listed in _RETURNS.
_SIGNATURES = {
    "armature_last_error": (),
    "armature_api_version": (),
    "armature_context_create": (ctypes.POINTER(ContextInfo), ctypes.POINTER(_h)),
    "armature_context_destroy": (_h,),
    "armature_context_describe": (_h, ctypes.c_char_p, ctypes.c_size_t),
    "armature_device_create": (_h, ctypes.POINTER(_h)),
    "armature_device_destroy": (_h,),
    "armature_device_supports": (_h, ctypes.c_int),
    "armature_device_run": (_h, ctypes.c_int, WORK_FN, ctypes.c_void_p),
    "armature_barrier": (_h, _E),
    "armature_buffer_create": (_h, ctypes.c_int, _u64, ctypes.POINTER(_h)),
    "armature_buffer_destroy": (_h,),
    "armature_buffer_upload": (_h, ctypes.c_void_p, _u64, _u64),
    "armature_buffer_download": (_h, ctypes.c_void_p, _u64, _u64),
    "armature_buffer_tensor": (_h, _u32, ctypes.POINTER(ctypes.c_int64), _T),
    "armature_joint_forest_create": (_h, _u32, ctypes.POINTER(_i32), _u32, ctypes.POINTER(_i32), ctypes.POINTER(_h)),
    "armature_joint_forest_destroy": (_h,),
    "armature_joint_forest_scratch": (_h, _u32, ctypes.POINTER(_u64)),
    "armature_joint_propagation": (_h, _E, _h, ctypes.POINTER(JointLocals), _T, _T, _T, _T, _T, _T),
    "armature_joint_propagation_backward": (_h, _E, _h, ctypes.POINTER(JointLocals), _T, _T, _T, _T, _T, _T, _T, _T,
                                            _T, _T, _T, _T),
    "armature_feature_maps_create": (_h, _u32, _u32, ctypes.POINTER(_i32), ctypes.POINTER(_i32), _u32,
                                     ctypes.POINTER(_h)),
    "armature_feature_maps_destroy": (_h,),
    "armature_deformable_aggregation": (_h, _E, _h, _T, _T, _T, _T),
    "armature_deformable_aggregation_scratch": (_h, _T, _T, _T, ctypes.POINTER(_u64)),
    "armature_deformable_aggregation_backward": (_h, _E, _h, _T, _T, _T, _T, _T, _T, _T, _T),
    "armature_gaussian_field_scratch": (_u32, _u32, _u32, ctypes.c_int, ctypes.POINTER(_u64)),
    "armature_gaussian_grid_words": (_u32, _u32, ctypes.POINTER(_u64)),
    "armature_build_gaussian_grid": (_h, _E, ctypes.POINTER(GaussianFieldInputs), _f32, _T),
    "armature_gaussian_field": (_h, _E, ctypes.POINTER(GaussianFieldInputs), _T, _T),
    "armature_gaussian_field_backward": (_h, _E, ctypes.POINTER(GaussianFieldInputs), _T, _T, _T, _T, _T, _T),
    "armature_raster_scratch_bytes": (ctypes.POINTER(RasterDesc), ctypes.POINTER(_u64)),
    "armature_rasterize": (_h, _E, ctypes.POINTER(RasterDesc), _T, _T, _T, _T, _T, _T, _T),
    "armature_rasterize_backward": (_h, _E, ctypes.POINTER(RasterDesc), _T, _T, _T, _T, _T),
    "armature_interpolate": (_h, _E, _T, _T, _T, _T, _T),
    "armature_interpolate_backward": (_h, _E, _T, _T, _T, _T, _T, _T, _T),
    "armature_skinning_create": (_h, ctypes.POINTER(SkinningInfo), ctypes.POINTER(_h)),
    "armature_skinning_destroy": (_h,),
    "armature_skinning_sizes": (_h, ctypes.POINTER(_u32), ctypes.POINTER(_u32)),
    "armature_skinning_forward": (_h, _E, _T, _T, _T, _T, _T, _T),
    "armature_skinning_backward": (_h, _E, _T, _T, _T, _T, _T, _T, _T),
    "armature_body_model_load": (ctypes.c_char_p, ctypes.POINTER(_h)),
    "armature_body_model_destroy": (_h,),
    "armature_body_model_info_get": (_h, ctypes.POINTER(BodyModelInfo)),
    "armature_body_model_array": (_h, ctypes.c_char_p, ctypes.c_void_p, _u64),
    "armature_body_model_array_shape": (_h, ctypes.c_char_p, ctypes.POINTER(_u32), ctypes.POINTER(_u64)),
    "armature_grid_hierarchy_build": (ctypes.c_int, ctypes.POINTER(GridView), _u32, _u32, _i32, _i32,
                                      ctypes.POINTER(_h)),
    "armature_grid_hierarchy_destroy": (_h,),
    "armature_grid_hierarchy_shape": (_h, ctypes.c_char_p, _u32, ctypes.POINTER(_u32), ctypes.POINTER(_u64)),
    "armature_grid_hierarchy_copy": (_h, ctypes.c_char_p, _u32, ctypes.c_void_p, _u64),
}
_RETURNS = {
    "armature_last_error": ctypes.c_char_p,
    "armature_api_version": _u32,
    "armature_context_destroy": None,
    "armature_device_destroy": None,
    "armature_buffer_destroy": None,
    "armature_joint_forest_destroy": None,
    "armature_feature_maps_destroy": None,
    "armature_skinning_destroy": None,
    "armature_body_model_destroy": None,
    "armature_grid_hierarchy_destroy": None,
}


def _candidates():
    """Where libarmature may be: $ARMATURE_LIBRARY, beside this package, the source tree's build folder, or where
    the dynamic loader finds it."""
    if os.environ.get("ARMATURE_LIBRARY"):
        return [pathlib.Path(os.environ["ARMATURE_LIBRARY"])]
    here = pathlib.Path(__file__).resolve().parent
    root = here.parent.parent
    found = [here / "libarmature.so", root / "build" / "engine" / "libarmature.so"]
    installed = ctypes.util.find_library("armature")  # `cmake --install` into a prefix the loader searches
    return found + ([pathlib.Path(installed)] if installed else [])


class _Library:
    """The loaded library, with each function's types declared once; loaded on first use."""

    def __init__(self):
        self._cdll = None
        self.path = None

    def _load(self):
        tried = []
        for path in _candidates():
            if not path.exists():
                tried.append(f"{path} (absent)")
                continue
            try:
                cdll = ctypes.CDLL(str(path))
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            cdll.armature_api_version.restype = _u32
            version = cdll.armature_api_version()
            if version < C_API_VERSION:
                raise ArmatureError(f"{path} has C API version {version}; this package needs {C_API_VERSION}")
            for name, argtypes in _SIGNATURES.items():
                fn = getattr(cdll, name)
                fn.argtypes = list(argtypes)
                fn.restype = _RETURNS.get(name, ctypes.c_int)
                self.__dict__[name] = fn  # later lookups skip __getattr__
            self._cdll, self.path = cdll, path
            return
        raise ArmatureError("libarmature not found: build it (README) or set ARMATURE_LIBRARY to its path; tried "
                            + "; ".join(tried))

    def __getattr__(self, name):
        if name.startswith("armature_"):
            if self._cdll is None:
                self._load()
            return getattr(self._cdll, name)
        raise AttributeError(name)


lib = _Library()


def check(status, what=""):
    """Raises the library's message for a failed status."""
    if status == OK:
        return
    message = lib.armature_last_error().decode("utf-8", "replace") or what
    if status == UNAVAILABLE:
        raise UnavailableError(message)
    if status == OUT_OF_MEMORY:
        raise MemoryError(message)
    raise ArmatureError(message)
