"""Whether a Numba kernel would compile on its next call, asked without compiling it.

Numba compiles a kernel on its first call with new argument types and keeps the machine code
in memory and, with ``cache=True``, in its cache on disk. Where hardwood has two routes to
the same result, one of them a large kernel slow to compile (the fused grower), it asks here
whether that kernel is ready before taking it.
"""
from __future__ import annotations

from numba.core import event
from numba.core.compiler_lock import global_compiler_lock


def is_compiled(dispatcher, args) -> bool:
    """True when ``dispatcher(*args)`` compiles nothing: the signature of ``args`` is compiled
    in this process, or stored in Numba's disk cache (then it is loaded now, as the call would
    load it). False when it would compile, and when this Numba answers none of it."""
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        if sig in dispatcher.overloads:
            return True
        with global_compiler_lock:
            if sig in dispatcher.overloads:
                return True
            # Numba's own first step in Dispatcher.compile: the disk cache, then the compiler
            cres = dispatcher._cache.load_overload(sig, dispatcher.targetctx)
            if cres is None:
                return False
            dispatcher.targetctx.insert_user_function(cres.entry_point, cres.fndesc,
                                                      [cres.library])
            dispatcher.add_overload(cres)
            return True
    except Exception:  # pragma: no cover - a Numba whose internals moved: assume it compiles
        return False


class CompileClock:
    """``with CompileClock() as clock:`` ... ``clock.seconds``: the seconds Numba spent
    compiling inside the block (in any thread), so that a timing can leave them out."""

    def __enter__(self):
        self.seconds = 0.0
        self._timer = event.install_timer("numba:compile", self._add)
        self._timer.__enter__()
        return self

    def _add(self, seconds):
        self.seconds += seconds

    def __exit__(self, *exc):
        return self._timer.__exit__(*exc)
