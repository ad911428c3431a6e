"""Run a function once a module is imported (now, if it is already): a post-import hook.

Used by ``swdask/__init__.py`` to register the Dask accessor only once ``dask.dataframe`` is
imported (by the user, by :func:`swdask.read_fasta`, or by a Dask worker unpickling a task),
so ``import swdask`` does not import it.

Written here (30 lines) rather than taken from ``wrapt.register_post_import_hook`` (the
maintained implementation of PEP 369's idea, same approach: a finder first on
``sys.meta_path`` that wraps the module's loader), to avoid a compiled dependency for it.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from typing import Callable

_HOOKS: dict[str, list[Callable[[], None]]] = {}
_LOCK = threading.Lock()


def when_imported(name: str, hook: Callable[[], None]) -> None:
    """Call ``hook()`` once module ``name`` has been imported: now if it already is, else
    right after its import completes (its code has run; an import that fails calls nothing)."""
    with _LOCK:
        if name not in sys.modules:
            _HOOKS.setdefault(name, []).append(hook)
            if not any(isinstance(f, _Finder) for f in sys.meta_path):
                sys.meta_path.insert(0, _Finder())
            return
    hook()


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a hooked name, asks the other finders and wraps the loader."""

    _busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _HOOKS or getattr(self._busy, "name", None) == fullname:
            return None
        self._busy.name = fullname
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


class _Loader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        with _LOCK:
            hooks = _HOOKS.pop(module.__name__, [])
        for hook in hooks:
            hook()

    def __getattr__(self, name):  # get_source, is_package, ... of the real loader
        return getattr(self._loader, name)
