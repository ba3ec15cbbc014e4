"""An LM head with cross-entropy's normalizer: logsumexp over the vocabulary of h W^T, 8192 tokens x
128256 (Llama 3's vocabulary) x 4096. Written as a KernelBench problem (Model, get_inputs,
get_init_inputs), nothing fusedtune-specific: issue 54's acceptance set, timed by
bench/python/bench_kernelbench.py."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size, vocab_size):
        super().__init__()
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, h):
        return torch.logsumexp(self.lm_head(h), dim=-1)


tokens = 8192
hidden_size = 4096
vocab_size = 128256


def get_inputs():
    return [torch.randn(tokens, hidden_size)]


def get_init_inputs():
    return [hidden_size, vocab_size]
