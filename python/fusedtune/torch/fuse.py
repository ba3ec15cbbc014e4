"""Rewrite: the model with each captured GEMM + epilogue served by a FusedLinear (docs/PYTHON.md,
"Whole models").

    from fusedtune.torch import fuse
    fast = fuse(model, x, db="fusedtune.db")      # an fx GraphModule; the rest of the model unchanged
    with torch.inference_mode():
        y = fast(x)

Every captured problem must be tuned in db (at its M or an M bucket), else NotTunedError names the
`fusedtune tune` command; autotune=True tunes what is missing instead. fusedtune runs on CUDA:
a model on the CPU is refused.
"""
import warnings

import torch
from torch import nn

from ..errors import InvalidArgumentError, NotFoundError, NotTunedError
from .capture import Capture, LeftInTorch, capture_graph, export


def _shell(weight, bias=None):
    """An nn.Linear over weight [N, K] and bias (no copy, no initialization), for FusedLinear's
    from_linear and from_gated."""
    lin = nn.Linear.__new__(nn.Linear)
    nn.Module.__init__(lin)
    lin.out_features, lin.in_features = weight.shape
    lin.weight = nn.Parameter(weight.detach(), requires_grad=False)
    if bias is not None:
        lin.bias = nn.Parameter(bias.detach(), requires_grad=False)
    else:
        lin.register_parameter("bias", None)
    return lin


def _tensor(gm, target):
    mod, _, name = target.rpartition(".")
    owner = gm.get_submodule(mod) if mod else gm
    return getattr(owner, name)


def layer_for(p, gm, db=None, autotune=False, nearest=False):
    """The FusedLinear serving captured problem p of the exported module gm: its weight (a
    transposed copy where the model stores W [K, N]), bias and parameters from gm's attributes;
    operands the graph computes are given per call (fuse)."""
    from .layer import FusedLinear
    weight = _tensor(gm, p.weight)
    if p.weight_transposed:
        weight = weight.detach().t().contiguous()
    params = {}
    for b in p.bindings:
        if b.source != "attr" or b.kind == "mat":
            continue
        t = _tensor(gm, b.target).detach()
        params[b.name] = float(t.reshape(())) if b.kind == "scalar" else t.reshape(-1)
    options = dict(math=p.math, db=db, nearest=nearest, autotune=autotune)
    # An fp8 layer (fusedtune.fp8.FP8Linear: W quantized once, x on every call) takes E before its
    # scales, which it adds itself (fp8_epilogue), and holds E's vectors as fp32 copies.
    epilogue = p.layer_epilogue if p.math == "fp8" else p.epilogue
    if p.gated:
        w2 = _tensor(gm, p.weight2)
        if p.weight_transposed:
            w2 = w2.detach().t().contiguous()
        return FusedLinear.from_gated(_shell(weight), _shell(w2), epilogue, params=params or None, **options)
    bias = _tensor(gm, p.bias) if p.bias is not None else None
    return FusedLinear.from_linear(_shell(weight, bias), epilogue, params=params or None, **options)


# How much slower than the eager-style chain timed beside it a stored best may be and still serve a
# layer (the timing's noise between two medians of one run).
FLOOR_MARGIN = 1.01


class FloorWarning(UserWarning):
    """A captured layer fuse() leaves to PyTorch: its stored best was measured slower than the
    eager-style chain."""


def _not_tuned(p, db, e):
    """NotTunedError for captured problem p from the lookup's error e."""
    if isinstance(e, NotTunedError):
        return NotTunedError(
            f"fuse: {p.where or 'the model'} ({p.node}): {p.shape} '{p.epilogue}' {p.mode} is not tuned in "
            f"{db or 'the default database'}: run `{e.command}`, or fusedtune.torch.tune(model, *inputs, "
            f"db=...) for every layer, or fuse(..., autotune=True)", command=e.command, status=NotTunedError.status)
    return NotTunedError(f"fuse: {p.where or 'the model'} ({p.node}): {e}", command=p.tune_command(db),
                         status=NotTunedError.status)


def _below_floor(p, layer):
    """Why layer (its plan at the example's M) is left to PyTorch, or None: its stored best was
    measured slower than the eager-style chain (the same GEMM, then one kernel per op, as PyTorch
    eager runs them) timed beside it in the same tune. The reason is one line without the layer's
    name (fuse adds it)."""
    plan_for = getattr(layer, "plan_for", None)
    if plan_for is None:
        return None
    cfg = plan_for(p.m).config
    if not (cfg.eager_ms > 0 and cfg.median_ms > FLOOR_MARGIN * cfg.eager_ms):
        return None
    return (f"the stored best {cfg.name} ({cfg.median_ms:.4f} ms) was measured slower than the eager-style "
            f"chain beside it ({cfg.eager_ms:.4f} ms): left to PyTorch (fuse(..., floor=False) serves it anyway)")


