"""Problem lists (a model's layers), parsed by the library's own parser: the file `fusedtune tune
--problems FILE` takes (docs/FORMAT.md, "Problem lists"), checked whole before anything runs.
"""
import ctypes
from dataclasses import dataclass

from . import _lib
from .core import Problem, _cpath, _raise, _s
from ._lib import lib


@dataclass(frozen=True)
class ProblemItem:
    problem: Problem   # the epilogue in its canonical text; an M range and math "auto" give one item each
    line: int          # the line of the file its entry starts on, from 1
    entry: int         # the entry (JSON index or CSV data row), from 0
    duplicate_of: int  # -1, or the index of the earlier item with the same key (tune that one only)


def load_problems(path):
    """The items of the problem file at path, in file order. Every entry is checked first: a bad
    one raises FormatError naming the file and line ("layers.csv: line 4: shape '0x8x8': ..."),
    a missing or unreadable file InputOutputError."""
    L, out, msg = lib(), ctypes.POINTER(_lib.ft_problem_list)(), ctypes.create_string_buffer(1024)
    st = L.ft_problem_list_load(_cpath(path), ctypes.byref(out), msg, len(msg))
    if st != 0:
        _raise(st, _s(msg.value))
    try:
        items = []
        for it in out.contents.items[:out.contents.count]:
            p = it.problem
            problem = Problem(p.m, p.n, p.k, _s(p.epilogue), _s(L.ft_math_name(p.math)))
            items.append(ProblemItem(problem, it.line, it.entry, it.duplicate_of))
        return items
    finally:
        L.ft_problem_list_free(out)
