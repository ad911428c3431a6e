"""swdask's GPU work allocates from CuPy's pool where cuDF's import left CuPy on RMM's
driver-backed default resource (``CudaRuntime.own_pool``), and leaves a pooling or capping
RMM resource alone. The rule and the backend's wrapper are checked here with stand-ins for
CuPy and RMM; the last test runs on a GPU with RMM installed."""
from __future__ import annotations

import sys
import types

import pandas as pd
import pytest

from swdask.gpu import _backend
from swdask.gpu._runtime import driver_allocator


def _fake_rmm(resource_name: str):
    resource_type = type(resource_name, (), {})
    mr = types.SimpleNamespace(get_current_device_resource=lambda: resource_type())
    return types.SimpleNamespace(mr=mr)


def _fake_cupy(allocator):
    return types.SimpleNamespace(cuda=types.SimpleNamespace(get_allocator=lambda: allocator))


def _rmm_allocator(size):  # stands for rmm.allocators.cupy.rmm_cupy_allocator
    raise AssertionError("not called")


_rmm_allocator.__module__ = "rmm.allocators.cupy"


def _cupy_pool_malloc(size):  # stands for CuPy's default pool's malloc
    raise AssertionError("not called")


_cupy_pool_malloc.__module__ = "cupy.cuda.memory"


@pytest.mark.parametrize("resource, allocator, expected", [
    ("CudaMemoryResource", _rmm_allocator, True),       # cuDF's import, RMM's default
    ("ManagedMemoryResource", _rmm_allocator, False),   # managed memory chosen on purpose
    ("PoolMemoryResource", _rmm_allocator, False),      # the user's pool stays
    ("LimitingResourceAdaptor", _rmm_allocator, False),  # a capped worker stays
    ("CudaMemoryResource", _cupy_pool_malloc, False),   # CuPy's own pool already
])
def test_driver_allocator_rule(monkeypatch, resource, allocator, expected):
    monkeypatch.setitem(sys.modules, "rmm", _fake_rmm(resource))
    assert driver_allocator(_fake_cupy(allocator)) is expected


def test_no_rmm_imported_is_not_a_driver_allocator(monkeypatch):
    monkeypatch.delitem(sys.modules, "rmm", raising=False)
    assert driver_allocator(_fake_cupy(_rmm_allocator)) is False


class _CountingRuntime:
    """A runtime whose ``own_pool`` records whether it is entered."""

    def __init__(self):
        self.inside = False
        self.entered = 0

    def own_pool(self):
        runtime = self

        class Context:
            def __enter__(self):
                runtime.inside = True
                runtime.entered += 1

            def __exit__(self, *exc):
                runtime.inside = False

        return Context()


def test_backend_methods_and_each_generator_step_run_inside_own_pool():
    class Probe:
        def __init__(self):
            self.runtime = _CountingRuntime()

        @_backend._own_pool
        def call(self):
            return self.runtime.inside

        @_backend._own_pool
        def steps(self, count):
            for _ in range(count):
                yield self.runtime.inside

    probe = Probe()
    assert probe.call() is True
    assert probe.runtime.inside is False
    seen = []
    for inside in probe.steps(3):
        seen.append((inside, probe.runtime.inside))  # the caller's code runs outside
    assert seen == [(True, False)] * 3
    assert probe.runtime.entered == 1 + 4  # three items and the step that ends it


def test_a_generator_closed_early_is_closed_inside():
    closed = []

    class Probe:
        runtime = _CountingRuntime()

        @_backend._own_pool
        def steps(self):
            try:
                yield 1
                yield 2
            finally:
                closed.append(True)

    generator = Probe().steps()
    assert next(generator) == 1
    generator.close()
    assert closed == [True]


@pytest.mark.gpu
def test_search_under_rmm_default_allocator_equals_cpu_and_uses_cupys_pool():
    cupy = pytest.importorskip("cupy")
    pytest.importorskip("rmm")
    from rmm.allocators.cupy import rmm_cupy_allocator

    import swdask
    from swdask.gpu._runtime import get_runtime

    targets = pd.Series(["MKTAYIAKQRQISFVKSHFSRQ", "", None, "MKTAYIAKQR" * 40, "WWWW"])
    expected = targets.sw.align("MKTAYIAKQ", backend="cpu")
    queries = pd.DataFrame({"id": ["q1", "q2"], "sequence": ["MKTAYIAKQ", "SFVKSHFSRQ"]})
    expected_hits = targets.sw.search(queries, top=3, backend="cpu")
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        assert driver_allocator(cupy)
        with get_runtime().own_pool():
            assert cupy.cuda.get_allocator() is not rmm_cupy_allocator
        assert cupy.cuda.get_allocator() is rmm_cupy_allocator  # restored
        found = targets.sw.align("MKTAYIAKQ", backend="gpu")
        found_hits = targets.sw.search(queries, top=3, backend="gpu")
    finally:
        cupy.cuda.set_allocator(previous)
    pd.testing.assert_frame_equal(found, expected)
    pd.testing.assert_frame_equal(found_hits, expected_hits)
    assert swdask  # imported for the accessor