def fuse(model, *example_inputs, db=None, autotune=False, math=None, nearest=False, dynamic=False, tolerance=None,
         floor=True, _layer_for=None):
    """model with every GEMM + epilogue fusedtune.torch.problems() captures served by a FusedLinear
    (gated pairs by one from_gated layer): a torch.fx GraphModule (torch.export's, on these example
    inputs), the other ops as they were. Inference only.

    db        the database (path or fusedtune.Database) holding the tunes; autotune: True or a dict
              of Database.tune options tunes what is missing (a writable db, the GPU's time);
    math      the mode (default: the dtype's; "tf32" or "3xtf32" for float32 models);
    nearest   serve a shape not tuned by the nearest tuned shape (with a warning) instead of refusing;
    tolerance with math None or "auto": each layer in the fastest mode stored for it whose measured
              error is within tolerance (Database.lookup_within: fp32, 3xtf32, tf32 for a float32
              model; bf16 or the fp8 form for a bfloat16 one), at the example's M;
    dynamic   the inputs' first dimension (the batch) may change from call to call (torch.export's
              Dim.AUTO: dynamic where the model lets it be); each call's M is then served by its own
              tune or M bucket (tune with m_range); otherwise the example's shapes are fixed;
    floor     leave to PyTorch (with a FloorWarning) each layer whose stored best, at the example's M,
              was measured more than 1 % slower than the eager-style chain timed beside it in its tune
              (the same GEMM, then one kernel per op, as PyTorch eager runs them); the result's
              .left_to_torch lists them with the reason. False serves every captured layer.

    Refused: a model whose parameters are not on a CUDA device (InvalidArgumentError), and a layer
    whose problem is not tuned at its M or an M bucket (NotTunedError, .command the tune command),
    unless autotune or nearest."""
    if not isinstance(model, nn.Module):
        raise InvalidArgumentError(f"fuse: model must be a torch.nn.Module, not {type(model).__name__}")
    if _layer_for is None:
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if t.is_floating_point() and t.device.type != "cuda":
                raise InvalidArgumentError(
                    f"fuse: {name} is on {t.device}: fusedtune's kernels run on CUDA devices; move the model and "
                    f"the example inputs there (model.cuda()). fusedtune.torch.problems(model, ...) captures on "
                    f"any device")
    if tolerance is not None and math not in (None, "auto"):
        raise InvalidArgumentError(f"fuse: tolerance picks each layer's mode: math must be None or 'auto', not "
                                   f"{math!r}")
    gm = export(model, example_inputs, dynamic=dynamic)
    found = capture_graph(gm, math=None if tolerance is not None else math)
    if tolerance is not None and _layer_for is None:
        found = _modes_within(found, db, tolerance)
    original = {n.name: n for n in gm.graph.nodes}
    by_name = dict(original)
    attrs = {n.target: n for n in gm.graph.nodes if n.op == "get_attr"}
    aten = torch.ops.aten
    contiguous = {"memory_format": torch.contiguous_format}
    layers, left = [], []
    for i, p in enumerate(found):
        layer = (_layer_for or layer_for)(p, gm, db=db, autotune=autotune, nearest=nearest)
        if floor:
            try:
                why = _below_floor(p, layer)
            except (NotTunedError, NotFoundError) as e:
                raise _not_tuned(p, db, e) from None
            if why:
                warnings.warn(f"fuse: {p.where or 'the model'} ({p.node}): {p.shape} '{p.epilogue}' {p.mode}: {why}",
                              FloorWarning, stacklevel=2)
                left.append((p, why))
                continue
        name = f"fused{i}_" + (p.where.replace(".", "_") or "model")
        gm.add_submodule(name, layer)
        layers.append((p, layer))
        out = by_name[p.output]
        x = by_name[p.input]  # perhaps an earlier layer's output, replaced by its call
        lead, in_dtype = [int(d) for d in x.meta["val"].shape[:-1]], x.meta["val"].dtype
        with gm.graph.inserting_before(out):
            if not x.meta["val"].is_contiguous():  # FusedLinear reads x and matrices row-major
                x = gm.graph.call_function(aten.clone.default, (x,), contiguous)
            kwargs = {}
            for b in p.bindings:
                if b.source == "attr" and b.kind != "mat":
                    continue
                node = attrs[b.target] if b.source == "attr" else by_name[b.target]
                have, dtype = [int(d) for d in node.meta["val"].shape], node.meta["val"].dtype
                if b.kind == "mat" and (have != lead + [p.n] or not node.meta["val"].is_contiguous()):
                    node = gm.graph.call_function(rows_like, (node, x, (p.n,)))
                elif b.kind == "row" and (have != [p.m] or not node.meta["val"].is_contiguous()):
                    node = gm.graph.call_function(aten.reshape.default, (node, [-1]))  # [M], contiguous
                elif b.kind == "col" and (have != [p.n] or not node.meta["val"].is_contiguous()):
                    node = gm.graph.call_function(aten.reshape.default, (node, [p.n]))
                    node = gm.graph.call_function(aten.clone.default, (node,), contiguous)
                if p.math == "fp8" and b.kind in ("row", "col") and dtype != torch.float32:
                    # an fp8 layer reads E's vectors as fp32 (its bias and matrices alone as bf16)
                    node = gm.graph.call_function(aten._to_copy.default, (node,), {"dtype": torch.float32})
                kwargs[b.name] = node
            y = gm.graph.call_module(name, (x,), kwargs)
            fused_shape = lead + list(_tail(p))
            out_shape = list(p.out_shape)
            if out_shape != fused_shape:
                if out_shape[:len(lead)] == lead:  # [M, 1] after a keepdim reduction: x's rows, then the rest
                    y = gm.graph.call_function(rows_like, (y, x, tuple(out_shape[len(lead):])))
                else:
                    y = gm.graph.call_function(aten.reshape.default, (y, out_shape))
            out_dtype = out.meta["val"].dtype
            if out_dtype != in_dtype:
                y = gm.graph.call_function(aten._to_copy.default, (y,), {"dtype": out_dtype})
        y.meta["val"] = out.meta["val"]
        out.replace_all_uses_with(y)
        by_name[p.output] = y
        for n in sorted((original[k] for k in p.nodes), key=lambda n: -list(gm.graph.nodes).index(n)):
            if not n.users:
                gm.graph.erase_node(n)
    gm.graph.eliminate_dead_code()
    # torch.export's input checks (_guards_fn, a pre-hook) cost ~45 us a call on the host (measured on
    # this project's CPU host: 74 us for a module whose layer alone takes 18), more than a small layer's
    # GPU time: one comparison of the inputs' shapes with the example's does their work here.
    for n in list(gm.graph.nodes):
        if n.op == "call_module" and n.target == "_guards_fn" and not n.users:
            gm.graph.erase_node(n)
    inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    shapes = tuple(_example_shape(n.meta.get("val")) for n in inputs)
    if inputs:
        with gm.graph.inserting_after(inputs[-1]):
            gm.graph.call_function(check_shapes, tuple(inputs), {"shapes": shapes})
        for key, hook in list(gm._forward_pre_hooks.items()):  # its other input check (~30 us a call)
            if getattr(hook, "__name__", "") == "_check_input_constraints_pre_hook":
                del gm._forward_pre_hooks[key]
    _plain_calls(gm, example_inputs)
    gm.delete_all_unused_submodules()
    gm.recompile()
    if left:  # the Capture of what is served; the layers left by the floor join its .left
        found = Capture([p for p, _ in layers], left=list(found.left) + [
            LeftInTorch(p.node, "gemm + epilogue", p.where, f"{p.shape} '{p.epilogue}' {p.mode}: {why}")
            for p, why in left], graph=found.graph)
    gm.fused = found
    gm.left_to_torch = left
    if _layer_for is None and not floor:  # (with floor, _below_floor looked each plan up)
        for p, layer in layers:
            try:
                layer.plan_for(p.m)
            except (NotTunedError, NotFoundError) as e:
                raise _not_tuned(p, db, e) from None
    return gm


