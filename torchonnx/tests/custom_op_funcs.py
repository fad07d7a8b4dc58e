"""Python functions that the custom-op tests declare for their models' custom ops
(custom_op_test.py): plain tensor code, so vmap and auto_LiRPA-free tracing work on them."""

import torch


def scale_shift(x, shift, scale=1.0, mode="plain"):
    """x * scale + shift, then tanh when mode is "tanh"."""
    y = x * scale + shift
    return torch.tanh(y) if mode == "tanh" else y


def halves(x, factors=(1.0, 1.0)):
    """The two halves of x's last dim, each times its factor."""
    a, b = torch.chunk(x, 2, dim=-1)
    return a * factors[0], b * factors[1]


def relu_of_constant(c):
    """Named like ONNX's Relu, computing something else: 1 - c."""
    return 1 - c
