"""Running a C API op on torch tensors: which backend, the library's devices, and memory in and out.

- CUDA tensors run on the CUDA backend on the tensor's own device, on torch's current stream, zero-copy: torch
  allocates every output (its caching allocator owns the memory), and the work is ordered on that stream.
- CPU tensors run on the double CPU reference (float64 in and out; float32 inputs are widened, which is exact), or,
  with backend="vulkan", on the Vulkan backend: staged through library buffers, for machines without CUDA.
"""
import contextlib
import ctypes
import struct
import threading

import torch

from . import _lib
from ._lib import Exec, Tensor, check, lib

_BACKENDS = ("auto", "cpu", "vulkan")
_DTYPES = {torch.float32: _lib.FLOAT32, torch.int32: _lib.INT32, torch.float64: _lib.FLOAT64}
_lock = threading.Lock()
_devices = {}  # (backend, index) → device handle
_contexts = {}  # "vulkan" → context handle
_CPU = torch.device("cpu")
_F32, _F64, _I32, _I64 = torch.float32, torch.float64, torch.int32, torch.int64
_Tensor = torch.Tensor
_grad_enabled = torch.is_grad_enabled
_CPU_EXEC = Exec(_lib.CPU, 0, None)  # read only by the library
_CPU_EXEC_REF = ctypes.byref(_CPU_EXEC)
# torch's current stream as a raw cudaStream_t without building a Stream object (the per-call path), where this
# torch has it.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
# The current CUDA device without torch.cuda's lazy-init check (a CUDA tensor exists, so CUDA is initialised).
_current_device = getattr(torch._C, "_cuda_getDevice", None) or (lambda: torch.cuda.current_device())
# Contexts and devices live as long as the process: the objects made on them (forests, feature maps) may outlive any
# order of teardown Python would choose at exit.


def _handle(kind, index=0):
    """The library's context and device for `kind` ("vulkan" or "cuda"), made on first use."""
    key = (kind, index)
    device = _devices.get(key)
    if device is not None:
        return device
    with _lock:
        if key in _devices:
            return _devices[key]
        context = ctypes.c_void_p()
        if kind == "vulkan":
            info = _lib.ContextInfo(1, ctypes.sizeof(_lib.ContextInfo), None, 0)
            check(lib.armature_context_create(ctypes.byref(info), ctypes.byref(context)))
            _contexts[kind] = context
        device = ctypes.c_void_p()
        check(lib.armature_device_create(context, ctypes.byref(device)))
        _devices[key] = device
        return device


def vulkan_device():
    return _handle("vulkan")


def vulkan_description():
    """`armature info`'s lines for the Vulkan device, joined."""
    vulkan_device()
    text = ctypes.create_string_buffer(8192)
    check(lib.armature_context_describe(_contexts["vulkan"], text, len(text)))
    return text.value.decode().strip().replace("\n", "; ")


_cuda_places = {}  # index → (torch's device, the library's device that runs CUDA): every CUDA call looks it up


def _cuda_place(index):
    placed = _cuda_places.get(index)
    if placed is None:
        device = _handle("cuda", index)
        check(lib.armature_device_supports(device, _lib.CUDA))
        placed = _cuda_places[index] = (torch.device("cuda", index), device)
    return placed


def cuda_device(index):
    """CUDA's device for torch's cuda:index (the library launches on the current device: see run())."""
    return _cuda_place(index)[1]


def library_device(kind, device):
    """The library's device a backend's work and objects go to: None for the CPU reference."""
    if kind == "cuda":
        return cuda_device(device.index if device.index is not None else torch.cuda.current_device())
    return vulkan_device() if kind == "vulkan" else None


def creating_on(kind, device):
    """Where objects that hold device memory (forests, feature maps, skinning tables) must be made: CUDA allocates on
    the current device, so on the tensors' own one."""
    return torch.cuda.device(device) if kind == "cuda" else contextlib.nullcontext()