def _plain_calls(gm, example_inputs):
    """torch.export's module wraps each call in more: its arguments flattened and its result
    rebuilt by pytree, and hooks entering and leaving a mode for nn.Module inputs (measured on this
    project's CPU host: 23 us a call for a module eager runs in 11.5, 14.4 without them). Where no
    input is an nn.Module the hooks go; where the inputs are positional and the result one tensor or
    a tuple of them, the graph's plain calling convention does the same work: gm is changed in
    place (recompiled by the caller)."""
    if not any(isinstance(a, nn.Module) for a in example_inputs):
        for hooks in (gm._forward_pre_hooks, gm._forward_hooks):
            for key, hook in list(hooks.items()):
                if "_create_stateful_graph_module" in getattr(hook, "__qualname__", ""):
                    del hooks[key]
    info = getattr(gm.graph._codegen, "pytree_info", None)
    if info is None or info.in_spec is None or info.out_spec is None:
        return
    spec, out_spec = info.in_spec, info.out_spec

    def kids(t):  # torch >= 2.10 deprecates children_specs for children()
        return list(t.children()) if callable(getattr(t, "children", None)) else list(t.children_specs)

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if spec.type is not tuple or spec.num_children != 2:
        return
    args, kwargs = kids(spec)
    if (args.type is not tuple or kwargs.type is not dict or kwargs.num_children != 0
            or args.num_children != len(placeholders) or not all(c.is_leaf() for c in kids(args))):
        return
    out = next(n for n in gm.graph.nodes if n.op == "output")
    flat = out.args[0]
    if out_spec.is_leaf() and len(flat) == 1:
        result = flat[0]
    elif out_spec.type is tuple and all(c.is_leaf() for c in kids(out_spec)) and \
            out_spec.num_children == len(flat):
        result = tuple(flat)
    else:
        return
    gm.graph.set_codegen(torch.fx.graph.CodeGen())
    out.args = (result,)


