"""Epilogue expressions as trees, printed in fusedtune's canonical text (docs/EPILOGUE.md, "Canonical
text"), checked against the language's rules for reductions, and evaluated with torch (the CPU
tests compare a captured epilogue with the model's own ops). Needs neither the library nor a GPU.
"""
import decimal
import math as _math

# Functions of the language: name -> arity (the reductions take their integer argument too).
FUNCTIONS = {"min": 2, "max": 2, "relu": 1, "leaky_relu": 2, "gelu": 1, "gelu_tanh": 1, "sigmoid": 1, "silu": 1,
             "tanh": 1, "softplus": 1, "mish": 1, "elu": 1, "clamp": 3, "abs": 1, "exp": 1, "log": 1, "sqrt": 1}
ROW_ONE = ("rowsum", "rowmean", "rowmax", "rowmin", "logsumexp")  # y [M]
ROW_FULL = ("softmax", "log_softmax")                                # y [M, N], a row reduction
NORMS = ("groupnorm", "batchnorm")
POOLS = ("maxpool", "avgpool")
REDUCTIONS = ROW_ONE + ROW_FULL + NORMS + POOLS
RESERVED = {"x", "x2", "where", "scalar", "col", "row", "mat", "swish", "hardtanh", "inf", "nan", "infinity"}
RESERVED |= set(FUNCTIONS) | set(REDUCTIONS)
MAX_PARAMS = 8
MAX_TEXT = 4096


class Expr:
    """A node of an epilogue: op is "x", "x2", "num", "param", "neg", one of + - * /, a function or a
    reduction; args its operands (a reduction's integer argument is a "num" node)."""
    __slots__ = ("op", "args", "value")

    def __init__(self, op, *args, value=None):
        self.op, self.args, self.value = op, args, value

    # Building, as torch writes it: a + b, a * 2, -a.
    @staticmethod
    def _wrap(v):
        return v if isinstance(v, Expr) else num(v)

    def __add__(self, o): return Expr("+", self, Expr._wrap(o))
    def __radd__(self, o): return Expr("+", Expr._wrap(o), self)
    def __sub__(self, o): return Expr("-", self, Expr._wrap(o))
    def __rsub__(self, o): return Expr("-", Expr._wrap(o), self)
    def __mul__(self, o): return Expr("*", self, Expr._wrap(o))
    def __rmul__(self, o): return Expr("*", Expr._wrap(o), self)
    def __truediv__(self, o): return Expr("/", self, Expr._wrap(o))
    def __rtruediv__(self, o): return Expr("/", Expr._wrap(o), self)
    def __neg__(self): return Expr("neg", self)

    def __str__(self):
        return text(self)

    def __repr__(self):
        return f"Expr({text(self)!r})"


X = Expr("x")
X2 = Expr("x2")


def num(v):
    """A number; a negative one is the unary minus of its magnitude, as the parser reads `-2`."""
    v = float(v)
    if not _math.isfinite(v) or abs(v) > 3.4028234663852886e38:
        raise ValueError(f"the number {v} is not finite in float: the language holds float's finite numbers")
    if 0 < abs(v) < 1.17549435e-38:
        raise ValueError(f"the number {v} is below float's normal range (the kernels compute in float)")
    if v < 0 or (v == 0 and _math.copysign(1, v) < 0):
        return Expr("neg", Expr("num", value=-v))
    return Expr("num", value=v)


def param(name):
    return Expr("param", value=name)


def call(f, *args):
    return Expr(f, *[a if isinstance(a, Expr) else num(a) for a in args])


def format_number(v):
    """The canonical text of a number: the shortest decimal that reads back to the same double, fixed
    notation for decimal exponents -4 .. 15, else 1e-5 / 1.5e20 style; integers without a point."""
    if v == 0:
        return "0"
    d = decimal.Decimal(repr(float(v)))
    sign, digits, exp = d.as_tuple()
    digits = "".join(map(str, digits)).rstrip("0") or "0"
    # exp counts from the last digit written by repr; recompute after stripping zeros.
    exp10 = d.adjusted()  # the decimal exponent of the leading digit
    if -4 <= exp10 <= 15:
        if exp10 >= len(digits) - 1:
            s = digits + "0" * (exp10 - len(digits) + 1)
        elif exp10 >= 0:
            s = digits[:exp10 + 1] + "." + digits[exp10 + 1:]
        else:
            s = "0." + "0" * (-exp10 - 1) + digits
    else:
        s = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + "e" + str(exp10)
    return ("-" if sign else "") + s


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3}


