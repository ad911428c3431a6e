"""Where the CUDA kernels run (the *runtime*): a CUDA GPU through CuPy, or the host emulation.

Both runtimes offer the same small interface: ``xp`` (the array module: CuPy or NumPy),
``function(source, name)`` (a compiled kernel), ``launch(...)``, ``free_bytes()`` and
``block_threads``. The GPU kernels' Python wrappers are written against it once.

* :class:`CudaRuntime` loads each kernel variant from the binaries compiled ahead of time and
  shipped with the package (:mod:`swdask.gpu._prebuilt`) where one is current for the GPU;
  otherwise it compiles the variant with NVRTC through ``cupy.RawModule``
  (:data:`swdask.gpu._kernels.COMPILE_OPTIONS`; CuPy picks the device's architecture), one
  module per (device, variant), cached for the process (CuPy also caches the binaries on
  disk). Both build the same text, :func:`swdask.gpu._kernels.source` (local headers
  inlined, so the compile caches, keyed by the text, and the binaries' digests see every
  header change), with the same options.
* :class:`EmulationRuntime` builds the same sources with g++ against ``host_emulation.h``
  and runs them on the CPU, one fiber per CUDA thread. It exists so that the kernels' logic
  can be tested where there is no GPU; it is slow. Select it with the setting
  ``swdask.gpu.runtime: emulation`` (``dask.config.set``; see :mod:`swdask._settings`).

("Runtime" here, to keep it apart from the two other choices swdask makes: the *backend*, CPU
or GPU kernels, which users pick with ``backend=``, and the *frame library* of a column or
partition, pandas or cuDF.)

CuPy is imported only here, lazily: ``import swdask`` never needs it.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import _kernels, _prebuilt


class GpuUnavailableError(RuntimeError):
    """backend="gpu" was asked for where CuPy or a CUDA GPU is missing."""


def _settings():
    from .. import _settings

    return _settings


# --------------------------------------------------------------------------------------- CuPy


@lru_cache(maxsize=None)
def _cupy_function(device_id: int, source_name: str, name: str):
    import cupy

    with cupy.cuda.Device(device_id):
        if _settings().get_bool("gpu.prebuilt"):
            loaded = _prebuilt.load(cupy, device_id, source_name, name)
            if loaded is not None:
                return loaded
        module = cupy.RawModule(code=_kernels.source(source_name),
                                options=_kernels.COMPILE_OPTIONS, name_expressions=(name,))
        return module.get_function(name)


@lru_cache(maxsize=None)
def _multiprocessor_count(device_id: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device_id).attributes["MultiProcessorCount"])


_STREAMS = threading.local()


def on_stream(stream):
    """``stream`` (of :meth:`CudaRuntime.concurrent`) made current for the array module's
    work (CuPy), or nothing for ``None`` (the current stream; the emulation's only one)."""
    return nullcontext() if stream is None else stream


def _side_streams(device_id: int, count: int, prioritize_first: bool = False):
    """Non-blocking streams for concurrent launches, kept per thread and device (a Dask
    worker's threads each get their own); with ``prioritize_first``, the first of them has the
    device's highest priority (:func:`_priority_stream`)."""
    import cupy

    cache = getattr(_STREAMS, "by_device", None)
    if cache is None:
        cache = _STREAMS.by_device = {}
    streams = cache.setdefault(device_id, [])
    while len(streams) < count:
        streams.append(cupy.cuda.Stream(non_blocking=True))
    if not prioritize_first:
        return streams[:count]
    priority = cache.setdefault((device_id, "priority"), [_priority_stream(cupy)])
    return priority + streams[:count - 1]


def _priority_stream(cupy):
    """A non-blocking stream of the device's highest priority (CUDA clamps a priority past
    its range to the range's end), for the longest targets' launch beside the others
    (``concurrent(..., prioritize_first=True)``), so that its blocks are dispatched before
    the other launches' when both wait for room on the multiprocessors: the longest targets
    set the end of the search, so they start first. sp500k in 8 partitions, queued as the
    search job queues them, searched faster that way than with plain streams
    (docs/notes/gpu-several-gpus-and-dask.md)."""
    return cupy.cuda.Stream(non_blocking=True, priority=-(1 << 20))


class CudaRuntime:
    name = "cuda"
    block_threads = 256

    def __init__(self):
        try:
            import cupy
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise GpuUnavailableError(
                "backend='gpu' needs CuPy and a CUDA GPU; install CuPy (pip install "
                "'swdask[gpu]', i.e. cupy-cuda13x) or use backend='cpu'"
            ) from exc
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as exc:  # pragma: no cover
            raise GpuUnavailableError(
                f"backend='gpu' found no usable CUDA GPU ({exc}); use backend='cpu'") from None
        if count == 0:  # pragma: no cover
            raise GpuUnavailableError("backend='gpu' found no CUDA GPU; use backend='cpu'")
        self.xp = cupy

    @property
    def multiprocessors(self) -> int:
        """SMs of the current device (asked once per device: ``Device.attributes`` queries
        every attribute, too slow for each search)."""
        return _multiprocessor_count(self.xp.cuda.Device().id)

    @property
    def compute_capability(self) -> int:
        return int(self.xp.cuda.Device().compute_capability)

    def function(self, source_name: str, name: str):
        return _cupy_function(self.xp.cuda.Device().id, source_name, name)

    def load_shipped(self) -> int:
        """Load every kernel variant shipped compiled for the current device
        (:mod:`~swdask.gpu._prebuilt`), none compiled: what a new worker process readies
        before its first task (:func:`swdask._dask.ready_worker`). Returns how many."""
        device = self.xp.cuda.Device().id
        capability = self.compute_capability
        loaded = 0
        if not _settings().get_bool("gpu.prebuilt"):
            return loaded
        for source_name, names in _kernels.all_variants(capability).items():
            for name in names:
                if _prebuilt.find(source_name, name, capability) is not None:
                    _cupy_function(device, source_name, name)
                    loaded += 1
        return loaded

    def device_count(self) -> int:
        """The CUDA devices this process sees (``CUDA_VISIBLE_DEVICES`` applies)."""
        return int(self.xp.cuda.runtime.getDeviceCount())

    def current_device(self) -> int:
        return int(self.xp.cuda.Device().id)

    def on_device(self, index: int):
        """The context in which this thread's arrays and launches go to device ``index``
        (CuPy's ``Device``: CUDA's current device is per host thread; the previous one is
        restored on exit). Kernels, streams and CuPy's memory pool are per device already."""
        return self.xp.cuda.Device(int(index))

    def use_own_stream(self, device: int) -> None:
        """From now on this thread's arrays and launches go to device ``device``, on a
        non-blocking stream of its own (a pool thread's start: on the default stream the
        threads' launches would wait for each other)."""
        cupy = self.xp
        cupy.cuda.Device(int(device)).use()
        _STREAMS.own = cupy.cuda.Stream(non_blocking=True)  # held for the thread's life
        _STREAMS.own.use()

    def own_pool(self):
        """The context in which this thread's CuPy arrays come from CuPy's own memory pool
        where CuPy's allocator is RMM's on a resource that asks the driver for every
        allocation (:func:`driver_allocator`); else nothing changes.

        Why: importing cuDF points CuPy's allocator at RMM, whose default resource calls
        ``cudaMalloc`` and ``cudaFree`` (which waits for the device) for every array. The
        scan allocates small arrays for every stack of queries, so in a process that had
        imported cuDF (a dask-cuda worker reading cuDF partitions, a notebook) the same
        search scanned clearly slower than in one that had not
        (docs/notes/gpu-several-gpus-and-dask.md, "cuDF's allocator"). An RMM resource
        that pools (pool, arena, async) or caps (a limiting adaptor: its headroom bounds
        swdask's work, :meth:`free_bytes`) is the user's choice and stays. The setting is
        this thread's only (CuPy's ``using_allocator``), restored on exit."""
        if not driver_allocator(self.xp):
            return nullcontext()
        return self.xp.cuda.using_allocator(self.xp.get_default_memory_pool().malloc)

    def launch(self, function, grid: int, block: int, args, shared_mem: int = 0,
               stream=None):
        if grid <= 0:
            return
        if shared_mem > 48 * 1024:
            function.max_dynamic_shared_size_bytes = shared_mem
        function((int(grid),), (int(block),), tuple(args), shared_mem=int(shared_mem),
                 stream=stream)

    @contextmanager
    def concurrent(self, count: int, prioritize_first: bool = False, joined=None):
        """``count`` streams (``[None]`` for one: the current stream) that start after the
        work queued so far on the current stream and that it waits for on exit; with
        ``prioritize_first`` the first has the device's highest priority. The arrays the
        launches read must outlive the block (the caller holds them).

        With ``joined`` (a list), the current stream does not wait on exit: the launches run
        on side streams even for one, and an event at each stream's end is appended to
        ``joined``. The caller then makes a stream wait with :meth:`wait_for` before it uses
        their results, and holds the arrays they read or write until then (so that the
        memory pool does not hand them to later work on the current stream)."""
        if count <= 1 and joined is None:
            yield [None] * count
            return
        cupy = self.xp
        current = cupy.cuda.get_current_stream()
        ready = current.record()
        streams = _side_streams(cupy.cuda.Device().id, max(count, 1), prioritize_first)
        for stream in streams:
            stream.wait_event(ready)
        try:
            yield streams
        finally:
            for stream in streams:
                if joined is None:
                    current.wait_event(stream.record())
                else:
                    joined.append(stream.record())

    def wait_for(self, events) -> None:
        """The current stream waits for ``events`` (see :meth:`concurrent`'s ``joined``;
        None: nothing to wait for)."""
        current = self.xp.cuda.get_current_stream()
        for event in events:
            if event is not None:
                current.wait_event(event)

    def follow(self, first, others) -> None:
        """Each of the streams ``others`` waits for the work queued so far on ``first``
        (streams of :meth:`concurrent`; ``None``: the current stream)."""
        current = self.xp.cuda.get_current_stream()
        done = (first or current).record()
        for stream in others:
            (stream or current).wait_event(done)

    def record(self):
        """An event after the work queued so far on the current stream."""
        return self.xp.cuda.get_current_stream().record()

    @contextmanager
    def reading_after(self, event):
        """A stream that waits for ``event`` alone, made current: results of work before
        ``event`` read back there do not wait for work queued after it on its own stream
        (one stream per thread and device, for reading back; None: the current stream)."""
        if event is None:
            yield
            return
        stream = _own_stream(self.xp, "read")
        stream.wait_event(event)
        with stream:
            yield

    def free_bytes(self) -> int:
        """Bytes swdask may still allocate: the device's free memory plus CuPy's pooled
        free blocks, lowered to the headroom of an RMM ``LimitingResourceAdaptor`` when one is
        the current resource (a capped worker) and to the setting ``swdask.gpu.memory-bytes``."""
        free, _total = self.xp.cuda.runtime.memGetInfo()
        free = int(free) + int(self.xp.get_default_memory_pool().free_bytes())
        for cap in (_rmm_headroom(), _env_memory_cap()):
            if cap is not None:
                free = min(free, cap)
        return max(free, 0)

    def total_bytes(self) -> int:
        """The device's memory, or the RMM limit / ``swdask.gpu.memory-bytes`` when lower."""
        total = int(self.xp.cuda.runtime.memGetInfo()[1])
        for cap in (_rmm_limit(), _env_memory_cap()):
            if cap is not None:
                total = min(total, cap)
        return total

    def release_cached_memory(self) -> None:
        """Give CuPy's pooled free blocks back (after an allocation failed)."""
        self.xp.get_default_memory_pool().free_all_blocks()

    def to_host(self, array) -> np.ndarray:
        return self.xp.asnumpy(array)

    def full(self, shape, value: int, dtype):
        """A new device array of ``value``, 0 or -1 (every byte alike), set by a memset on
        the current stream: CuPy's ``full`` is a kernel to compile on a fresh machine."""
        if value not in (0, -1):
            raise ValueError("a memset fills with 0 or -1 only")
        array = self.xp.empty(shape, dtype=dtype)
        if array.nbytes:
            array.data.memset_async(value & 0xFF, array.nbytes)
        return array

    def upload(self, array: np.ndarray):
        """A host array on the current device, synchronised (``array`` may change once this
        returns): from :data:`STAGED_UPLOAD_BYTES` on through :meth:`staged_upload`, below
        that by CuPy's copy from pageable memory. That copy stages through the driver's own
        buffers with one host thread: as a process's first large copy, a database's text
        went up several times slower that way than through page-locked buffers filled by a
        thread, the staging before this one (docs/notes/gpu-search-job.md); allocating a
        whole page-locked copy of the file takes about as long as that slow copy."""
        host = np.ascontiguousarray(array)
        if host.nbytes < STAGED_UPLOAD_BYTES:
            return self.xp.asarray(host)
        with self.staged_upload([host], [[(0, host.nbytes)]]) as staged:
            pass
        return staged.device[0]

    def staged_upload(self, arrays, parts) -> "StagedUpload":
        """The host ``arrays`` copied to new arrays of the current device in ``parts``
        (lists of byte ranges, one per array), through page-locked buffers that threads
        fill (:class:`StagedUpload`; a context manager that waits for its copies on
        exit)."""
        return StagedUpload(self.xp, arrays, parts)


#: Host arrays from this many bytes go up through page-locked buffers (:meth:`CudaRuntime.upload`).
STAGED_UPLOAD_BYTES = 32 << 20
#: One page-locked buffer of a staged upload, and how many buffers per filling thread.
_STAGE_BYTES = 4 << 20
_STAGES_PER_THREAD = 2


@lru_cache(maxsize=1)
def _upload_threads():
    """``(fillers, how many, senders)``: the threads that fill page-locked buffers (setting
    ``gpu.upload-threads``; ``null``: up to 4, fewer on a host with fewer cores), and those
    that queue each staged upload's copies (one per upload while it sends). One thread's
    copy into page-locked memory is slower than the host-to-device link, so more
    filling threads make an upload faster, with less gained past four
    (docs/notes/gpu-pairs-and-long-pairs.md, the reads' pipeline)."""
    count = max(1, _settings().get_int("gpu.upload-threads") or min(4, os.cpu_count() or 1))
    return (ThreadPoolExecutor(count, thread_name_prefix="swdask-upload-fill"), count,
            ThreadPoolExecutor(8, thread_name_prefix="swdask-upload-send"))


def _own_stream(cupy, purpose: str):
    """A non-blocking stream kept for one ``purpose`` per thread and device: "copy" for
    staged uploads (copies queued on it never wait behind kernels, so a page-locked buffer
    is free again as soon as its bytes are on the device), "read" for
    :meth:`CudaRuntime.reading_after`."""
    device_id = cupy.cuda.Device().id
    cache = getattr(_STREAMS, "by_device", None)
    if cache is None:
        cache = _STREAMS.by_device = {}
    stream = cache.get((device_id, purpose))
    if stream is None:
        stream = cache[(device_id, purpose)] = cupy.cuda.Stream(non_blocking=True)
    return stream


class StagedUpload:
    """Host arrays copied to the device in parts, the caller never waiting for the copies.

    The device arrays (:attr:`device`, each in its host array's shape and type) are
    allocated on the current stream, which the copies wait for: the memory pool may hand out
    memory that work queued on that stream still reads. ``parts`` lists the parts in the
    order they are needed, each as byte ranges ``(start, stop)``, one per array. A thread of
    :func:`_upload_threads` queues the parts' copies one after another; :meth:`ready` gives
    the event after part ``k``'s copies (waiting only until they are queued), for the
    stream that reads those bytes to wait for (:meth:`CudaRuntime.wait_for`), while the
    later parts are still on their way. The copies run on their own stream
    (:func:`_own_stream`) from page-locked buffers of :data:`_STAGE_BYTES` that the filling
    threads fill ahead (NumPy's copy releases the interpreter's lock; a copy from
    page-locked memory returns at once). A buffer is filled again only after its last copy
    is done, and :meth:`close` (on exit; after an error it sends no more parts) waits for
    every queued copy before the buffers go back to CuPy's pool (which does not know of
    queued copies).

    Why not CuPy's copy from pageable memory: the driver stages it through its own buffers
    with the calling thread alone, and the thread waits for it, several times longer than
    four filling threads take (W2's reads move 125 MB per call;
    docs/notes/gpu-pairs-and-long-pairs.md). Page-locking the caller's arrays in place
    (``cudaHostRegister``) was not tried: it would lock and unlock every page of them on
    every call."""

    def __init__(self, cupy, arrays, parts):
        self._cupy = cupy
        self._hosts = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        for ranges in parts:
            for host, (start, stop) in zip(self._hosts, ranges, strict=True):
                if not 0 <= int(start) <= int(stop) <= host.size:
                    raise ValueError(f"a staged upload's range {start}..{stop} is outside "
                                     f"its array of {host.size} bytes")
        self.device = [cupy.empty(np.shape(a), dtype=np.asarray(a).dtype) for a in arrays]
        self._targets = [d.reshape(-1).view(cupy.uint8) for d in self.device]
        self._device_id = cupy.cuda.Device().id
        self._stream = _own_stream(cupy, "copy")
        self._stream.wait_event(cupy.cuda.get_current_stream().record())
        self._fill_pool, threads, sender = _upload_threads()
        slots = threads * _STAGES_PER_THREAD
        self._buffer = np.frombuffer(cupy.cuda.alloc_pinned_memory(slots * _STAGE_BYTES),
                                     np.uint8, slots * _STAGE_BYTES)
        self._slots = [self._buffer[k * _STAGE_BYTES:(k + 1) * _STAGE_BYTES]
                       for k in range(slots)]
        self._copied = [None] * slots  # each buffer's last copy (an event), if any
        self._next = 0
        self._stopped = False
        self._sent = [Future() for _ in parts]
        self._sender = sender.submit(self._send_all, parts)

    def __enter__(self) -> "StagedUpload":
        return self

    def __exit__(self, error_type, *exc) -> None:
        self.close(stop=error_type is not None)

    def ready(self, part: int):
        """The event after part ``part``'s copies (None for a part with no bytes), once
        they are queued; raises the error that stopped the sending, if any."""
        return self._sent[part].result()

    def close(self, stop: bool = False) -> None:
        """Wait until every part is sent (with ``stop``, as after an error: send no more
        parts) and every queued copy is done; the buffers go back to CuPy's pool."""
        self._stopped = stop
        self._sender.result()
        self._stream.synchronize()
        self._copied = [None] * len(self._slots)

    def _send_all(self, parts) -> None:
        with self._cupy.cuda.Device(self._device_id):
            for k, ranges in enumerate(parts):
                try:
                    if self._stopped:
                        raise RuntimeError("the staged upload was closed before this part")
                    self._sent[k].set_result(self._send(ranges))
                except BaseException as error:  # every later part fails with it
                    for sent in self._sent[k:]:
                        sent.set_exception(error)
                    return

    def _send(self, ranges):
        pieces = [(k, first, min(first + _STAGE_BYTES, int(stop)))
                  for k, (start, stop) in enumerate(ranges)
                  for first in range(int(start), int(stop), _STAGE_BYTES)]
        if not pieces:
            return None
        queued = []
        waiting = iter(pieces)

        def fill_next():
            piece = next(waiting, None)
            if piece is not None:
                slot = self._next
                self._next = (slot + 1) % len(self._slots)
                queued.append((piece, slot, self._fill_pool.submit(
                    self._fill, slot, self._copied[slot], piece)))

        for _ in self._slots:
            fill_next()
        runtime_api = self._cupy.cuda.runtime
        try:
            while queued:
                (k, first, stop), slot, filled = queued[0]
                filled.result()
                queued.pop(0)
                runtime_api.memcpyAsync(self._targets[k].data.ptr + first,
                                        self._slots[slot].ctypes.data, stop - first,
                                        runtime_api.memcpyHostToDevice, self._stream.ptr)
                self._copied[slot] = self._stream.record()
                fill_next()
        finally:  # after an error, no thread may still write a buffer that goes back
            for _, _, filled in queued:
                filled.exception()
        return self._stream.record()

    def _fill(self, slot: int, copied, piece) -> None:
        if copied is not None:  # the buffer's last copy must be done before it is refilled
            copied.synchronize()
        k, first, stop = piece
        self._slots[slot][:stop - first] = self._hosts[k][first:stop]


def _env_memory_cap() -> int | None:
    """``swdask.gpu.memory-bytes``: the most device memory swdask plans to use (e.g. to leave
    room for other work on a shared GPU)."""
    return _settings().get_int("gpu.memory-bytes")


def driver_allocator(cupy) -> bool:
    """Whether CuPy's current allocator is RMM's on RMM's default resource
    (``CudaMemoryResource``: a ``cudaMalloc`` per allocation, what a process gets from
    importing cuDF). Managed memory (``ManagedMemoryResource``) is a choice a user makes on
    purpose, to use more than the GPU's memory, and stays, as do pools and caps."""
    allocator = cupy.cuda.get_allocator()
    if not str(getattr(allocator, "__module__", "")).startswith("rmm"):
        return False
    found = _rmm_resource()
    return found is not None and type(found[1]).__name__ == "CudaMemoryResource"


def _rmm_resource():
    """``(rmm, the current device resource)``, or None: RMM is looked up only when
    something (cuDF, dask-cuda) imported it already."""
    rmm = sys.modules.get("rmm")
    if rmm is None:
        return None
    try:
        return rmm, rmm.mr.get_current_device_resource()
    except Exception:  # pragma: no cover - an RMM without it: nothing known
        return None


def _rmm_limiter():
    """The RMM ``LimitingResourceAdaptor`` in the current device resource's chain, if any."""
    found = _rmm_resource()
    if found is None:
        return None
    rmm, resource = found
    try:
        for _ in range(16):  # adaptors wrap adaptors; the chain is short
            if isinstance(resource, rmm.mr.LimitingResourceAdaptor):
                return resource
            if not hasattr(resource, "get_upstream"):
                return None
            resource = resource.get_upstream()
    except Exception:  # pragma: no cover - an RMM without these attributes: no cap known
        return None
    return None


def _rmm_limit() -> int | None:
    limiter = _rmm_limiter()
    return None if limiter is None else int(limiter.get_allocation_limit())


def _rmm_headroom() -> int | None:
    limiter = _rmm_limiter()
    if limiter is None:
        return None
    return int(limiter.get_allocation_limit()) - int(limiter.get_allocated_bytes())


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is a failed device allocation (CuPy's ``OutOfMemoryError`` and RMM's
    are ``MemoryError``s; some RMM paths raise ``RuntimeError: ... out_of_memory``)."""
    if isinstance(error, MemoryError):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and ("out_of_memory" in text
                                                or "out of memory" in text)


# ---------------------------------------------------------------------------------- emulation

_EMULATION_LOCK = threading.Lock()
_EMULATED_DEVICE = threading.local()
_CTYPES = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
           np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.uint64): ctypes.c_uint64}


def host_compiler() -> str | None:
    """The C++ compiler the emulation uses (``$CXX`` or g++), if there is one."""
    return shutil.which(os.environ.get("CXX", "g++"))


def _emulation_cache_dir() -> Path:
    path = Path(_settings().get("emulation.cache-dir")
                or Path(tempfile.gettempdir()) / "swdask-emulation")
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=None)
def _emulation_library(source_name: str, name: str):
    compiler = host_compiler()
    if compiler is None:
        raise GpuUnavailableError("the host emulation needs a C++20 compiler (g++)")
    header = _kernels.SOURCE_DIR / "host_emulation.h"
    text = (f'#include "{header}"\n{_kernels.source(source_name)}\n'
            f'extern "C" void swdask_emu_launch(unsigned grid, unsigned block, '
            f'unsigned long long shared, void** args) {{\n'
            f'  emu::launch(&{name}, grid, block, shared, args);\n}}\n')
    digest = hashlib.sha256((text + header.read_text()).encode()).hexdigest()[:24]
    library = _emulation_cache_dir() / f"emu-{digest}.so"
    if not library.exists():
        # the source under this process's own name too: processes started together (the
        # several-GPU job) build the same library, and one rewriting a shared source while
        # another's compiler read it left a library without its entry point in the cache
        src = library.with_suffix(f".{os.getpid()}.cpp")
        src.write_text(text)
        tmp = library.with_suffix(f".{os.getpid()}.tmp")
        try:
            result = subprocess.run([compiler, "-std=c++20", "-O1", "-w", "-shared", "-fPIC",
                                     str(src), "-o", str(tmp)], capture_output=True, text=True)
        finally:
            src.unlink(missing_ok=True)
        if result.returncode != 0:
            raise RuntimeError(f"host emulation build of {name} failed:\n{result.stderr[-4000:]}")
        os.replace(tmp, library)
    lib = ctypes.CDLL(str(library))
    lib.swdask_emu_launch.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_ulonglong,
                                      ctypes.POINTER(ctypes.c_void_p)]
    lib.swdask_emu_launch.restype = None
    return lib


class EmulationRuntime:
    name = "emulation"
    #: The multiprocessors it reports (grid sizes scale with them). Its blocks run one after
    #: another, so a few keep the launches small; the kernels that loop over work with a
    #: ticket (intra-task, long pair) do it all in the first block.
    multiprocessors = 2

    def __init__(self, block_threads: int | None = None, free_bytes: int | None = None):
        self.xp = np
        self.block_threads = block_threads or _settings().get_int("emulation.block-threads")
        self._free = free_bytes or _settings().get_int("emulation.free-bytes")
        self.compute_capability = 90  # the emulation has every instruction

    def function(self, source_name: str, name: str):
        return _emulation_library(source_name, name)

    @staticmethod
    def load_shipped() -> int:
        """Nothing ships compiled for the emulation (its builds are cached by text)."""
        return 0

    def device_count(self) -> int:
        """The devices the emulation pretends to have (setting ``emulation.devices``: tests
        of the several-GPU paths); they share the CPU and its memory."""
        return max(1, _settings().get_int("emulation.devices") or 1)

    def current_device(self) -> int:
        return getattr(_EMULATED_DEVICE, "index", 0)

    @staticmethod
    def own_pool():
        """Nothing to choose: the emulation's arrays are NumPy's."""
        return nullcontext()

    def use_own_stream(self, device: int) -> None:
        """From now on this thread pretends to work on device ``device`` (one stream of work
        on the CPU: the launches of all threads run one at a time)."""
        _EMULATED_DEVICE.index = int(device)

    @contextmanager
    def on_device(self, index: int):
        """Pretend that this thread works on device ``index`` (only :meth:`current_device`
        changes: the emulated devices share one memory)."""
        if not 0 <= int(index) < self.device_count():
            raise ValueError(f"device {index} does not exist (the emulation has "
                             f"{self.device_count()}; setting emulation.devices)")
        previous = self.current_device()
        _EMULATED_DEVICE.index = int(index)
        try:
            yield
        finally:
            _EMULATED_DEVICE.index = previous

    @contextmanager
    def concurrent(self, count: int, prioritize_first: bool = False, joined=None):
        """One stream of work on the CPU: the launches run in order (done on return)."""
        yield [None] * max(count, 0 if joined is None else 1)

    def wait_for(self, events) -> None:
        """Nothing to wait for: every launch is done on return."""

    def follow(self, first, others) -> None:
        """Nothing to wait for: every launch is done on return."""

    def record(self):
        """None: every launch is done on return."""
        return None

    def reading_after(self, event):
        """Nothing to wait for: every launch is done on return."""
        return nullcontext()

    def launch(self, function, grid: int, block: int, args, shared_mem: int = 0,
               stream=None):
        if grid <= 0:
            return
        keep = []
        pointers = (ctypes.c_void_p * len(args))()
        for k, arg in enumerate(args):
            if isinstance(arg, np.ndarray):
                if not arg.flags.c_contiguous:
                    raise ValueError("kernel arguments must be contiguous arrays")
                holder = ctypes.c_void_p(arg.ctypes.data)
            else:
                value = np.asarray(arg)
                holder = _CTYPES[value.dtype](value.item())
            keep.append(holder)
            pointers[k] = ctypes.addressof(holder)
        with _EMULATION_LOCK:  # the emulation keeps global state
            function.swdask_emu_launch(int(grid), int(block), int(shared_mem), pointers)

    def free_bytes(self) -> int:
        return self._free

    def total_bytes(self) -> int:
        return self._free

    def release_cached_memory(self) -> None:
        pass

    def to_host(self, array) -> np.ndarray:
        return np.asarray(array)

    @staticmethod
    def full(shape, value: int, dtype) -> np.ndarray:
        if value not in (0, -1):
            raise ValueError("a memset fills with 0 or -1 only")
        return np.full(shape, value, dtype=dtype)

    def upload(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array)

    def staged_upload(self, arrays, parts) -> "_InPlace":
        """The host arrays as they are (the emulation's device memory is the host's)."""
        return _InPlace([np.asarray(a) for a in arrays])


class _InPlace:
    """:class:`StagedUpload`'s interface where there is nothing to copy: ``device`` is the
    arrays themselves and every part is ready (its event is None)."""

    def __init__(self, arrays):
        self.device = arrays

    def __enter__(self) -> "_InPlace":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def ready(self, part: int):
        return None

    def close(self) -> None:
        pass


def get_runtime():
    """The runtime ``backend="gpu"`` runs on: CUDA through CuPy, or the host emulation when
    the setting ``swdask.gpu.runtime`` is ``emulation``.

    A process's first call, before CuPy is imported and unless the process started the driver
    itself (a search job's, on its device), starts CUDA's driver and device 0's context at
    once (:func:`start_driver`, CuPy's default device), so that they run beside the
    imports of Dask (for the setting) and CuPy instead of after them. Where Dask is not
    imported yet, the setting is not read for this (that would import Dask first): only the
    environment naming the emulation (``swdask._settings.from_environment``) holds it back.
    (A process that works on another device through another library, without CuPy and
    without ``CUDA_VISIBLE_DEVICES``, gets a context on device 0 as well.) Why: a user's
    one-shot job on the GPU (W2-dna-reads with alignments, a new process) spent a large
    share of its time starting CuPy's runtime and importing Dask before its first kernel
    (docs/notes/gpu-pairs-and-long-pairs.md, the reads as a user's whole job)."""
    first = not _DRIVER_STARTS and not _cuda_runtime.cache_info().currsize
    if first and "cupy" not in sys.modules:
        if "dask" in sys.modules:
            wanted = _settings().get("gpu.runtime")
        else:
            wanted = _settings().from_environment("gpu.runtime") or "cuda"
        if str(wanted).lower() == "cuda":
            start_driver(0, check_setting=False)
    name = str(_settings().get("gpu.runtime")).lower()
    if name == "emulation":
        return EmulationRuntime()
    if name != "cuda":
        raise ValueError(f"setting swdask.gpu.runtime must be 'cuda' or 'emulation', got {name!r}")
    return _cuda_runtime()


@lru_cache(maxsize=1)
def _cuda_runtime():
    return CudaRuntime()


#: Primary contexts retained by :func:`start_driver`, held for the process's life (CUDA's
#: runtime, and so CuPy, shares a device's primary context and keeps it as long anyway).
_RETAINED: list = []
#: The devices :func:`start_driver` was asked to start in this process.
_DRIVER_STARTS: list = []


def start_driver(device: int = 0, check_setting: bool = True):
    """Start the CUDA driver and create device ``device``'s primary context (the one CUDA's
    runtime API, and so CuPy, works in) on a daemon thread, calling the driver library
    through :mod:`ctypes`, which releases the interpreter's lock for each call; returns the
    thread, or None under the host emulation. Nothing is raised: where the library or a
    device is missing the thread just ends, and CuPy reports the problem when it is used.

    Why: CuPy starts the driver in ``cudaGetDeviceCount`` while holding the interpreter's
    lock, then creates the context on first use, both slow (docs/notes/gpu-search-job.md,
    the driver's start). A search job runs Python on every thread until its first kernels
    are queued (imports, the queries, the parse), so both stood in the way. Here they run
    beside CuPy's own import; CuPy then finds the driver started and the context made (the
    job's "ready" wait went away). :mod:`ctypes` rather than cuda-python's bindings: it is
    in the standard library, and three calls need nothing more. ``check_setting=False``:
    the caller has decided already (see :func:`get_runtime`), and Dask is not imported for
    the setting."""
    if check_setting and str(_settings().get("gpu.runtime")).lower() == "emulation":
        return None
    _DRIVER_STARTS.append(device)

    def start():
        try:
            driver = ctypes.CDLL("libcuda.so.1")
            handle, context = ctypes.c_int(), ctypes.c_void_p()
            if (driver.cuInit(0) == 0
                    and driver.cuDeviceGet(ctypes.byref(handle), int(device)) == 0
                    and driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle) == 0):
                _RETAINED.append(context)
        except (OSError, AttributeError):  # no NVIDIA driver library here
            pass

    thread = threading.Thread(target=start, name="swdask-driver", daemon=True)
    thread.start()
    return thread


def require_cuda():
    """Raise :class:`GpuUnavailableError` (saying what to do) unless CuPy and a GPU exist."""
    _cuda_runtime()
