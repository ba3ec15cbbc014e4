"""A Llama-style MLP block (SwiGLU 4096 -> 14336 -> 4096 with its residual), decode: 16 tokens.
Written as a KernelBench problem (Model, get_inputs, get_init_inputs) and as Llama's authors write
it, with nothing fusedtune-specific: issue 54's acceptance set, timed by bench/python/bench_kernelbench.py."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x):
        return x + self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


tokens = 16
hidden_size = 4096
intermediate_size = 14336


def get_inputs():
    return [torch.randn(tokens, hidden_size)]


def get_init_inputs():
    return [hidden_size, intermediate_size]
