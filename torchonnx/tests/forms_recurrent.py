"""RNN, GRU and LSTM cases for forms_test.py: every attribute form, with expected outputs from a
step-by-step float64 evaluation of ONNX's equations (one batch entry and time step at a time)."""

import numpy as np
from onnx import helper

from forms_cases import make_case


ACTIVATIONS = {
    "Sigmoid": lambda x, a, b: 1 / (1 + np.exp(-x)),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Relu": lambda x, a, b: np.maximum(x, 0),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "Softsign": lambda x, a, b: x / (1 + np.abs(x)),
    "Elu": lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1)),
}
ACTIVATION_DEFAULTS = {"HardSigmoid": (0.2, 0.5), "LeakyRelu": (0.01, 0.0), "Elu": (1.0, 0.0)}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def recurrent_ref(op, x, w, r, b, lens, h0, c0, p, hidden, direction="forward", acts=None, clip=None,
                  linear_before_reset=0, input_forget=0, layout=0):
    """Y, Y_h (and Y_c for LSTM) of ONNX's RNN/GRU/LSTM, one batch entry and time step at a time, in
    float64. acts: [(name, alpha, beta)] for all directions."""
    dirs = 2 if direction == "bidirectional" else 1
    acts = acts or [(n, *ACTIVATION_DEFAULTS.get(n, (0.0, 0.0))) for n in DEFAULT_ACTIVATIONS[op]] * dirs
    per_dir = len(acts) // dirs
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    g = GATES[op]
    b = np.zeros((dirs, 2 * g * hidden)) if b is None else b.astype(np.float64)
    y = np.zeros((steps, dirs, batch, hidden))
    y_h, y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))

    def gate(k, d, xt, h, c_term=0.0):
        rows = slice(k * hidden, (k + 1) * hidden)
        return (w[d][rows] @ xt + r[d][rows] @ h + b[d][rows] + b[d][g * hidden:][rows] + c_term)

    for d in range(dirs):
        fn = [(lambda v, a=a: ACTIVATIONS[a[0]](v if clip is None else np.clip(v, -clip, clip), a[1], a[2]))
              for a in acts[d * per_dir:(d + 1) * per_dir]]
        reverse = direction == "reverse" or d == 1
        for n in range(batch):
            length = steps if lens is None else int(lens[n])
            h = np.zeros(hidden) if h0 is None else h0[d, n].astype(np.float64)
            c = np.zeros(hidden) if c0 is None else c0[d, n].astype(np.float64)
            for t in (range(length - 1, -1, -1) if reverse else range(length)):
                xt = x[t, n].astype(np.float64)
                if op == "RNN":
                    h = fn[0](gate(0, d, xt, h))
                elif op == "GRU":
                    z, rr = fn[0](gate(0, d, xt, h)), fn[0](gate(1, d, xt, h))
                    rows = slice(2 * hidden, 3 * hidden)
                    wb, rb = b[d][rows], b[d][g * hidden:][rows]
                    if linear_before_reset:
                        pre = w[d][rows] @ xt + wb + rr * (r[d][rows] @ h + rb)
                    else:
                        pre = w[d][rows] @ xt + wb + r[d][rows] @ (rr * h) + rb
                    h = (1 - z) * fn[1](pre) + z * h
                else:
                    pi, po, pf = (np.zeros(hidden),) * 3 if p is None else np.split(p[d].astype(np.float64), 3)
                    i = fn[0](gate(0, d, xt, h, pi * c))
                    f = 1 - i if input_forget else fn[0](gate(2, d, xt, h, pf * c))
                    c = f * c + i * fn[1](gate(3, d, xt, h))
                    o = fn[0](gate(1, d, xt, h, po * c))
                    h = o * fn[2](c)
                y[t, d, n] = h
            y_h[d, n], y_c[d, n] = h, c
    if layout:
        y, y_h, y_c = y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)
    outs = [y, y_h] + ([y_c] if op == "LSTM" else [])
    return [o.astype(np.float32) for o in outs]


