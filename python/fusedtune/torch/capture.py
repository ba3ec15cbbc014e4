"""Capture: every GEMM of a PyTorch model with the ops after it that fusedtune's epilogue language
states, as problems to tune (docs/PYTHON.md, "Whole models").

    from fusedtune.torch import problems
    found = problems(model, x)              # torch.export on the example inputs; no GPU, no library
    print(found)                            # one line per GEMM, then what stays in PyTorch and why
    found.to_problems_file("layers.csv")    # for `fusedtune tune --problems layers.csv`

A GEMM is aten.linear (nn.Linear, F.linear), matmul / mm of an activation with a weight parameter
(x @ W.t(), torch.matmul(x, W.T), x @ W), or addmm. The epilogue grows from it through elementwise
ops, per-feature and scalar parameters, row vectors, a residual matrix, one row reduction or
normalization, and pools along the features; two GEMMs of one input meeting as act(a) * b become a
gated pair. Capture needs neither a GPU nor libfusedtune: the text it writes follows the language's
canonical form and rules (expr.py), and fusedtune parses it when the problems are tuned.
"""
import csv
import io
import json
import math as _math
import re
from dataclasses import dataclass, field

import torch

from ..errors import InvalidArgumentError, UnsupportedError
from . import expr as E
from .ops import Refuse, _V, _apply, _is_attr, _module_of, _opname, _val

_MODES = {torch.float32: None, torch.bfloat16: "bf16", torch.float16: "fp16"}
_MODES_FOR = {torch.float32: ("fp32", "tf32", "3xtf32", "auto"), torch.bfloat16: ("bf16", "fp8"),
              torch.float16: ("fp16",)}


@dataclass(frozen=True)
class Binding:
    """Where an epilogue parameter's value comes from: `attr` a parameter or buffer of the model
    (target its qualified name; a scalar's value is read when the model is fused), `node` a tensor
    the graph computes (target the fx node's name; given to the fused layer on every call)."""
    name: str
    kind: str    # "scalar", "col", "row" or "mat"
    source: str  # "attr" or "node"
    target: str

    def __str__(self):
        return f"{self.kind} {self.name} = {'self.' if self.source == 'attr' else 'node '}{self.target}"


@dataclass
class CapturedProblem:
    """One GEMM and its epilogue: the problem M x N x K, E, the math mode, and where it sits."""
    m: int
    n: int
    k: int
    epilogue: str
    math: object            # the mode's name, or None: the dtype's default (float32: "fp32")
    dtype: str              # the GEMM's element type ("float32", "bfloat16", "float16")
    where: str              # the module path of the GEMM (its weight's owner)
    node: str               # the GEMM's fx node (torch.export graph)
    output: str             # the fx node whose value the epilogue's result replaces
    nodes: tuple            # every fx node the fused layer replaces
    input: str              # the fx node of the GEMM's input x
    weight: str             # the weight's qualified name ([N, K]; with weight_transposed, [K, N])
    weight_transposed: bool
    bias: object            # the bias's qualified name, or None
    weight2: object = None  # a gated pair: the second weight (x2's), its bias
    bias2: object = None
    bindings: tuple = ()    # Binding of each parameter of E but the layer's own bias
    out_shape: tuple = ()   # the replaced node's shape in the example
    m_range: object = None  # (lo, hi): tuned at M = lo, the powers of two between, and hi
    lead: tuple = ()        # x's leading dimensions in the example (their product is M)
    notes: tuple = ()
    layer_epilogue: object = None  # E as the layer takes it, where it differs (fp8: E before its scales)
    expr: object = field(default=None, repr=False, compare=False)

    @property
    def gated(self):
        return self.weight2 is not None

    @property
    def mode(self):
        """The math mode's name as a problem file writes it (fp32 for float32 by default)."""
        return self.math or "fp32"

    @property
    def shape(self):
        m = f"{self.m_range[0]}..{self.m_range[1]}" if self.m_range else str(self.m)
        return f"{m}x{self.n}x{self.k}"

    def key(self):
        return (self.shape, self.epilogue, self.mode)

    def tune_command(self, db=None):
        """The `fusedtune tune` command for this problem."""
        import shlex
        # No math: the float32 default, fp32 accuracy (3xtf32 and fp32), which --math fp32 is not.
        return " ".join(["fusedtune"] + (["--db", shlex.quote(str(db))] if db else []) +
                        ["tune", "--shape", self.shape, "--epilogue", shlex.quote(self.epilogue)] +
                        (["--math", self.mode] if self.math is not None else []))

    def __str__(self):
        pair = f" + {self.weight2.rsplit('.', 1)[0]}" if self.gated else ""
        return (f"{self.shape:>22}  {self.mode:<6} {self.epilogue}    [{self.where or '<model>'}{pair}: "
                f"{self.node} .. {self.output}]")


