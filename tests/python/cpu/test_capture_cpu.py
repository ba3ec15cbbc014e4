"""CPU tests of the model path (fusedtune.torch.problems, fuse) with torch but no GPU: small models
shaped like KernelBench's level-2 GEMM problems and level-3 models (written here, not copied), the
problems captured from each checked exactly, the ops left in PyTorch with their reasons, every
epilogue through the library's parser, and the rewritten model's outputs against the original's with
each fused layer computed by torch from the captured expression (fusedtune's kernels need a GPU).
Exits 77 (skipped, for ctest) without torch.

    python3 tests/python/cpu/test_capture_cpu.py     (FUSEDTUNE_LIBRARY set, or a build in ./build)
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import types
import unittest
import warnings

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:
    print("SKIP: torch is not installed for this python3; the capture CPU tests need it")
    sys.exit(77)

PYDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python")
sys.path.insert(0, PYDIR)
import fusedtune  # noqa: E402
from fusedtune.problems import load_problems  # noqa: E402
from fusedtune.torch import fuse, problems  # noqa: E402
from fusedtune.torch.expr import ROW_ONE, _all, evaluate  # noqa: E402
from fusedtune.torch.fuse import _tensor  # noqa: E402

M, K, N = 8, 32, 64


# Level 2: a GEMM and the ops after it.
class MinSub(nn.Module):  # 68_Matmul_Min_Subtract
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(K, N)
        self.constant = nn.Parameter(torch.tensor(2.0))

    def forward(self, x):
        x = self.linear(x)
        return torch.min(x, self.constant) - self.constant


class ReluBias(nn.Module):  # 76_Gemm_Add_ReLU: a bias of the model's own after a bias-less Linear
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N, bias=False)
        self.bias = nn.Parameter(torch.randn(N))

    def forward(self, x):
        return torch.relu(self.gemm(x) + self.bias)


class ScaleGelu(nn.Module):  # 53_Gemm_Scaling_Hardtanh_GELU
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N)
        self.hardtanh = nn.Hardtanh(min_val=-2, max_val=2)
        self.gelu = nn.GELU()

    def forward(self, x):
        return self.gelu(self.hardtanh(self.gemm(x) * 0.5))


class GroupNormSwish(nn.Module):  # 88_Gemm_GroupNorm_Swish_Multiply_Swish
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N)
        self.group_norm = nn.GroupNorm(8, N)
        self.multiply_weight = nn.Parameter(torch.randn(N))

    def forward(self, x):
        x = self.group_norm(self.gemm(x))
        x = x * torch.sigmoid(x)
        x = x * self.multiply_weight
        return x * torch.sigmoid(x)


class ScaleBatchNorm(nn.Module):  # 33_Gemm_Scale_BatchNorm (training mode: the batch's statistics)
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N)
        self.scale = nn.Parameter(torch.randn(N))
        self.bn = nn.BatchNorm1d(N)

    def forward(self, x):
        return self.bn(self.gemm(x) * self.scale)


class DropoutSoftmax(nn.Module):  # 66_Matmul_Dropout_Softmax
    def __init__(self, p=0.2):
        super().__init__()
        self.matmul = nn.Linear(K, N)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return torch.softmax(self.dropout(self.matmul(x)), dim=1)


class LogsumexpMish(nn.Module):  # 22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish
    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(K, N)

    def forward(self, x):
        x = self.matmul(x) * 2.0
        x = x + x
        x = torch.clamp(x, -10.0, 10.0)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x * F.mish(x)


class SigmoidResidual(nn.Module):  # 70_Gemm_Sigmoid_Scaling_ResidualAdd: x read twice
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N)

    def forward(self, x):
        x = self.gemm(x)
        original_x = x
        return torch.sigmoid(x) * 2.0 + original_x


class DivideSum(nn.Module):  # 14_Gemm_Divide_Sum_Scaling: torch.matmul with a weight parameter
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(N, K))

    def forward(self, x):
        x = torch.matmul(x, self.weight.T) / 2
        return torch.sum(x, dim=1, keepdim=True) * 1.5


class PoolSum(nn.Module):  # 55_Matmul_MaxPool_Sum_Scale
    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(K, N)
        self.max_pool = nn.MaxPool1d(2)

    def forward(self, x):
        x = self.max_pool(self.matmul(x).unsqueeze(1)).squeeze(1)
        return torch.sum(x, dim=1) * 0.5


class InstanceNormResidual(nn.Module):  # 28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply
    def __init__(self):
        super().__init__()
        self.bmm = nn.Linear(K, N)
        self.instance_norm = nn.InstanceNorm2d(N)

    def forward(self, x, y):
        x = self.bmm(x)
        x = self.instance_norm(x.unsqueeze(1).unsqueeze(1)).squeeze(1).squeeze(1)
        return (x + y) * y


class MaxMinusMean(nn.Module):  # 80_Gemm_Max_Subtract_GELU
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N)

    def forward(self, x):
        x = torch.max(self.gemm(x), dim=1, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return F.gelu(x)


class BatchNormScaleSoftmax(nn.Module):  # 84_Gemm_BatchNorm_Scaling_Softmax (training mode)
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(K, N)
        self.bn = nn.BatchNorm1d(N)
        self.scale = nn.Parameter(torch.ones(1) * 1.5)

    def forward(self, x):
        return torch.softmax(self.scale * self.bn(self.gemm(x)), dim=1)


class WeightKN(nn.Module):  # x @ W with W stored [K, N], and addmm
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(K, N) / 8)
        self.b = nn.Parameter(torch.randn(N))

    def forward(self, x):
        return torch.tanh(x @ self.w), torch.addmm(self.b, x, self.w)


class StridedInput(nn.Module):  # a GEMM of a transposed (non-contiguous) activation, a strided residual
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(K, N)

    def forward(self, xt, r):
        return self.fc(xt.t()) + r.t()


class Names(nn.Module):  # parameters named like a layer's own attributes
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(K, N)
        self.weight = nn.Parameter(torch.randn(N))
        self.training_shift = nn.Parameter(torch.randn(N))

    def forward(self, x):
        return self.fc(x) * self.weight + self.training_shift


class BadNumbers(nn.Module):  # numbers float cannot hold end the epilogue
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(K, N)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 1e-40 + float("inf")


class ResidualRow(nn.Module):  # a residual matrix and a row vector computed in the graph
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(K, N)

    def forward(self, x, r):
        s = x.sum(dim=1, keepdim=True)
        return F.leaky_relu(self.fc(x) * s, 0.1) + r


# Level 3: stacks and blocks.
class MLP(nn.Module):  # 1_MLP, 3_DeepNarrowMLP
    def __init__(self, sizes=(K, 64, 64, 16)):
        super().__init__()
        layers = []
        for a, b in zip(sizes[:-2], sizes[1:-1]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-2], sizes[-1]))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class SwiGLU(nn.Module):  # a Llama-style MLP with its residual
    def __init__(self, dim=K, hidden=N):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, h):
        return h + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class GeGLUBias(nn.Module):  # a gated pair with biases, the up product first
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(K, N)
        self.w3 = nn.Linear(K, N)

    def forward(self, h):
        return self.w3(h) * F.gelu(self.w1(h), approximate="tanh")


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MiniGPTBlock(nn.Module):  # 44_MiniGPTBlock, small
    def __init__(self, n_embd=K, n_head=4, seqlen=16):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(seqlen, seqlen)).view(1, 1, seqlen, seqlen))
        self.n_head, self.n_embd = n_head, n_embd
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)
        self.act = NewGELU()
        self.dropout = nn.Dropout(0.0)

    def attn(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.dropout(self.mlp_proj(self.act(self.c_fc(self.ln_2(x)))))


class LMHeadLSE(nn.Module):  # an LM head and cross-entropy's normalizer
    def __init__(self, vocab=256):
        super().__init__()
        self.lm_head = nn.Linear(K, vocab, bias=False)

    def forward(self, h):
        return torch.logsumexp(self.lm_head(h), dim=-1)


GELU_TANH = ("(x + bias) * 0.5 * (tanh((x + bias + (x + bias) * (x + bias) * (x + bias) * 0.044715) * "
             "0.7978845608028654) + 1)")

# model, inputs, [(shape, epilogue, math, module)], {node: reason fragment} of what stays in PyTorch
CASES = {
    "minsub": (MinSub, lambda: (torch.randn(M, K),),
               [("8x64x32", "min(x + bias, s1) - s1 where scalar s1", "fp32", "linear")], {}),
    "relubias": (ReluBias, lambda: (torch.randn(M, K),),
                 [("8x64x32", "relu(x + v1) where col v1", "fp32", "gemm")], {}),
    "scalegelu": (ScaleGelu, lambda: (torch.randn(M, K),),
                  [("8x64x32", "gelu(clamp((x + bias) * 0.5, -2, 2))", "fp32", "gemm")], {}),
    "groupnorm": (GroupNormSwish, lambda: (torch.randn(M, K),),
                  # x * sigmoid(x) after the norm is silu, which reads the norm's result once
                  [("8x64x32", "silu(silu(groupnorm(x + bias, 8) * v1 + v2) * v3) where col v1, col v2, col v3",
                    "fp32", "gemm")], {}),
    "batchnorm": (ScaleBatchNorm, lambda: (torch.randn(M, K),),
                  [("8x64x32", "batchnorm((x + bias) * v1) * v2 + v3 where col v1, col v2, col v3", "fp32", "gemm")],
                  {}),
    "dropout": (DropoutSoftmax, lambda: (torch.randn(M, K),),
                [("8x64x32", "x + bias", "fp32", "matmul")],
                {"dropout": "dropout(p=0.2) in training mode zeroes random elements"}),
    "logsumexp_mish": (LogsumexpMish, lambda: (torch.randn(M, K),),
                       # l * mish(l): the reduction written twice with the same argument, its value reused
                       [("8x64x32", "logsumexp(clamp((x + bias) * 2 * 2, -10, 10)) * "
                         "mish(logsumexp(clamp((x + bias) * 2 * 2, -10, 10)))", "fp32", "matmul")], {}),
    "sigmoid_residual": (SigmoidResidual, lambda: (torch.randn(M, K),),
                         [("8x64x32", "sigmoid(x + bias) * 2 + (x + bias)", "fp32", "gemm")], {}),
    "divide_sum": (DivideSum, lambda: (torch.randn(M, K),),
                   [("8x64x32", "rowsum(x / 2) * 1.5", "fp32", "")], {}),
    "pool_sum": (PoolSum, lambda: (torch.randn(M, K),),
                 [("8x64x32", "rowsum(maxpool(x + bias, 2)) * 0.5", "fp32", "matmul")], {}),
    "instancenorm": (InstanceNormResidual, lambda: (torch.randn(M, K), torch.randn(M, N)),
                     # a matrix read after an in-place normalization: the reduction pass reads it
                     [("8x64x32", "(groupnorm(x + bias, 1) + m1) * m1 where mat m1", "fp32", "bmm")], {}),
    "max_minus_mean": (MaxMinusMean, lambda: (torch.randn(M, K),),
                       # the mean of the [M, 1] max is the max: its value read twice
                       [("8x64x32", "gelu(rowmax(x + bias) - rowmax(x + bias))", "fp32", "gemm")], {}),
    "batchnorm_softmax": (BatchNormScaleSoftmax, lambda: (torch.randn(M, K),),
                          [("8x64x32", "softmax((batchnorm(x + bias) * v1 + v2) * s1) where scalar s1, col v1, col v2",
                            "fp32", "gemm")], {}),
    "weight_kn": (WeightKN, lambda: (torch.randn(M, K),),
                  [("8x64x32", "tanh(x)", "fp32", ""), ("8x64x32", "x + bias", "fp32", "")], {}),
    "residual_row": (ResidualRow, lambda: (torch.randn(M, K), torch.randn(M, N)),
                     [("8x64x32", "leaky_relu((x + bias) * r1, 0.1) + m1 where mat m1, row r1", "fp32", "fc")],
                     {}),
    "strided": (StridedInput, lambda: (torch.randn(K, M), torch.randn(N, M)),
                [("8x64x32", "x + bias + m1 where mat m1", "fp32", "fc")], {}),
    "names": (Names, lambda: (torch.randn(M, K),),
              [("8x64x32", "(x + bias) * v1 + v2 where col v1, col v2", "fp32", "fc")], {}),
    "bad_numbers": (BadNumbers, lambda: (torch.randn(M, K),), [("8x64x32", "relu(x + bias)", "fp32", "fc")],
                    {"mul": "the number 1e-40 is below float's normal range"}),
    "mlp": (MLP, lambda: (torch.randn(M, K),),
            [("8x64x32", "relu(x + bias)", "fp32", "network.0"), ("8x64x64", "relu(x + bias)", "fp32", "network.2"),
             ("8x16x64", "x + bias", "fp32", "network.4")], {}),
    "swiglu": (SwiGLU, lambda: (torch.randn(2, 4, K),),
               [("8x64x32", "silu(x) * x2", "fp32", "gate_proj"), ("8x32x64", "x + m1 where mat m1", "fp32", "down_proj")],
               {}),
    "geglu_bias": (GeGLUBias, lambda: (torch.randn(M, K),),
                   [("8x64x32", "gelu_tanh(x + b1) * (x2 + b2) where col b1, col b2", "fp32",
                     "w1")], {}),
    "minigpt": (MiniGPTBlock, lambda: (torch.randn(2, 16, K),),
                [("32x96x32", "x + bias", "fp32", "c_attn"), ("32x32x32", "x + bias + m1 where mat m1", "fp32",
                                                                 "c_proj"),
                 ("32x128x32", GELU_TANH, "fp32", "c_fc"), ("32x32x128", "x + bias + m1 where mat m1", "fp32",
                                                            "mlp_proj")],
                {"split": "'split' has no form", "matmul": "a product of two activations",
                 "layer_norm_1": "add, the epilogue's value before it, is also used by add_3"}),
    "lmhead": (LMHeadLSE, lambda: (torch.randn(M, K),),
               [("8x256x32", "logsumexp(x)", "fp32", "lm_head")], {}),
}


class TorchLayer(nn.Module):
    """A fused layer computed by torch: x W^T (and x W2^T), then the captured expression (expr.evaluate);
    what fuse() builds on the GPU, for comparing the rewritten graph with the model on the CPU."""

    def __init__(self, p, gm, **_):
        super().__init__()
        w = _tensor(gm, p.weight).detach()
        self.register_buffer("w", w.t() if p.weight_transposed else w)  # buffers, as FusedLinear's
        self.register_buffer("w2", _tensor(gm, p.weight2).detach() if p.gated else None)
        self.p = p
        self.scalars, self.vectors = {}, []
        if p.bias is not None and not p.gated:
            self.register_buffer("v_bias", _tensor(gm, p.bias).detach())
            self.vectors.append("bias")
        for b in p.bindings:
            if b.source == "attr" and b.kind != "mat":
                t = _tensor(gm, b.target).detach()
                if b.kind == "scalar":
                    self.scalars[b.name] = float(t.reshape(()))
                else:
                    self.register_buffer("v_" + b.name, t.reshape(-1))
                    self.vectors.append(b.name)
        self.calls = 0

    def forward(self, x, **operands):
        self.calls += 1
        if not x.is_contiguous() or not all(t.is_contiguous() for t in operands.values()):
            raise AssertionError("FusedLinear takes contiguous x and operands")
        p = self.p
        env = dict(self.scalars, **{name: getattr(self, "v_" + name) for name in self.vectors})
        for b in p.bindings:
            if b.name in operands:
                t = operands[b.name]
                self.check_shape(b, t, x)
                env[b.name] = t.reshape(*x.shape[:-1], 1) if b.kind == "row" else t
        y = x @ self.w.t()
        y2 = x @ self.w2.t() if self.w2 is not None else None
        out = evaluate(p.expr, y, y2, env)
        if any(n.op in ROW_ONE for n in _all(p.expr)):
            out = out.squeeze(-1)
        return out

    @staticmethod
    def check_shape(b, t, x):
        # FusedLinear's own rule for operands given per call
        want = {"row": (math.prod(x.shape[:-1]),), "mat": None, "col": None}[b.kind]
        if want is not None and tuple(t.shape) != want:
            raise AssertionError(f"{b.name} of shape {tuple(t.shape)}, FusedLinear wants {want}")


class _AsCuda:
    """A CPU tensor as the fp8 layer's device checks see a CUDA one (test_fp8_layers_through_fuse)."""

    def __init__(self, t):
        self._t, self.device = t, types.SimpleNamespace(type="cuda", index=t.device.index)

    def __getattr__(self, name):
        return getattr(self._t, name)