def recurrent_case(name, rng, op, steps=4, batch=3, inputs=2, hidden=3, direction="forward", acts=None,
                   clip=None, linear_before_reset=None, input_forget=None, layout=0, bias=True, lens=None,
                   h0=False, c0=False, peepholes=False):
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x = rng.uniform(-1, 1, (batch, steps, inputs) if layout else (steps, batch, inputs)).astype(np.float32)
    w = rng.uniform(-0.8, 0.8, (dirs, g * hidden, inputs)).astype(np.float32)
    r = rng.uniform(-0.8, 0.8, (dirs, g * hidden, hidden)).astype(np.float32)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    arrays = {"W": w, "R": r,
              "B": rng.uniform(-0.5, 0.5, (dirs, 2 * g * hidden)).astype(np.float32) if bias else None,
              "sequence_lens": None if lens is None else np.array(lens, np.int32),
              "initial_h": rng.uniform(-1, 1, state).astype(np.float32) if h0 else None,
              "initial_c": rng.uniform(-1, 1, state).astype(np.float32) if c0 else None,
              "P": rng.uniform(-0.5, 0.5, (dirs, 3 * hidden)).astype(np.float32) if peepholes else None}
    order = ["W", "R", "B", "sequence_lens", "initial_h"] + (["initial_c", "P"] if op == "LSTM" else [])
    attrs = {"hidden_size": hidden, "direction": direction}
    if acts:
        # alpha and beta lists hold values only for the functions that take them, in order (as
        # onnxruntime reads them).
        attrs["activations"] = [a[0] for a in acts]
        alphas = [a[1] for a in acts if a[0] in ACTIVATION_DEFAULTS]
        betas = [a[2] for a in acts if a[0] == "HardSigmoid"]
        if alphas:
            attrs["activation_alpha"] = alphas
        if betas:
            attrs["activation_beta"] = betas
    if clip is not None:
        attrs["clip"] = clip
    if linear_before_reset is not None:
        attrs["linear_before_reset"] = linear_before_reset
    if input_forget is not None:
        attrs["input_forget"] = input_forget
    if layout:
        attrs["layout"] = layout
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, ["X"] + [k if arrays[k] is not None else "" for k in order], outputs, **attrs)
    while node.input[-1] == "":
        node.input.pop()
    expected = recurrent_ref(op, x, w, r, arrays["B"], arrays["sequence_lens"], arrays["initial_h"],
                             arrays["initial_c"], arrays["P"], hidden, direction, acts, clip,
                             linear_before_reset or 0, input_forget or 0, layout)
    inits = [(k, arrays[k]) for k in order if arrays[k] is not None]
    return make_case(name, node, [("X", x)], list(zip(outputs, expected)), inits, opset=14)


def recurrent():
    rng = np.random.default_rng(7)
    return [
        recurrent_case("rnn_default_h0", rng, "RNN", h0=True),
        recurrent_case("rnn_bidirectional_relu", rng, "RNN", direction="bidirectional",
                       acts=[("Relu", 0.0, 0.0)] * 2),
        recurrent_case("rnn_reverse_lens", rng, "RNN", direction="reverse", lens=[4, 1, 2], h0=True),
        recurrent_case("rnn_leaky_clip_layout1", rng, "RNN", acts=[("LeakyRelu", 0.1, 0.0)], clip=0.6,
                       layout=1),
        recurrent_case("gru_lbr1", rng, "GRU", linear_before_reset=1, h0=True),
        recurrent_case("gru_lbr0_bidirectional", rng, "GRU", direction="bidirectional"),
        recurrent_case("gru_lbr0_lens_layout1", rng, "GRU", lens=[2, 4, 3], h0=True, layout=1),
        recurrent_case("gru_hardsigmoid_softsign_clip", rng, "GRU", linear_before_reset=1,
                       acts=[("HardSigmoid", 0.3, 0.4), ("Softsign", 0.0, 0.0)], clip=0.7),
        recurrent_case("lstm_default_no_bias", rng, "LSTM", bias=False),
        recurrent_case("lstm_layout1_states", rng, "LSTM", layout=1, h0=True, c0=True),
        recurrent_case("lstm_reverse", rng, "LSTM", direction="reverse", h0=True, c0=True),
        recurrent_case("lstm_peepholes_bidirectional_lens", rng, "LSTM", direction="bidirectional",
                       peepholes=True, lens=[3, 4, 1], h0=True, c0=True),
        recurrent_case("lstm_input_forget", rng, "LSTM", input_forget=1, peepholes=True),
        recurrent_case("lstm_elu_softsign_tanh", rng, "LSTM",
                       acts=[("Sigmoid", 0.0, 0.0), ("Elu", 0.5, 0.0), ("Softsign", 0.0, 0.0)]),
        recurrent_case("lstm_clip", rng, "LSTM", clip=0.5),
    ]