def _example_shape(v):
    """An input's shape for check_shapes: a tuple of ints, None for a dynamic dimension; None for a
    value that is not a tensor."""
    if not isinstance(v, torch.Tensor):
        return None
    return tuple(d if isinstance(d, int) else None for d in v.shape)


def check_shapes(*inputs, shapes):
    """The fused model's inputs against the example's shapes, which fuse() specialized to (None: a
    dynamic dimension, any size)."""
    for i, (t, shape) in enumerate(zip(inputs, shapes)):
        if shape is not None and t.shape != shape and (
                len(t.shape) != len(shape) or any(s is not None and d != s for d, s in zip(t.shape, shape))):
            want = ", ".join("*" if s is None else str(s) for s in shape)
            raise InvalidArgumentError(f"fused model: input {i} has shape {list(t.shape)}, the example's was "
                                       f"[{want}]: fuse() keeps the example's shapes (* a dynamic dimension); "
                                       f"fuse again for this one, or fuse(..., dynamic=True)")


def rows_like(t, x, tail):
    """t as x's rows (its leading dimensions) followed by tail, contiguous: a matrix operand or a
    layer's output in the shape the model's graph has, whatever the call's M."""
    return t.reshape(*x.shape[:-1], *tail).contiguous()


def _modes_within(found, db, tolerance):
    """found with each problem's mode the fastest stored within tolerance (ft_lookup_within, on the
    current CUDA device) and, where that is fp8, the fp8 layer's epilogue."""
    import dataclasses
    from .. import core
    database = db if isinstance(db, core.Database) else core.Database(db, readonly=True)
    try:
        out = []
        for p in found:
            try:
                config = database.lookup_within(core.Problem(p.m, p.n, p.k, p.epilogue, p.mode), tolerance)
            except NotFoundError as e:
                raise NotTunedError(f"fuse: {p.where or 'the model'} ({p.node}): {p.shape} '{p.epilogue}': no stored "
                                    f"mode within {tolerance:g}: {e}", command=p.tune_command(db),
                                    status=NotTunedError.status) from None
            if config.math == "fp8":
                from ..fp8 import fp8_epilogue
                p = dataclasses.replace(p, math="fp8", layer_epilogue=p.epilogue,
                                        epilogue=core.inspect_epilogue(fp8_epilogue(p.epilogue)).canonical)
            elif config.math != p.mode:
                p = dataclasses.replace(p, math=config.math)
            out.append(p)
        found[:] = out
        return found
    finally:
        if database is not db:
            database.close()


def _tail(p):
    """The FusedLinear's output shape after the rows."""
    from .expr import POOLS, REDUCTIONS, ROW_ONE, _all
    reds = [n for n in _all(p.expr) if n.op in REDUCTIONS]
    if any(n.op in ROW_ONE for n in reds):
        return ()
    pools = [n for n in reds if n.op in POOLS]
    if pools:
        return (p.n // int(pools[0].args[1].value),)
    return (p.n,)


__all__ = ["fuse", "layer_for"]