@dataclass
class LeftInTorch:
    """An op that stays in PyTorch, with the reason (one line)."""
    node: str
    op: str
    where: str
    reason: str

    def __str__(self):
        return f"{self.node} ({self.op}{', ' + self.where if self.where else ''}): {self.reason}"


class Capture(list):
    """The captured problems (a list of CapturedProblem, in graph order) and `left`, the ops that stay
    in PyTorch with their reasons. str() lists both; to_problems_file() writes `tune --problems`'s
    input (docs/FORMAT.md, "Problem lists"). `graph` is the torch.export module traced."""

    def __init__(self, items=(), left=(), graph=None):
        super().__init__(items)
        self.left = list(left)
        self.graph = graph

    def unique(self):
        """The problems to tune: one per (shape, epilogue, mode), in order."""
        seen, out = set(), []
        for p in self:
            if p.key() not in seen:
                seen.add(p.key())
                out.append(p)
        return out

    def __str__(self):
        gemms = sum(2 if p.gated else 1 for p in self)
        plural = lambda n: "s" if n != 1 else ""  # noqa: E731
        lines = [f"{gemms} GEMM{plural(gemms)} captured in {len(self)} layer{plural(len(self))}, "
                 f"{len(self.unique())} problem{plural(len(self.unique()))} to tune:"]
        for p in self:
            lines += [f"  {p}"] + [f"      {b}" for b in p.bindings] + [f"      note: {n}" for n in p.notes]
        if self.left:
            lines.append(f"left in PyTorch ({len(self.left)}):")
            lines += [f"  {x}" for x in self.left]
        return "\n".join(lines)

    def to_problems_file(self, path=None, format=None):
        """The problems as `fusedtune tune --problems` reads them: CSV (shape,epilogue,math) or, with
        format="json" or a path ending in .json, a JSON array. Written to path when given; returns
        the text."""
        fmt = format or ("json" if path and str(path).endswith(".json") else "csv")
        rows = self.unique()
        if fmt == "json":
            text = json.dumps([{"shape": p.shape, "epilogue": p.epilogue, "math": p.mode} for p in rows], indent=1)
            text += "\n"
        elif fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(["shape", "epilogue", "math"])
            for p in rows:
                w.writerow([p.shape, p.epilogue, p.mode])
            text = buf.getvalue()
        else:
            raise InvalidArgumentError(f"to_problems_file: format {format!r}: 'csv' or 'json'")
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text


def export(model, example_inputs, dynamic=False):
    """The model as torch.export traces it on example_inputs (its training or eval mode as it is):
    the unlifted GraphModule, dead code removed. dynamic: each tensor input's first dimension
    dynamic where the model lets it be (Dim.AUTO)."""
    if not isinstance(model, torch.nn.Module):
        raise InvalidArgumentError(f"problems: model must be a torch.nn.Module, not {type(model).__name__}")
    shapes = None
    if dynamic:
        auto = torch.export.Dim.AUTO
        shapes = tuple({0: auto} if isinstance(t, torch.Tensor) and t.dim() else None for t in example_inputs)
    try:
        ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=shapes, strict=False)
    except Exception as e:  # torch's own errors are many; name the step and keep its first line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnsupportedError(f"torch.export could not trace {type(model).__name__} on the example inputs: "
                               f"{first}") from e
    gm = ep.module()
    # export's checks of the example's dtypes and shapes (aten._assert_*): no value, and in the way of
    # an epilogue's ops having one user.
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and str(n.target).startswith("aten._assert_") and not n.users:
            gm.graph.erase_node(n)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def problems(model, *example_inputs, math=None, m_range=None):
    """Every GEMM of model with the epilogue fusedtune can state after it (a Capture: a list of
    CapturedProblem, and .left, what stays in PyTorch and why). example_inputs are the model's
    forward arguments (tensors on any device; nothing is computed). math: the mode to tune
    (default: the dtype's, float32 -> fp32, bfloat16 -> bf16, float16 -> fp16; "tf32", "3xtf32" or
    "auto" for float32). m_range: (lo, hi) to tune M buckets lo..hi instead of the example's M."""
    return capture_graph(export(model, example_inputs), math=math, m_range=m_range)