def _prec(e):
    return _PREC.get(e.op, 4)


def text(e):
    """The canonical text of an expression (no declarations)."""
    op = e.op
    if op in ("x", "x2"):
        return op
    if op == "num":
        return format_number(e.value)
    if op == "param":
        return e.value
    if op == "neg":
        a = e.args[0]
        inner = text(a)
        if _prec(a) < 3:
            return f"-({inner})"
        return f"- {inner}" if a.op == "neg" else f"-{inner}"
    if op in ("+", "-", "*", "/"):
        a, b = e.args
        la, lb = text(a), text(b)
        if _prec(a) < _PREC[op]:
            la = f"({la})"
        if _prec(b) <= _PREC[op]:
            lb = f"({lb})"
        return f"{la} {op} {lb}"
    return f"{op}({', '.join(text(a) for a in e.args)})"


def uses(e, op):
    """Whether the tree holds a node of op."""
    return e.op == op or any(uses(a, op) for a in e.args)


def same(a, b):
    """Whether two trees are the same expression."""
    return (a.op == b.op and a.value == b.value and len(a.args) == len(b.args)
            and all(same(x, y) for x, y in zip(a.args, b.args)))


def params_of(e, out=None):
    out = {} if out is None else out
    if e.op == "param":
        out[e.value] = True
    for a in e.args:
        params_of(a, out)
    return out


def epilogue_text(e, kinds):
    """The whole epilogue: the expression, then its declarations sorted by name (bias, a col vector,
    is implicit). kinds: {name: "scalar" | "col" | "row" | "mat"} for every parameter E uses."""
    decls = []
    for name in sorted(kinds, key=lambda s: s.encode()):
        if name == "bias" and kinds[name] == "col":
            continue
        decls.append(f"{kinds[name]} {name}")
    body = text(e)
    return body + (" where " + ", ".join(decls) if decls else "")


def check(e, kinds):
    """None when fusedtune's language states e (docs/EPILOGUE.md, "Reductions" and "Limits"), else
    the one-line reason it does not. kinds: {name: kind} of every parameter E uses."""
    if not (uses(e, "x") or uses(e, "x2")):
        return "the expression does not use the GEMM's result"
    if len(kinds) > MAX_PARAMS:
        return f"{len(kinds)} parameters, more than the language's {MAX_PARAMS}"
    leaves, reds = [], []

    def walk(n, ctx):
        if n.op in REDUCTIONS:
            if any(same(n, r) and c == ctx for r, c in reds):
                return  # written again with the same argument: the same reduction, its value reused
            reds.append((n, ctx))
            if not (uses(n.args[0], "x") or uses(n.args[0], "x2")):
                leaves.append((n, "arg"))
            ctx = ctx + (n.op,)
            walk(n.args[0], ctx)
            return
        if n.op in ("x", "x2") or (n.op == "param" and kinds.get(n.value) in ("col", "mat")):
            leaves.append((n, ctx))
        for a in n.args:
            walk(a, ctx)
    walk(e, ())
    for n, ctx in leaves:
        if ctx == "arg":
            return f"'{n.op}' of an expression that does not use x"
    if reds and uses(e, "x2"):
        return f"x2 (a gated pair's second product) with the reduction '{reds[0][0].op}': not supported"
    outer = [n.op for n, ctx in reds if not ctx]
    if len(outer) > 1:
        return (f"a second '{outer[1]}' with another argument" if outer[0] == outer[1] else
                f"a second reduction '{outer[1]}' (the first is '{outer[0]}')") + ": an epilogue holds one reduction"
    for n, ctx in reds:
        if ctx:
            if (n.op not in POOLS and n.op != "batchnorm") or len(ctx) > 1 or ctx[0] not in ROW_ONE + ROW_FULL:
                return (f"'{n.op}' inside '{ctx[-1]}': a reduction may hold only a pool or batchnorm, and only a "
                        f"row reduction may hold one")
            if (ctx[0] in ROW_FULL) != (n.op == "batchnorm"):  # softmax of a pool; rowsum of batchnorm
                return f"no kernel serves '{ctx[0]}' of '{n.op}' yet"
    if outer:
        r = outer[0]
        inner = [n.op for n, ctx in reds if ctx]  # a pool or batchnorm inside the row reduction
        depth = 2 if inner else 1
        pooled = bool(inner) and inner[0] in POOLS
        for n, ctx in leaves:
            if n.op in ("x", "x2") and len(ctx) < depth:
                where = f"outside '{r}'" if not ctx else f"inside '{r}' but outside its {inner[0]}"
                return f"{n.op} is read {where}: an epilogue reads it only inside its reduction"
            if n.op == "param" and len(ctx) < depth and (r in ROW_ONE or r in POOLS or pooled):
                result = "[M]" if r in ROW_ONE and not ctx else "pooled"
                what = "matrix ([M, N])" if kinds.get(n.value) == "mat" else "col vector (N values)"
                return f"'{n.value}' is a {what} but meets the {result} result of '{r}'"
    t = epilogue_text(e, kinds)
    if len(t) > MAX_TEXT:
        return f"its text is {len(t)} bytes, more than the language's {MAX_TEXT}"
    return None