def library_loads():
    try:
        fusedtune.library_path
        return True
    except fusedtune.LibraryNotFound:
        return False


class CaptureCpuTest(unittest.TestCase):
    def run_case(self, name):
        cls, inputs, want, left = CASES[name]
        torch.manual_seed(0)
        model, args = cls(), inputs()
        found = problems(model, *args)
        got = [(p.shape, p.epilogue, p.mode, p.where) for p in found]
        self.assertEqual(got, want, f"{name}:\n{found}")
        for node, fragment in left.items():
            reasons = [x.reason for x in found.left if x.node == node]
            self.assertTrue(reasons and fragment in reasons[0], f"{name}: {node}: {reasons}\n{found}")
        return model, args, found

    def test_problem_lists(self):
        for name in CASES:
            with self.subTest(name):
                self.run_case(name)

    def test_reduction_reused(self):
        # A reduction written twice with the same argument is one, its value reused; two different
        # ones stay refused in one line naming both (the library's rule, docs/EPILOGUE.md).
        from fusedtune.torch import expr as E
        lse = lambda: E.call("logsumexp", E.X + E.param("bias"))  # noqa: E731
        self.assertIsNone(E.check(lse() * E.call("mish", lse()), {"bias": "col"}))
        self.assertIsNone(E.check(E.call("rowsum", E.call("maxpool", E.X, 2) * E.call("maxpool", E.X, 2)), {}))
        self.assertEqual(E.check(E.call("rowmax", E.X) - E.call("rowmean", E.X), {}),
                         "a second reduction 'rowmean' (the first is 'rowmax'): an epilogue holds one reduction")
        self.assertEqual(E.check(E.call("logsumexp", E.X) * E.call("logsumexp", E.X * 2), {}),
                         "a second 'logsumexp' with another argument: an epilogue holds one reduction")
        # a matrix goes where a col vector may: not after a one-value reduction or a pool
        r = E.param("r")
        self.assertIsNone(E.check((E.call("groupnorm", E.X + E.param("bias"), 1) + r) * r, {"bias": "col", "r": "mat"}))
        self.assertIsNone(E.check(E.call("rowsum", E.X * r), {"r": "mat"}))
        self.assertEqual(E.check(E.call("rowsum", E.X) + r, {"r": "mat"}),
                         "'r' is a matrix ([M, N]) but meets the [M] result of 'rowsum'")
        self.assertEqual(E.check(E.call("maxpool", E.X, 2) * r, {"r": "mat"}),
                         "'r' is a matrix ([M, N]) but meets the pooled result of 'maxpool'")
        # softmax of batchnorm's values is served (the pass's column-then-row form), a one-value
        # reduction of them not yet: capture leaves that in PyTorch
        self.assertIsNone(E.check(E.call("softmax", E.call("batchnorm", E.X) * 2), {}))
        self.assertEqual(E.check(E.call("logsumexp", E.call("batchnorm", E.X)), {}),
                         "no kernel serves 'logsumexp' of 'batchnorm' yet")
        x = torch.randn(3, 5)
        got = E.evaluate(lse() * E.call("mish", lse()), x, params={"bias": torch.ones(5)})
        want = torch.logsumexp(x + 1, dim=-1, keepdim=True)
        torch.testing.assert_close(got, want * F.mish(want))
        if library_loads():
            text = E.epilogue_text(lse() * E.call("mish", lse()), {"bias": "col"})
            self.assertEqual(fusedtune.inspect_epilogue(text).canonical, text)

    def test_epilogues_parse(self):
        # Each captured text is the library's canonical form of itself (capture writes it without
        # the library); its parameters are the bindings (and bias) capture names.
        if not library_loads():
            self.skipTest("no libfusedtune")
        for name in CASES:
            _, _, found = self.run_case(name)
            for p in found:
                ep = fusedtune.inspect_epilogue(p.epilogue)
                self.assertEqual(ep.canonical, p.epilogue, name)
                names = {q.name: q.kind for q in ep.params}
                want = {b.name: b.kind for b in p.bindings}
                if p.bias is not None and not p.gated:
                    want["bias"] = "col"
                self.assertEqual(names, want, name)
                fusedtune.Problem(p.m, p.n, p.k, p.epilogue, p.mode).check()

    def test_fused_graph_equals_model(self):
        # The rewritten graph, each fused layer computed by torch from the captured expression, gives
        # the model's outputs: the capture states each op's meaning and fuse wires the operands.
        for name in CASES:
            with self.subTest(name):
                model, args, found = self.run_case(name)
                torch.manual_seed(1)
                with torch.no_grad():
                    want = model(*args)
                fused = fuse(model, *args, _layer_for=TorchLayer)
                layers = [m for m in fused.modules() if isinstance(m, TorchLayer)]
                self.assertEqual(len(layers), len(found))
                torch.manual_seed(1)
                with torch.no_grad():
                    got = fused(*args)
                self.assertTrue(all(m.calls == 1 for m in layers))
                for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
                    self.assertEqual(g.shape, w.shape, name)
                    torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-5, msg=name)
                # the GEMMs served by the layers are gone from the graph
                left_gemms = [n for n in fused.graph.nodes if n.op == "call_function" and
                              str(n.target) in ("aten.linear.default", "aten.addmm.default")]
                self.assertEqual(left_gemms, [], name)

    def test_layers_construct(self):
        # Each captured problem makes its FusedLinear (from_linear or from_gated, the bindings as
        # params) on CPU tensors: names, kinds and shapes the layer accepts; no database is opened.
        if not library_loads():
            self.skipTest("no libfusedtune")
        from fusedtune.torch import FusedLinear
        from fusedtune.torch.fuse import layer_for
        for name in CASES:
            _, _, found = self.run_case(name)
            for p in found:
                layer = layer_for(p, found.graph, db=os.path.join(tempfile.gettempdir(), "never-opened.db"))
                self.assertIsInstance(layer, FusedLinear, name)
                self.assertEqual(layer.epilogue.canonical, p.epilogue, name)
                self.assertEqual((layer.in_features, layer.out_features), (p.k, p.n), name)
                self.assertEqual(tuple(layer.weight.shape), (2 * p.n if p.gated else p.n, p.k), name)

    def test_backend(self):
        # torch.compile(model, backend=backend(...)): Dynamo's graph (its parameters as inputs) fused,
        # then Inductor (or not); the layers computed by torch give the model's outputs.
        from fusedtune.torch import backend
        for name, inductor in (("minsub", True), ("swiglu", False), ("minigpt", False)):
            torch._dynamo.reset()
            model, args, found = self.run_case(name)
            with torch.no_grad():
                want = model(*args)
                got = torch.compile(model, backend=backend(inductor=inductor, _layer_for=TorchLayer))(*args)
            torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5, msg=name)
        # Dynamo's graph holds what fuse() found in the model
        torch._dynamo.reset()
        seen = []
        inner = backend(inductor=False, _layer_for=TorchLayer)

        def spy(gm, inputs):
            call = inner(gm, inputs)
            seen.append([(p.shape, p.epilogue) for p in call.fused.fused])
            return call
        with torch.no_grad():
            torch.compile(SwiGLU(), backend=spy)(torch.randn(2, 4, K))
        # the same problems, the same keys, as problems() and fuse() give
        self.assertEqual(seen, [[("8x64x32", "silu(x) * x2"), ("8x32x64", "x + m1 where mat m1")]])
        # torch.compile's dynamic shapes (sizes as inputs): left to Inductor unfused, with a warning
        from fusedtune.torch.backend import FusedNotApplied
        torch._dynamo.reset()
        model, x = MinSub(), torch.randn(M, K)
        with self.assertWarns(FusedNotApplied), torch.no_grad():
            got = torch.compile(model, backend=backend(inductor=False, _layer_for=TorchLayer), dynamic=True)(x)
        torch.testing.assert_close(got, model(x).detach())
        # the real layers: a model on the CPU is refused with fuse's message
        torch._dynamo.reset()
        with self.assertRaises(Exception) as cm:
            with torch.no_grad():
                torch.compile(MinSub(), backend=backend())(torch.randn(M, K))
        self.assertIn("is on cpu: fusedtune's kernels run on CUDA devices", str(cm.exception))

    def test_layer_traced_by_inductor(self):
        # Inductor's compile_fx traces a graph calling a FusedLinear with fake tensors (the backend's
        # path): the layer becomes its op fusedtune::linear, which on CPU tensors refuses at run time.
        if not library_loads():
            self.skipTest("no libfusedtune")
        from torch._inductor.compile_fx import compile_fx
        from fusedtune.torch import FusedLinear

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = FusedLinear(K, N, epilogue="relu(x + bias)")

            def forward(self, x):
                return self.layer(x) * 2

        class Leaf(torch.fx.Tracer):
            def is_leaf_module(self, m, name):
                return isinstance(m, FusedLinear) or super().is_leaf_module(m, name)
        block = Block()
        gm = torch.fx.GraphModule(block, Leaf().trace(block))
        with torch.no_grad():
            compiled = compile_fx(gm, [torch.randn(M, K)])
            with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
                compiled(torch.randn(M, K))
        self.assertIn("is on cpu", str(cm.exception))  # the layer's checks name the tensor
        self.assertIn("FusedLinear runs on CUDA tensors", str(cm.exception))

    def test_eval_batchnorm_and_dropout(self):
        # eval(): BatchNorm1d with its running statistics written out, Dropout an identity.
        model = ScaleBatchNorm()
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
        model.eval()
        x = torch.randn(M, K)
        found = problems(model, x)
        self.assertEqual([p.epilogue for p in found], [
            "((x + bias) * v1 - v2) / sqrt(v3 + 1e-5) * v4 + v5 where col v1, col v2, col v3, col v4, col v5"])
        with torch.no_grad():
            torch.testing.assert_close(fuse(model, x, _layer_for=TorchLayer)(x), model(x), rtol=2e-5, atol=2e-5)
        drop = DropoutSoftmax().eval()
        self.assertEqual([p.epilogue for p in problems(drop, x)], ["softmax(x + bias)"])
        self.assertEqual([p.epilogue for p in problems(DropoutSoftmax(p=0.0), x)], ["softmax(x + bias)"])
        self.assertIn("does not update running_mean", problems(ScaleBatchNorm(), x)[0].notes[0])

    def test_modes_and_ranges(self):
        model, x = MinSub(), torch.randn(M, K)
        self.assertEqual(problems(model.to(torch.bfloat16), x.to(torch.bfloat16))[0].mode, "bf16")
        self.assertEqual(problems(MinSub().half(), x.half())[0].mode, "fp16")
        self.assertEqual(problems(MinSub(), x, math="3xtf32")[0].mode, "3xtf32")
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            problems(MinSub(), x, math="bf16")
        self.assertIn("math='bf16' on float32 tensors", str(cm.exception))
        found = problems(MinSub(), x, m_range=(1, 4096))
        self.assertEqual(found[0].shape, "1..4096x64x32")
        with self.assertRaises(fusedtune.InvalidArgumentError):
            problems(MinSub(), x, m_range=(8, 2))
        left = problems(MinSub().double(), x.double()).left
        self.assertIn("fusedtune's modes take float32, bfloat16 and float16", left[0].reason)
        # an upcast after the LM head: E in fp32, the result converted
        lm = LMHeadLSE().to(torch.bfloat16)

        class Up(nn.Module):
            def __init__(self):
                super().__init__()
                self.lm_head = lm.lm_head

            def forward(self, h):
                return torch.logsumexp(self.lm_head(h).float(), dim=-1)
        found = problems(Up(), x.to(torch.bfloat16))
        self.assertEqual([(p.epilogue, p.mode) for p in found], [("logsumexp(x)", "bf16")])
        self.assertIn("converted to float32 after", found[0].notes[0])

    def test_fp8(self):
        # math="fp8" on a bf16 model: the fp8 problem (E with x * sx * sw, ft_fp8_epilogue's form)
        # where the fp8 layer serves E (its bias only, x once, no reduction), bf16 with a note elsewhere.
        bf = torch.bfloat16
        found = problems(MLP().to(bf), torch.randn(M, K, dtype=bf), math="fp8")
        self.assertEqual([(p.epilogue, p.mode, p.layer_epilogue) for p in found],
                         [("relu(x * sx * sw + bias) where col sw, row sx", "fp8", "relu(x + bias)")] * 2 +
                         [("x * sx * sw + bias where col sw, row sx", "fp8", "x + bias")])
        self.assertEqual(found.to_problems_file().splitlines()[1], '8x64x32,"relu(x * sx * sw + bias) where col sw, '
                                                                    'row sx",fp8')
        if library_loads():
            from fusedtune.fp8 import fp8_epilogue
            for p in found:
                self.assertEqual(fusedtune.inspect_epilogue(fp8_epilogue(p.layer_epilogue)).canonical, p.epilogue)
        # E's own parameters, a residual matrix, a gated pair (x2 by sx and its weight's sw2) with biases
        for model, args, want in (
                (MinSub, (torch.randn(M, K, dtype=bf),), ["min(x * sx * sw + bias, s1) - s1 where scalar s1, col sw, "
                                                          "row sx"]),
                (SwiGLU, (torch.randn(2, 4, K, dtype=bf),), ["silu(x * sx * sw) * (x2 * sx * sw2) where col sw, col "
                                                             "sw2, row sx",
                                                             "x * sx * sw + m1 where mat m1, col sw, row sx"]),
                (GeGLUBias, (torch.randn(M, K, dtype=bf),), ["gelu_tanh(x * sx * sw + b1) * (x2 * sx * sw2 + b2) where "
                                                             "col b1, col b2, col sw, col sw2, row sx"])):
            found = problems(model().to(bf), *args, math="fp8")
            self.assertEqual([(p.epilogue, p.mode) for p in found], [(w, "fp8") for w in want], model.__name__)
            if library_loads():
                from fusedtune.fp8 import fp8_epilogue
                for p in found:
                    self.assertEqual(fusedtune.inspect_epilogue(fp8_epilogue(p.layer_epilogue)).canonical, p.epilogue)
        # what ft_fp8_epilogue has no form for stays bf16, a note saying why
        for model, why in ((SigmoidResidual, "x read more than once"), (LMHeadLSE, "a reduction")):
            other = problems(model().to(bf), torch.randn(M, K, dtype=bf), math="fp8")[0]
            self.assertEqual(other.mode, "bf16")
            self.assertIn(f"fp8 does not serve this layer ({why})", other.notes[-1])
        with self.assertRaises(fusedtune.InvalidArgumentError):
            problems(MinSub(), torch.randn(M, K), math="fp8")  # fp8 is a bf16 model's mode

    def test_fp8_layers_through_fuse(self):
        # fuse(..., tolerance=T) where fp8 wins (_modes_within), and fuse(math="fp8"), for gated pairs
        # (one with biases) and residuals: layer_for makes each FP8Linear from E before its scales
        # (the review of d40d225: the gated branch passed the fp8 text, which fp8_epilogue refused, a
        # ParseError), b1 and b2 held in fp32, a row vector the graph computes converted to fp32 per
        # call, the matrix left bf16. The GPU parts faked: CPU tensors pass the layer's device checks,
        # torch quantizes the weights, the database's lookup_within answers fp8.
        if not library_loads():
            self.skipTest("no libfusedtune")
        from fusedtune import fp8
        from fusedtune.torch.fuse import _modes_within, layer_for
        bf = torch.bfloat16
        real_check = fp8.check_tensor

        def quantize(db, weights):
            out = []
            for w in weights:
                s = w.float().abs().amax(dim=1).clamp(min=1e-30) / 448
                out.append(((w.float() / s[:, None]).to(torch.float8_e4m3fn), s))
            return out
        saved = fp8.check_tensor, fp8._bf16_weights, fp8._quantize_weights
        fp8.check_tensor = lambda name, t, **kw: real_check(name, _AsCuda(t), **kw)
        fp8._bf16_weights = lambda where, layers: [lin.weight.detach().contiguous() for lin in layers.values()]
        fp8._quantize_weights = quantize
        d = tempfile.TemporaryDirectory()
        db = fusedtune.Database(os.path.join(d.name, "fp8.db"), create=True)
        db.lookup_within = lambda problem, tolerance: types.SimpleNamespace(math="fp8")
        try:
            for cls, args in ((SwiGLU, (torch.randn(2, 4, K, dtype=bf),)), (GeGLUBias, (torch.randn(M, K, dtype=bf),)),
                              (ResidualRow, (torch.randn(M, K, dtype=bf), torch.randn(M, N, dtype=bf)))):
                model = cls().to(bf)
                found = _modes_within(problems(model, *args), db, 0.05)
                self.assertEqual({p.mode for p in found}, {"fp8"})
                for p in found:
                    layer = layer_for(p, found.graph, db=db)
                    self.assertIsInstance(layer, fp8.FP8Linear, cls.__name__)
                    self.assertEqual(layer.epilogue.canonical, p.epilogue, cls.__name__)
                    if not p.gated:
                        continue
                    # the pair's codes interleaved, sw the gate's scales and sw2 the up weight's
                    w, w2 = (_tensor(found.graph, t).detach() for t in (p.weight, p.weight2))
                    (q1, s1), (q2, s2) = quantize(None, [w, w2])
                    self.assertEqual(tuple(layer.weight.shape), (2 * p.n, p.k))
                    self.assertTrue(torch.equal(layer.weight[8:16].view(torch.uint8), q2[:8].view(torch.uint8)))
                    self.assertTrue(torch.equal(layer.weight_scale, s1) and torch.equal(layer.weight_scale2, s2))
                    for b in ("b1", "b2") if cls is GeGLUBias else ():
                        t = _tensor(found.graph, next(x.target for x in p.bindings if x.name == b))
                        self.assertEqual(getattr(layer, b).dtype, torch.float32)
                        self.assertTrue(torch.equal(getattr(layer, b), t.detach().float()))
                fused = fuse(model, *args, math="fp8", db=db, floor=False, _layer_for=layer_for)
                calls = [n for n in fused.graph.nodes if n.op == "call_module" and n.target.startswith("fused")]
                self.assertEqual(len(calls), len(found), cls.__name__)
                for n in calls:
                    self.assertIsInstance(fused.get_submodule(n.target), fp8.FP8Linear)
                if cls is ResidualRow:
                    (n,) = calls
                    self.assertEqual((n.kwargs["r1"].target, n.kwargs["r1"].kwargs), (torch.ops.aten._to_copy.default,
                                                                                       {"dtype": torch.float32}))
                    self.assertNotEqual(n.kwargs["m1"].target, torch.ops.aten._to_copy.default)
        finally:
            fp8.check_tensor, fp8._bf16_weights, fp8._quantize_weights = saved
            db.close()
            d.cleanup()

    def test_problems_file(self):
        _, _, found = self.run_case("mlp")
        csv_text = found.to_problems_file()
        self.assertEqual(csv_text, "shape,epilogue,math\n8x64x32,relu(x + bias),fp32\n8x64x64,relu(x + bias),fp32\n"
                                   "8x16x64,x + bias,fp32\n")
        deep = problems(MLP((K, 64, 64, 64, 64, 16)), torch.randn(M, K))
        self.assertEqual(len(deep), 5)
        self.assertEqual(len(deep.unique()), 3)  # the same layer three times is tuned once
        _, _, gpt = self.run_case("minigpt")
        with tempfile.TemporaryDirectory() as d:
            for suffix in ("csv", "json"):
                path = os.path.join(d, "layers." + suffix)
                gpt.to_problems_file(path)
                if suffix == "json":
                    self.assertEqual(json.load(open(path))[0], {"shape": "32x96x32", "epilogue": "x + bias",
                                                                "math": "fp32"})
                if library_loads():
                    items = load_problems(path)
                    self.assertEqual([(i.problem.shape, i.problem.epilogue) for i in items],
                                     [(p.shape, p.epilogue) for p in gpt.unique()])
        text = str(gpt)
        self.assertIn("4 GEMMs captured in 4 layers, 4 problems to tune", text)
        self.assertIn("matmul (matmul", text)
        self.assertIn("mat m1 = node add", text)

    def test_tune_on_a_cluster_writes_the_problem_file(self):
        # tune(scheduler=...) hands the problem file to python3 -m fusedtune.cluster tune (its own
        # tests run it on a real Dask cluster); here its command line and file, cluster.main recorded.
        from fusedtune import cluster
        from fusedtune.torch import tune
        seen = []

        def main(argv):
            with open(argv[argv.index("--problems") + 1]) as f:
                seen.append((argv, f.read()))
            return 0
        saved, cluster.main = cluster.main, main
        try:
            tune(MLP(), torch.randn(M, K), db="out.db", scheduler="tcp://h:8786", budget_s=30, max_candidates=4)
            with self.assertRaises(fusedtune.InvalidArgumentError):
                tune(MLP(), torch.randn(M, K), db="out.db", scheduler="local", worker="w")
            cluster.main = lambda argv: 1
            with self.assertRaises(fusedtune.FusedtuneError):
                tune(MLP(), torch.randn(M, K), db="out.db", scheduler="local")
        finally:
            cluster.main = saved
        argv, text = seen[0]
        self.assertEqual(argv[:2], ["tune", "--problems"])
        self.assertEqual(argv[3:], ["--db", "out.db", "--scheduler", "tcp://h:8786", "--budget", "30",
                                    "--max-candidates", "4"])
        self.assertEqual(text.splitlines()[1:], ["8x64x32,relu(x + bias),fp32", "8x64x64,relu(x + bias),fp32",
                                                 "8x16x64,x + bias,fp32"])

    def test_dynamic_batch(self):
        # fuse(..., dynamic=True): the first dimension of the inputs changes from call to call; the
        # fused graph (layers computed by torch) gives the model's outputs at each.
        for name in ("minsub", "logsumexp_mish", "residual_row", "instancenorm", "pool_sum", "swiglu", "minigpt",
                     "batchnorm"):
            with self.subTest(name):
                model, args, found = self.run_case(name)
                fused = fuse(model, *args, dynamic=True, _layer_for=TorchLayer)
                for rows in (1 if name != "batchnorm" else 2, 3, 12):
                    new = tuple(torch.randn(rows, *a.shape[1:]) for a in args)
                    with torch.no_grad():
                        want, got = model(*new), fused(*new)
                    self.assertEqual(got.shape, want.shape, f"{name} at {rows}")
                    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5, msg=f"{name} at {rows}")
        # only the first dimension: a model whose rows are another one keeps them
        model, args, _ = self.run_case("strided")
        fused = fuse(model, *args, dynamic=True, _layer_for=TorchLayer)
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fused(torch.randn(K, 3), torch.randn(N, 3))
        self.assertIn("input 0 has shape [32, 3], the example's was [*, 8]", str(cm.exception))

    def test_fused_model_calls_plainly(self):
        # torch.export's per-call wrapping (pytree flattening, the nn.Module-input hooks) is taken out
        # where the inputs are positional and the result a tensor or a tuple of tensors; the outputs
        # stay the model's (test_fused_graph_equals_model runs every case).
        class TwoOutputs(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(K, N)

            def forward(self, x):
                return torch.relu(self.fc(x)) / 2, x * 2

        two = (TwoOutputs(), (torch.randn(M, K),))
        for name, tuple_out in (("strided", False), ("two outputs", True)):
            with self.subTest(name):
                model, args = two if tuple_out else self.run_case(name)[:2]
                with torch.no_grad():
                    want = model(*args)
                fused = fuse(model, *args, _layer_for=TorchLayer)
                self.assertNotIn("tree_flatten", fused.code)
                self.assertNotIn("tree_unflatten", fused.code)
                self.assertEqual(len(fused._forward_hooks), 0)
                self.assertFalse(any("_create_stateful_graph_module" in getattr(h, "__qualname__", "")
                                     for h in fused._forward_pre_hooks.values()))
                with torch.no_grad():
                    got = fused(*args)
                self.assertEqual(isinstance(got, tuple), tuple_out)
                for w, g in zip(want if tuple_out else (want,), got if tuple_out else (got,)):
                    torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-5)

    def test_fused_model_keeps_the_example_shapes(self):
        # fuse() specializes to the example's shapes (torch.export's); another is refused in one line,
        # by fuse's own check (torch.export's slower checks are taken out).
        fused = fuse(MinSub(), torch.randn(M, K), _layer_for=TorchLayer)
        self.assertFalse(any(n.op == "call_module" and n.target == "_guards_fn" for n in fused.graph.nodes))
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fused(torch.randn(M + 1, K))
        self.assertIn("input 0 has shape [9, 32], the example's was [8, 32]", str(cm.exception))

    def test_fuse_floor_leaves_a_slower_layer_to_torch(self):
        # A layer whose stored best was timed slower than the eager-style chain beside it stays in
        # PyTorch (with a FloorWarning and a reason); within 1 %, or with floor=False, it is fused.
        class Timed(TorchLayer):
            times = {}

            def plan_for(self, m):
                self.m_asked = m
                best, eager = Timed.times[self.p.epilogue]
                return types.SimpleNamespace(config=types.SimpleNamespace(name="red_b256_v4", median_ms=best,
                                                                          eager_ms=eager))

        x = torch.randn(M, K)
        model = MinSub()
        eptext = fusedtune.torch.problems(model, x)[0].epilogue
        for (best, eager), fused_n in (((0.0125, 0.0120), 0), ((0.0121, 0.0120), 1), ((0.0100, 0.0120), 1),
                                       ((0.0125, 0.0), 1)):
            Timed.times = {eptext: (best, eager)}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fused = fuse(model, x, _layer_for=Timed)
            floor_warnings = [w for w in caught if issubclass(w.category, fusedtune.torch.FloorWarning)]
            self.assertEqual(len(fused.fused), fused_n, (best, eager))
            self.assertEqual(len(fused.left_to_torch), 1 - fused_n)
            self.assertEqual(len(floor_warnings), 1 - fused_n)
            if not fused_n:
                self.assertIn("was measured slower than the eager-style chain beside it (0.0120 ms): left to PyTorch",
                              fused.left_to_torch[0][1])
                self.assertIn("left to PyTorch", str(floor_warnings[0].message))
                self.assertFalse(any(n.op == "call_module" and n.target.startswith("fused") for n in fused.graph.nodes))
                self.assertIn("left to PyTorch", str(fused.fused.left[-1]))
            torch.testing.assert_close(fused(x), model(x), rtol=2e-5, atol=2e-5)
        Timed.times = {eptext: (0.0125, 0.0120)}
        self.assertEqual(len(fuse(model, x, floor=False, _layer_for=Timed).fused), 1)

    def test_fuse_tolerance_takes_no_fixed_mode(self):
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fuse(MinSub(), torch.randn(M, K), math="tf32", tolerance=1e-4, _layer_for=TorchLayer)
        self.assertIn("tolerance picks each layer's mode", str(cm.exception))

    def test_fuse_refuses_cpu(self):
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fuse(MinSub(), torch.randn(M, K))
        self.assertIn("is on cpu: fusedtune's kernels run on CUDA devices", str(cm.exception))

    def test_export_failure_is_one_error(self):
        class Branchy(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(K, N)

            def forward(self, x):
                return self.fc(x) if float(x.sum()) > 0 else -self.fc(x)  # data-dependent Python branch
        with self.assertRaises(fusedtune.UnsupportedError) as cm:
            problems(Branchy(), torch.randn(M, K))
        self.assertIn("torch.export could not trace Branchy", str(cm.exception))

    def test_capture_without_library(self):
        # capture neither loads libfusedtune nor needs a GPU
        code = ("import torch, sys; sys.path.insert(0, %r)\n"
                "from fusedtune.torch import problems\n"
                "import fusedtune._lib as L\n"
                "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU())\n"
                "print([p.epilogue for p in problems(m, torch.randn(4, 8))], L._lib is None)\n" % PYDIR)
        env = dict(os.environ, FUSEDTUNE_LIBRARY="/nonexistent/libfusedtune.so.0", CUDA_VISIBLE_DEVICES="")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip().splitlines()[-1], "['gelu(x + bias)'] True")


if __name__ == "__main__":
    unittest.main(verbosity=2)