def _m_range(m_range):
    if m_range is None:
        return None
    if isinstance(m_range, str):
        parts = m_range.split("..")
        m_range = tuple(int(p) for p in parts) if len(parts) == 2 and all(p.isdigit() for p in parts) else None
    if (not isinstance(m_range, (tuple, list)) or len(m_range) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in m_range)
            or not 1 <= m_range[0] <= m_range[1]):
        raise InvalidArgumentError(f"m_range {m_range!r}: (lo, hi) or 'lo..hi' with 1 <= lo <= hi")
    return tuple(m_range)


def capture_graph(gm, math=None, m_range=None):
    """problems() on a GraphModule from export()."""
    m_range = _m_range(m_range)
    nodes = list(gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    left, gemms = [], []
    for n in nodes:
        try:
            g = _gemm(n)
        except Refuse as r:
            left.append(LeftInTorch(n.name, _opname(n), _module_of(n), str(r)))
            continue
        if g is not None:
            try:
                g.mode = _mode_for(g.dtype, math)
            except Refuse as r:
                left.append(LeftInTorch(n.name, _opname(n), g.where, str(r)))
                continue
            gemms.append(g)
    claimed, found = set(), []
    by_input = {}
    for g in gemms:
        by_input.setdefault((g.x, g.n, g.k, g.dtype), []).append(g)
    done = set()
    for g in gemms:
        if g.node in done:
            continue
        result = None
        # A gated pair: another GEMM of the same input and weight shape whose product meets this one's.
        for h in by_input[(g.x, g.n, g.k, g.dtype)]:
            if h is g or h.node in done or g.n % 8:
                continue
            tries = [_grow(gm, order, {g.node: (g, E.X), h.node: (h, E.X2)}, claimed),
                     _grow(gm, order, {h.node: (h, E.X), g.node: (g, E.X2)}, claimed)]
            tries = [t for t in tries if t is not None and t.gated]
            if tries:
                # x is the gate: the product under a function (silu(x) * x2), else the first GEMM.
                result = min(tries, key=lambda t: (not _gate_first(t.expr), tries.index(t)))
                done.add(h.node)
                break
        if result is None:
            result = _grow(gm, order, {g.node: (g, E.X)}, claimed)
        done.add(g.node)
        claimed |= set(result.nodes)
        found.append(result)
    found.sort(key=lambda r: order[r.seeds[0].node])
    records = []
    for r in found:
        records.append(r.record(m_range))
        left += r.left
    taken = {name for p in records for name in p.nodes}  # an op another epilogue took is not left
    left = [x for x in left if x.node not in taken]
    left.sort(key=lambda x: order.get(_node_named(gm, x.node), 0))
    return Capture(records, left, gm)


def _gate_first(e):
    """Whether x (not x2) is under a function in e: silu(x) * x2 rather than x * silu(x2)."""
    def under(n, inside):
        if n.op == "x":
            return inside
        f = inside or n.op in E.FUNCTIONS
        return any(under(a, f) for a in n.args)
    return under(e, False)


def _node_named(gm, name):
    for n in gm.graph.nodes:
        if n.name == name:
            return n
    return None


def _mode_for(dtype, math):
    if dtype not in _MODES:
        raise Refuse(f"its dtype is {str(dtype).replace('torch.', '')}: fusedtune's modes take float32, bfloat16 "
                     f"and float16")
    if math is None:
        return _MODES[dtype]
    if math not in _MODES_FOR[dtype]:
        raise InvalidArgumentError(f"math={math!r} on {str(dtype).replace('torch.', '')} tensors: the modes for "
                                   f"that dtype are {', '.join(_MODES_FOR[dtype])}")
    return math


_T = {"aten.t.default", "aten.numpy_T.default"}


class _Gemm:
    __slots__ = ("node", "x", "weight", "transposed", "bias", "n", "k", "m", "lead", "dtype", "where", "mode")


def _weight_of(w):
    """(qualified name, transposed) of a matmul's right operand that is a weight parameter: W.t() of
    a [N, K] parameter, or a [K, N] parameter itself (transposed: the layer takes a copy of W.t())."""
    if _is_attr(w):
        return w.target, True
    if isinstance(w, torch.fx.Node) and w.op == "call_function" and _is_attr(w.args[0]):
        t = str(w.target)
        if t in _T or (t == "aten.transpose.int" and sorted(a % 2 for a in w.args[1:3]) == [0, 1]) or (
                t == "aten.permute.default" and list(w.args[1]) in ([1, 0], [-1, -2])):
            return w.args[0].target, False
    return None, None


def _is_gemm(n):
    return n.op == "call_function" and str(n.target) in ("aten.linear.default", "aten.matmul.default",
                                                         "aten.mm.default", "aten.addmm.default")


def _gemm(n):
    """A _Gemm for a GEMM with a weight parameter; None for another op; Refuse for a product that is
    not one (two activations, a batched product, a computed weight)."""
    if n.op != "call_function":
        return None
    t = str(n.target)
    if t in ("aten.bmm.default", "aten.baddbmm.default"):
        raise Refuse("a batched product (bmm) has no shared weight: not a GEMM fusedtune tunes")
    if t not in ("aten.linear.default", "aten.matmul.default", "aten.mm.default", "aten.addmm.default"):
        return None
    args = list(n.args)
    bias = None
    if t == "aten.linear.default":
        x, w = args[0], args[1]
        b = args[2] if len(args) > 2 else n.kwargs.get("bias")
        if not _is_attr(w):
            raise Refuse(f"its weight ({w}) is computed in the graph, not a parameter")
        wname, transposed = w.target, False
        if b is not None:
            if not _is_attr(b):
                raise Refuse(f"its bias ({b}) is computed in the graph, not a parameter")
            bias = b.target
    else:
        if t == "aten.addmm.default":
            b, x, w = args[0], args[1], args[2]
            if n.kwargs.get("beta", 1) != 1 or n.kwargs.get("alpha", 1) != 1:
                raise Refuse("addmm with beta or alpha other than 1")
            if not _is_attr(b) or _val(b) is None or _val(b).dim() != 1:
                raise Refuse("addmm whose added term is not a [N] parameter")
            bias = b.target
        else:
            x, w = args[0], args[1]
        wname, transposed = _weight_of(w)
        if wname is None:
            raise Refuse("a product of two activations (no weight parameter): not a GEMM fusedtune tunes")
    xv, wv, yv = _val(x), _val(w if _is_attr(w) else w.args[0]), _val(n)
    if xv is None or wv is None or yv is None or wv.dim() != 2 or xv.dim() < 1:
        raise Refuse("shapes unknown or not x [..., K] times a 2-D weight")
    if xv.dim() == 1 or (t != "aten.linear.default" and xv.dim() > 2 and t != "aten.matmul.default"):
        raise Refuse(f"x of shape {list(xv.shape)}: a GEMM needs x [..., K]")
    g = _Gemm()
    g.node, g.x, g.weight, g.transposed, g.bias = n, x, wname, transposed, bias
    nn_, kk = (wv.shape[1], wv.shape[0]) if transposed else (wv.shape[0], wv.shape[1])
    g.n, g.k = int(nn_), int(kk)
    g.lead = tuple(int(d) for d in xv.shape[:-1])
    g.m = _math.prod(g.lead)
    g.dtype = yv.dtype
    if xv.dtype != wv.dtype:
        raise Refuse(f"x is {xv.dtype} and the weight {wv.dtype}")
    g.where = wname.rsplit(".", 1)[0] if "." in wname else ""
    return g



class _Region:
    """A GEMM (or a gated pair) grown through the ops after it."""

    def __init__(self, gm, order, seeds, claimed):
        self.gm, self.order, self.claimed = gm, order, claimed
        self.seeds = [g for g, _ in seeds.values()]
        first = self.seeds[0]
        self.n, self.m, self.lead, self.dtype = first.n, first.m, first.lead, first.dtype
        self.names, self.kinds, self.sources = {}, {}, {}
        self.notes = {}
        self.vals, self.reasons = {}, {}
        self.dtypes = {self.dtype}  # float32 too after an upcast (logits.float())
        gated = len(seeds) > 1
        for node, (g, x) in seeds.items():
            e = x
            if g.bias is not None:
                # the layer's bias; a gated pair's two are b1 (x's) and b2 (x2's), as from_gated names them
                name = ("b1" if x is E.X else "b2") if gated else "bias"
                self.names[("attr", g.bias)] = name
                self.kinds[name] = "col"
                self.sources[name] = ("attr", g.bias)
                e = x + E.param(name)
            self.vals[node] = _V(e, _val(node).shape)
        self.desc = set()
        for node in seeds:
            stack = [node]
            while stack:
                c = stack.pop()
                for u in c.users:
                    if u not in self.desc:
                        self.desc.add(u)
                        stack.append(u)

    def _name(self, target, node=None):
        key = ("attr", target) if node is None else ("node", node.name)
        if key in self.names:
            return self.names[key]
        base = re.sub(r"\W", "_", target if node is None else node.name)
        if not re.match(r"[A-Za-z_]", base):
            base = "p_" + base
        base = base[:31]
        if base in E.RESERVED or base in ("bias", "b1", "b2"):
            base = base[:30] + "_"
        name, i = base, 2
        taken = set(self.names.values())
        while name in taken:
            suffix = f"_{i}"
            name, i = base[:31 - len(suffix)] + suffix, i + 1
        self.names[key] = name
        return name

    # Operands -------------------------------------------------------------------------------

    def region(self, a):
        return self.vals.get(a) if isinstance(a, torch.fx.Node) else None

    def src(self, n, i=0):
        v = self.region(n.args[i] if i < len(n.args) else None)
        if v is None or v.tuple_of is not None:
            raise Refuse(f"its argument {i} is not the GEMM's result")
        return v

    def operand(self, a, like, out_shape, role="operand"):
        """The expression of a (not from the epilogue) where it meets the epilogue's value like."""
        if isinstance(a, bool) or a is None:
            raise Refuse(f"its {role} {a!r} is not a number or tensor")
        if isinstance(a, (int, float)):
            return E.num(a)
        if not isinstance(a, torch.fx.Node):
            raise Refuse(f"its {role} {a!r} is not a number or tensor")
        if a in self.desc:
            raise Refuse(f"its {role} {a.name} depends on this GEMM's result through ops outside the epilogue")
        v = _val(a)
        if v is None:
            raise Refuse(f"its {role} {a.name} is not a tensor")
        ts, s = tuple(int(d) for d in v.shape), like.shape
        if tuple(out_shape) != s:
            raise Refuse(f"its {role} {a.name} of shape {list(ts)} broadcasts the result from {list(s)} to "
                         f"{list(out_shape)}")
        numel = _math.prod(ts)
        if numel == 1:
            kind = "scalar"
            if not _is_attr(a):
                raise Refuse(f"its {role} {a.name} is a one-element tensor computed in the graph (a scalar "
                             f"parameter or a number is what the epilogue takes)")
            if not v.dtype.is_floating_point:
                raise Refuse(f"its {role} {a.name} is a {v.dtype} scalar")
        else:
            if v.dtype != self.dtype:
                raise Refuse(f"its {role} {a.name} is {v.dtype}, the GEMM {self.dtype}")
            if len(ts) > len(s):
                raise Refuse(f"its {role} {a.name} of shape {list(ts)} has more dimensions than the result")
            pad = (1,) * (len(s) - len(ts)) + ts
            rows = s[:-1]
            if not like.reduced and s and s[-1] == self.n and pad[-1] == self.n and all(d == 1 for d in pad[:-1]):
                kind = "col"
            elif (like.reduced and pad == s) or (pad[:-1] == rows and pad[-1] == 1 and _math.prod(rows) == self.m):
                kind = "row"
            elif pad == s and not like.reduced:
                kind = "mat"
            else:
                raise Refuse(f"its {role} {a.name} of shape {list(ts)} is neither a scalar, a per-feature [N] "
                             f"vector, a per-row vector nor a matrix shaped like the result {list(s)}")
        target = a.target if _is_attr(a) else a.name
        name = self._name(a.target) if _is_attr(a) else self._name(None, a)
        if self.kinds.get(name, kind) != kind:
            raise Refuse(f"{a.name} is used both as a {self.kinds[name]} and as a {kind}")
        self.kinds[name] = kind
        self.sources[name] = ("attr" if _is_attr(a) else "node", target)
        return E.param(name)

    def value(self, n, e, like=None, reduced=None):
        shape = tuple(int(d) for d in _val(n).shape)
        return _V(e, shape, (like.reduced if like is not None else False) if reduced is None else reduced)

    # Growth ---------------------------------------------------------------------------------

    def grow(self):
        start = min(self.order[s.node] for s in self.seeds)
        nodes = list(self.gm.graph.nodes)[start:]
        for n in nodes:
            if n in self.vals or n.op != "call_function":
                continue
            if not any(a in self.vals for a in n.all_input_nodes):
                continue
            if n in self.claimed:
                self.reasons[n] = "it belongs to another GEMM's epilogue"
                continue
            try:
                v = _apply(n, self)
            except (Refuse, ValueError) as r:  # ValueError: a number the language cannot hold
                self.reasons[n] = str(r)
                continue
            out = _val(n)
            if v.tuple_of is None and (out is None or out.dtype not in self.dtypes):
                self.reasons[n] = f"it changes the dtype to {getattr(out, 'dtype', '?')}"
                continue
            self.vals[n] = v

    def choose(self):
        """The largest valid region: the latest candidate whose ancestors among the candidates use
        nothing outside, and whose expression the language states."""
        cands = sorted(self.vals, key=self.order.get)
        seeds = {g.node for g in self.seeds}
        for o in reversed(cands):
            v = self.vals[o]
            if v.tuple_of is not None:
                continue
            region, stack = set(), [o]
            while stack:
                c = stack.pop()
                if c in region:
                    continue
                region.add(c)
                stack += [a for a in c.all_input_nodes if a in self.vals]
            if not seeds <= region:
                continue
            outside = [(c, u) for c in region if c is not o for u in c.users if u not in region]
            if outside:
                c, u = min(outside, key=lambda cu: self.order[cu[1]])
                self.reasons.setdefault(o, f"{c.name}, the epilogue's value before it, is also used by {u.name}")
                continue
            kinds = {k: t for k, t in self.kinds.items() if E.params_of(v.e).get(k)}
            why = E.check(v.e, kinds)
            if why is None:
                tail = self.tail(v.e)
                if _math.prod(v.shape) != self.m * _math.prod(tail):
                    why = f"its result of shape {list(v.shape)} does not have the GEMM's rows"
            if why is not None:
                self.reasons.setdefault(o, why)
                continue
            return o, region, kinds
        raise AssertionError("a GEMM alone is always a valid region")

    def tail(self, e):
        """The fused layer's output shape after the rows: (N,), () after a one-value row reduction,
        (N // w,) after a pool."""
        outer = e
        while outer.op not in E.REDUCTIONS and outer.args:
            found = [a for a in outer.args if any(True for n in E._all(a) if n.op in E.REDUCTIONS)]
            if not found:
                break
            outer = found[0]
        if outer.op in E.ROW_ONE:
            return ()
        if outer.op in E.POOLS:
            return (self.n // int(outer.args[1].value),)
        return (self.n,)


class _Grown:
    def __init__(self, region, output, nodes, kinds):
        self.region, self.output, self.nodes, self.kinds = region, output, nodes, kinds
        self.seeds = region.seeds
        self.expr = region.vals[output].e
        self.gated = len(region.seeds) > 1
        self.left = []
        for u in sorted(output.users, key=region.order.get):
            if u.op == "output" or _is_gemm(u):  # a GEMM after this one is a problem of its own
                continue
            why = region.reasons.get(u) or next((region.reasons[i] for i in u.users if i in region.reasons), None)
            if why is None:
                ins = [a for a in u.all_input_nodes if a in region.vals and a not in nodes]
                why = (f"{ins[0].name}, which it reads, is also used outside the epilogue" if ins else
                       "not taken into the epilogue")
            self.left.append(LeftInTorch(u.name, _opname(u), _module_of(u), why))

    def record(self, m_range):
        r, g = self.region, self.seeds[0]
        g2 = self.seeds[1] if self.gated else None
        expr, kinds, old = _canonical_names(self.expr, self.kinds, ("b1", "b2") if self.gated else ("bias",))
        text = E.epilogue_text(expr, kinds)
        mode, layer_text, fp8_note = g.mode, None, ()
        if mode == "fp8":
            why = _fp8_refusal(expr, g, self.gated)
            if why is None:  # x * sx * sw in place of x, a pair's x2 * sx * sw2: the dequantizing scales
                layer_text = text  # (ft_fp8_epilogue's form)
                scaled = _substitute(expr, {"x": E.X * E.param("sx") * E.param("sw"),
                                            "x2": E.X2 * E.param("sx") * E.param("sw2")})
                scales = dict(sx="row", sw="col", **({"sw2": "col"} if self.gated else {}))
                text = E.epilogue_text(scaled, dict(kinds, **scales))
            else:
                mode = "bf16"
                fp8_note = (f"fp8 does not serve this layer ({why}): it is tuned and served in bf16",)
        bindings = tuple(Binding(name, kinds[name], *r.sources[old[name]]) for name in sorted(kinds)
                         if not (name == "bias" and not self.gated))
        notes = tuple(msg for node, msg in r.notes.items() if node in self.nodes) + fp8_note
        return CapturedProblem(
            m=g.m, n=g.n, k=g.k, epilogue=text, math=mode, dtype=str(g.dtype).replace("torch.", ""),
            where=g.where, node=g.node.name, output=self.output.name,
            nodes=tuple(n.name for n in sorted(self.nodes, key=r.order.get)), input=g.x.name,
            weight=g.weight, weight_transposed=g.transposed, bias=g.bias,
            weight2=g2.weight if g2 else None, bias2=g2.bias if g2 else None,
            bindings=bindings, out_shape=r.vals[self.output].shape, m_range=m_range, lead=g.lead, notes=notes,
            layer_epilogue=layer_text, expr=expr)


_PREFIX = {"scalar": "s", "col": "v", "row": "r", "mat": "m"}


def _fp8_refusal(expr, g, gated):
    """Why the fp8 mode cannot serve a layer (fusedtune.fp8.FP8Linear, the fp8 form of E that
    ft_fp8_epilogue writes: x, and a gated pair's x2, read once, no reduction; N and K multiples of
    16), or None. Its parameters are served: the bias and matrices in bf16, the vectors in fp32."""
    if any(n.op in E.REDUCTIONS for n in E._all(expr)):
        return "a reduction"
    for name in ("x", "x2") if gated else ("x",):
        if sum(n.op == name for n in E._all(expr)) != 1:
            return f"{name} read more than once"
    if g.n % 16 or g.k % 16:
        return f"N = {g.n}, K = {g.k}: fp8 needs multiples of 16"
    return None


def _substitute(e, by):
    """e with each leaf whose op is a key of by replaced by its value."""
    if e.op in by:
        return by[e.op]
    return E.Expr(e.op, *[_substitute(a, by) for a in e.args], value=e.value)


def _canonical_names(expr, kinds, fixed):
    """expr with its parameters named by kind and order of appearance (s1, v1, v2, r1, m1; the
    layer's bias kept): the text, and so the database's key, is then the same whatever the model
    calls its tensors, through fuse() or the torch.compile backend. Returns the new expression, the
    new {name: kind} and {new name: old name}."""
    order = []

    def walk(e):
        if e.op == "param" and e.value not in order:
            order.append(e.value)
        for a in e.args:
            walk(a)
    walk(expr)
    new, count = {}, {}
    for name in order:
        if name in fixed:
            new[name] = name
            continue
        kind = kinds[name]
        count[kind] = count.get(kind, 0) + 1
        new[name] = f"{_PREFIX[kind]}{count[kind]}"

    def rename(e):
        if e.op == "param":
            return E.param(new[e.value])
        return E.Expr(e.op, *[rename(a) for a in e.args], value=e.value)
    return rename(expr), {new[n]: kinds[n] for n in order}, {v: k for k, v in new.items()}


def _grow(gm, order, seeds, claimed):
    if any(n in claimed for n in seeds):
        return None
    region = _Region(gm, order, seeds, claimed)
    region.grow()
    try:
        o, nodes, kinds = region.choose()
    except AssertionError:
        return None  # a gated pair whose products never meet
    return _Grown(region, o, nodes, kinds)


__all__ = ["Binding", "Capture", "CapturedProblem", "LeftInTorch", "capture_graph", "export", "problems"]