def check_tensor(name, t, shape, floating=True):
    """Checks a tensor's shape (None: any size there) and kind, naming the argument, where no call describes it
    (a call's inputs are checked by Call.input)."""
    if not isinstance(t, _Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    ts = t.shape
    if len(ts) != len(shape) or any(s is not None and s != d for s, d in zip(shape, ts)):
        _wrong_shape(name, ts, shape)
    dtype = t.dtype
    if not floating:
        if dtype is not _I32 and dtype is not _I64:
            raise TypeError(f"{name} must hold integers, got {dtype}")
    elif not dtype.is_floating_point:
        raise TypeError(f"{name} must be floating point, got {dtype}")


_INT32 = (-(1 << 31), (1 << 31) - 1)


def int32_values(name, values):
    """values (Python ints) as a tuple of the library's int32, refused where one does not fit (ctypes would wrap
    it)."""
    values = tuple(int(v) for v in values)
    for v in values:
        if not _INT32[0] <= v <= _INT32[1]:
            raise ValueError(f"{name} holds {v}, past the int32 the library takes")
    return values


def _check_int32(name, t):
    """int64 indices narrowed to the library's int32 must keep their values. On CUDA the check waits for the GPU
    (int32 inputs skip it), and cannot run inside a CUDA graph's capture."""
    if not t.numel():
        return
    if t.is_cuda and torch.cuda.is_current_stream_capturing():
        raise ValueError(f"{name} is int64: inside a CUDA graph's capture pass int32 indices (narrowing int64 "
                         "needs a range check that waits for the GPU)")
    low, high = torch.aminmax(t)
    int32_values(name, (low.item(), high.item()))


def _wrong_shape(name, ts, shape):
    want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
    raise ValueError(f"{name} has shape {tuple(ts)}, expected {want}")


class _NoGraph:
    """The ctx of a forward run without autograd: what it saves goes nowhere."""

    def save_for_backward(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


def apply(function, *args):
    """function.apply(*args), or its forward alone where no gradient can be asked for (no input requires one, or
    grad mode is off): autograd's bookkeeping is a good part of a small call's host time."""
    if _grad_enabled():
        for a in args:
            if isinstance(a, _Tensor) and a.requires_grad:
                return function.apply(*args)
    return function.forward(_NoGraph(), *args)


# Descriptions are packed into blocks of Tensor structs: one pack_into per tensor writes data, dtype, rank and shape
# (strides stay zero: contiguous).
_PACK = [struct.Struct("<Qii" + "q" * rank).pack_into for rank in range(_lib.MAX_RANK + 1)]
_SIZE = ctypes.sizeof(Tensor)
_DATA = Tensor.data.offset
_BLOCK = 16  # descriptions per block; most calls need fewer
_U32 = _lib.UINT32
# Blocks that no call holds, for the next CUDA or CPU calls: the library reads descriptions only during a call, and
# those calls write the same fields every time (a Vulkan call's blocks also hold buffers: those are not reused).
_free_blocks = []
# armature_exec of each CUDA stream, made once (the argument is its address).
_execs = {}


def _new_block():
    block = (Tensor * _BLOCK)()
    return block, ctypes.addressof(block)


def _cuda_exec(stream):
    """A new stream's armature_exec."""
    if len(_execs) > 64:  # streams made and dropped in a loop must not grow this without bound
        _execs.clear()
    e = _execs[stream] = ctypes.byref(Exec(_lib.CUDA, 0, stream))
    return e


class Call:
    """One op call: inputs checked and described for the backend, outputs allocated, memory kept alive until the
    call returns.

    A forward's call is placed by its first input: `input(name, t, shape)` checks t (naming the argument), puts the
    call on t's backend and device, and returns the address of t's description; later inputs must share that device.
    A backward's call is made with its forward's `place`. `arg(t)` describes a tensor already checked, `out(shape)`
    an output; run(fn) calls fn(device, exec) and returns the outputs as torch tensors of `dtype` (float64 where an
    input is, else float32) on the inputs' device.

    Every small call pays for this class, so its common path (CUDA or CPU tensors already of the compute dtype)
    reads each tensor's attributes once and calls no helper: a Python call or a torch attribute costs about 0.1 µs.
    """

    __slots__ = ("backend", "kind", "device", "dtype", "handle", "compute", "_index", "_on", "_like", "_keep",
                 "_buffers", "_outputs", "_staged", "_block", "_base", "_used", "_full")

    def __init__(self, backend="auto", place=None):
        self._block = None  # until a block is taken: __del__ runs even when this raises
        if backend != "auto" and backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        self.backend, self.dtype, self._outputs, self._used = backend, _F32, [], 0
        self.kind = self._index = self._like = self._keep = self._buffers = self._staged = self._full = None
        try:  # pop, not a test and a pop: another thread may take the last block between the two
            self._block, self._base = _free_blocks.pop()
        except IndexError:
            self._block, self._base = _new_block()
        if place is not None:
            self._place(place[0], place[1])
            self.dtype = place[2]

    @property
    def place(self):
        """(kind, CUDA device index or -1, dtype): where a backward of this call must run."""
        return self.kind, self._index, self.dtype

    def _place(self, kind, index):
        self.kind = kind
        if kind == "cuda":
            self.device, self.handle = _cuda_places.get(index) or _cuda_place(index)
            self.compute, self._on, self._index = _F32, self.device, index
        else:
            self.device = self._on = _CPU
            self.compute, self._index, self.handle = (_F64 if kind == "cpu" else _F32), -1, None
            if kind == "vulkan":
                self.handle = vulkan_device()
                self._buffers = []  # library buffers, freed after the call
                self._staged = []  # (library buffer, torch tensor to fill after the run)

    def _place_by(self, name, t, index):
        """Places the call by its first input, or says why another input cannot join it."""
        cuda = t.is_cuda
        if not cuda and not t.is_cpu:
            raise ValueError(f"{name} is on {t.device}: Armature runs CUDA and CPU tensors")
        if self.kind is not None:
            raise ValueError(f"{name} is on {t.device}, the call's other tensors on {self.device}")
        if cuda:
            if self.backend != "auto":
                raise ValueError(f"backend={self.backend!r} is for CPU tensors; CUDA tensors run on CUDA")
            self._place("cuda", index)
        else:
            self._place("vulkan" if self.backend == "vulkan" else "cpu", -1)

    def input(self, name, t, shape, integer=False, words=False, one_more=False):
        """Checks an input (a tensor of `shape`, None: any size there; floating point, or integers with `integer`
        or `words`) and describes it (with `one_more`, as a batch of one: shape (1, ...), as the library takes
        single images). None for None: an optional input left out."""
        if t is None:
            return None
        if not isinstance(t, _Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        ts = t.shape
        if len(ts) != len(shape):
            _wrong_shape(name, ts, shape)
        i = 0
        for s in shape:
            if s is not None and s != ts[i]:
                _wrong_shape(name, ts, shape)
            i += 1
        index = t.get_device()
        if index != self._index or (index < 0 and not t.is_cpu):
            self._place_by(name, t, index)
        dtype = t.dtype
        if integer or words:
            if dtype is not _I32:
                if dtype is not _I64:
                    raise TypeError(f"{name} must hold integers, got {dtype}")
                _check_int32(name, t)
            return self.arg(t, integer, words, one_more)
        if dtype is not _F32:
            if dtype is _F64:
                if index >= 0:
                    raise TypeError(f"{name} is float64 on CUDA: the CUDA kernels compute in float32 (convert it "
                                    "explicitly, or use CPU tensors for the float64 reference)")
                self.dtype = _F64
            elif not dtype.is_floating_point:
                raise TypeError(f"{name} must be floating point, got {dtype}")
        want = self.compute
        if dtype is not want or self._staged is not None or not t.is_contiguous():
            return self.arg(t, False, False, one_more)
        if self._like is None:
            self._like = t  # outputs are made like it: fewer arguments to parse than torch.empty's
        return self._describe(t, _DTYPES[want], (1, *ts) if one_more else ts)

    def arg(self, t, integer=False, words=False, one_more=False):
        """An input already checked (a saved tensor, a gradient); `words`: int32 memory the library reads as uint32
        words; `one_more` as in input()."""
        if t is None:
            return None
        want = _I32 if integer or words else self.compute
        if t.dtype is not want or not t.is_contiguous():  # most calls: already so, and converting costs a call each
            t = t.to(want).contiguous()
            if self._keep is None:
                self._keep = []
            self._keep.append(t)  # the caller's own tensors live as long as the call
        if want is not _I32 and self._like is None:
            self._like = t
        shape = (1, *t.shape) if one_more else t.shape
        if self._staged is not None:
            return self._stage(t, upload=True, dtype=_U32 if words else None, shape=shape)[1]
        return self._describe(t, _U32 if words else _DTYPES[want], shape)

    def _slot(self):
        """A fresh description's byte offset in self._block."""
        i = self._used
        if i == _BLOCK:  # full: the old block stays alive in _full until the call returns
            if self._full is None:
                self._full = []
            self._full.append((self._block, self._base))
            self._block, self._base = _new_block()
            i = 0
        self._used = i + 1
        return i * _SIZE

    def _describe(self, t, code, shape):
        """The address of a description of t's memory (contiguous) as the library's dtype `code` and `shape`. The
        caller keeps t alive until the call returns."""
        i = self._used
        if i == _BLOCK:
            offset = self._slot()
        else:  # _slot's common case, inline: every tensor of every call passes here
            self._used = i + 1
            offset = i * _SIZE
        n = len(shape)
        _PACK[n](self._block, offset + _DATA, t.data_ptr(), code, n, *shape)
        return self._base + offset

    def _stage(self, t, upload, dtype=None, count=None, shape=None):
        """Vulkan: a library buffer holding t (uploaded now when `upload`), described as `dtype` (the library's) and
        `shape`, or `count` elements, where given."""
        buffer = ctypes.c_void_p()
        kind = _DTYPES[t.dtype] if dtype is None else dtype
        n = t.numel() if count is None else count
        check(lib.armature_buffer_create(self.handle, kind, max(n, 1), ctypes.byref(buffer)))
        self._buffers.append(buffer)
        if upload and t.numel():
            check(lib.armature_buffer_upload(buffer, t.data_ptr(), t.numel() * t.element_size(), 0))
        address = self._base + self._slot()
        dims = (n,) if count is not None else tuple(t.shape if shape is None else shape)
        rank = len(dims)
        dims = dims or (1,)
        check(lib.armature_buffer_tensor(buffer, rank, (ctypes.c_int64 * len(dims))(*dims), address))
        return buffer, address

    def out(self, shape, integer=False, zero=False, words=False):
        """An output (or scratch) of `shape`; `words`: uint32 words the library fills (held as int32)."""
        like = self._like
        if integer or words or like is None:
            kind = _I32 if integer or words else self.compute
            t = (torch.zeros if zero else torch.empty)(shape, dtype=kind, device=self._on)
        else:
            kind = self.compute
            t = like.new_zeros(shape) if zero else like.new_empty(shape)
        self._outputs.append(t)
        if self._staged is not None:
            buffer, address = self._stage(t, upload=zero, dtype=_U32 if words else None)
            self._staged.append((buffer, t))
            return address
        return self._describe(t, _U32 if words else _DTYPES[kind], shape)

    def scratch_bytes(self, n):
        """Scratch of n bytes (the rasteriser's), as the library's byte tensor."""
        n = max(n, 1)
        if self._staged is not None:
            return self._stage(torch.empty(0), upload=False, dtype=_lib.BYTE, count=n)[1]
        t = torch.empty(((n + 3) // 4,), dtype=_I32, device=self._on)
        if self._keep is None:
            self._keep = []
        self._keep.append(t)
        return self._describe(t, _lib.BYTE, (n,))

    def run(self, fn):
        kind = self.kind
        if kind == "cuda":
            index = self._index
            stream = _raw_stream(index) if _raw_stream else torch.cuda.current_stream(index).cuda_stream
            e = _execs.get(stream) or _cuda_exec(stream)
            if index == _current_device():
                status = fn(self.handle, e)
            else:  # the library launches on the current device
                with torch.cuda.device(index):
                    status = fn(self.handle, e)
            if status:
                check(status)
        elif kind == "cpu":
            status = fn(None, _CPU_EXEC_REF)
            if status:
                check(status)
        else:
            self._run_vulkan(fn)
        self._release()
        outputs = self._outputs
        dtype = self.dtype
        if self.compute is not dtype:
            outputs = [t if t.dtype is _I32 else t.to(dtype) for t in outputs]
        return outputs

    def _run_vulkan(self, fn):
        failure = []

        def work(_, exec_pointer):
            try:
                return fn(self.handle, exec_pointer)
            except BaseException as e:  # an exception must not unwind through C
                failure.append(e)
                return _lib.INTERNAL

        callback = _lib.WORK_FN(work)
        status = lib.armature_device_run(self.handle, _lib.VULKAN, callback, None)
        if failure:
            raise failure[0]
        check(status)
        for buffer, t in self._staged:
            if t.numel():
                check(lib.armature_buffer_download(buffer, t.data_ptr(), t.numel() * t.element_size(), 0))

    def _release(self):
        self._keep = None
        block = self._block
        if block is None:
            return
        self._block = None
        if self._buffers is not None:  # vulkan: its blocks hold buffers, and are not reused
            for buffer in self._buffers:
                lib.armature_buffer_destroy(buffer)
            self._buffers.clear()
            return
        _free_blocks.append((block, self._base))
        if self._full is not None:
            _free_blocks.extend(self._full)
        if len(_free_blocks) > 64:  # a burst of nested calls must not keep its blocks for ever
            del _free_blocks[64:]

    def __del__(self):
        self._release()