def _all(e):
    yield e
    for a in e.args:
        yield from _all(a)


def evaluate(e, x, x2=None, params=None):
    """E evaluated with torch on x (the GEMM result, [..., N]) and x2; params {name: tensor or number}:
    a col vector [N], a row vector [..., 1], a matrix like x. A one-value row reduction keeps its
    dimension ([..., 1]). The definitions of the float64 reference (docs/EPILOGUE.md) in x's dtype;
    the CPU tests compare a captured epilogue with the model's own ops through it."""
    import torch
    import torch.nn.functional as F
    params = params or {}

    def ev(n):
        op = n.op
        if op == "x":
            return x
        if op == "x2":
            return x2
        if op == "num":
            return n.value
        if op == "param":
            return params[n.value]
        a = [ev(c) for c in n.args]
        if op == "neg":
            return -a[0]
        if op == "+":
            return a[0] + a[1]
        if op == "-":
            return a[0] - a[1]
        if op == "*":
            return a[0] * a[1]
        if op == "/":
            return a[0] / a[1]
        t = lambda v: v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=x.dtype)  # noqa: E731
        if op == "min":
            return torch.minimum(t(a[0]), t(a[1]))
        if op == "max":
            return torch.maximum(t(a[0]), t(a[1]))
        if op == "clamp":
            return torch.minimum(torch.maximum(t(a[0]), t(a[1])), t(a[2]))
        if op == "leaky_relu":
            return torch.where(t(a[0]) > 0, t(a[0]), t(a[0]) * a[1])
        unary = {"relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
                 "sigmoid": torch.sigmoid, "silu": F.silu, "tanh": torch.tanh, "softplus": F.softplus,
                 "mish": F.mish, "elu": F.elu, "abs": torch.abs, "exp": torch.exp, "log": torch.log,
                 "sqrt": torch.sqrt}
        if op in unary:
            return unary[op](t(a[0]))
        v = a[0]
        if op == "rowsum":
            return v.sum(-1, keepdim=True)
        if op == "rowmean":
            return v.mean(-1, keepdim=True)
        if op == "rowmax":
            return v.amax(-1, keepdim=True)
        if op == "rowmin":
            return v.amin(-1, keepdim=True)
        if op == "logsumexp":
            return torch.logsumexp(v, -1, keepdim=True)
        if op == "softmax":
            return torch.softmax(v, -1)
        if op == "log_softmax":
            return torch.log_softmax(v, -1)
        if op == "groupnorm":
            g = int(a[1])
            return F.group_norm(v.reshape(-1, v.shape[-1]), g).reshape(v.shape)
        if op == "batchnorm":
            return F.batch_norm(v, None, None, training=True)
        if op in POOLS:
            w = int(a[1])
            pool = F.max_pool1d if op == "maxpool" else F.avg_pool1d
            return pool(v.reshape(-1, 1, v.shape[-1]), w).reshape(*v.shape[:-1], -1)
        raise ValueError(f"no torch form for '{op}'")

    return ev(e)
