"""Work handed to the CPU kernels' threads one item at a time.

The kernels run their batches (or rows, or pairs) in a numba ``prange``, sorted longest
first so that the lanes of a batch finish together. On numba's ``omp`` and ``workqueue``
threading layers (the ones a pip install has) a ``prange`` gives each thread one
contiguous block of the range, whatever ``numba.parallel_chunksize`` says: that setting
takes effect only with TBB. The first thread then took the longest half, so two threads
ran the byte lanes little faster than one, well short of two one-thread processes; with
the counter, two threads share the work evenly (docs/notes/cpu-kernels.md).

So the loops take their items from a shared counter instead, one at a time, as each
thread finishes the last (the GPU's warps do the same with their job counter)::

    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        while True:
            batch = next_item(counter)  # each batch taken by exactly one thread
            if batch >= n_batches:
                break
            ...

numba has no atomic operation on the CPU, so the one needed here (fetch-and-add) is
written as LLVM's ``atomicrmw``; TBB as a dependency would be the alternative, for this
one loop shape. ``TASKS`` is a constant, not the thread count: a kernel that calls
``numba.get_num_threads()`` cannot be cached. The ``prange`` splits the tasks into one
block per thread; each thread's first task takes items until none is left, and its other
tasks find none (an atomic add each). (A numba generator over the items would read better,
but a cached kernel that calls one fails to load in the next process: numba 0.68.)
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: Tasks of a ``prange`` that hands out items (at least the threads of any machine).
TASKS = 1024


@intrinsic
def next_item(typingctx, counter):
    """``counter[0]`` (int64) before adding 1 to it, atomically: concurrent calls never
    return the same value."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", data, ir.Constant(ir.IntType(64), 1), "monotonic")

    return sig, codegen

