"""Conv and ConvTranspose cases for forms_test.py: weight or bias as graph inputs, kernels that cover
or tile the input. Expected outputs are brute-forced in numpy one window (or input element) at a
time."""

import itertools

import numpy as np
from onnx import helper

from forms_cases import make_case, windows


# ---- Conv / ConvTranspose with weights or bias as graph inputs --------------------------------------------

def conv_ref(x, w, b, strides, pads, dilations, group):
    per_group = w.shape[1]
    out_shape, wins = windows(x.shape[2:], w.shape[2:], strides, dilations, pads)
    y = np.zeros((x.shape[0], w.shape[0], *out_shape))
    for n, co in itertools.product(range(x.shape[0]), range(w.shape[0])):
        g = co // (w.shape[0] // group)
        for o, taps in wins:
            y[(n, co, *o)] = b[co] + sum(
                np.dot(x[(n, slice(g * per_group, (g + 1) * per_group), *pos)], w[(co, slice(None), *k)])
                for k, pos in taps)
    return y.astype(np.float32)


def conv_transpose_ref(x, w, b, strides, pads, dilations, group, output_padding):
    """Scatters every input element times its kernel, then crops the pads."""
    spatial, kernel, per_group = x.shape[2:], w.shape[2:], w.shape[1]
    n = len(spatial)
    full = [(spatial[d] - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 + output_padding[d]
            for d in range(n)]
    y = np.zeros((x.shape[0], per_group * group, *full))
    for batch, ci in itertools.product(range(x.shape[0]), range(x.shape[1])):
        g = ci // (x.shape[1] // group)
        for pos in itertools.product(*map(range, spatial)):
            for k in itertools.product(*map(range, kernel)):
                o = tuple(pos[d] * strides[d] + k[d] * dilations[d] for d in range(n))
                y[(batch, slice(g * per_group, (g + 1) * per_group), *o)] += (
                    x[(batch, ci, *pos)] * w[(ci, slice(None), *k)])
    y = y[(slice(None), slice(None), *(slice(pads[d], full[d] - pads[d + n]) for d in range(n)))]
    return (y + b.reshape(1, -1, *[1] * n)).astype(np.float32)


def conv_case(name, rng, op, x_shape, w_shape, runtime, bias=True, strides=None, pads=None,
              dilations=None, group=1, output_padding=None):
    n = len(x_shape) - 2
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    channels = w_shape[1] * group if op == "ConvTranspose" else w_shape[0]
    b = rng.standard_normal(channels).astype(np.float32) if bias else None
    strides, pads, dilations = strides or [1] * n, pads or [0] * (2 * n), dilations or [1] * n
    attrs = dict(strides=strides, pads=pads, dilations=dilations, group=group)
    b_ref = b if bias else np.zeros(channels, np.float32)
    if op == "Conv":
        y = conv_ref(x, w, b_ref, strides, pads, dilations, group)
    else:
        if output_padding:
            attrs["output_padding"] = output_padding
        y = conv_transpose_ref(x, w, b_ref, strides, pads, dilations, group, output_padding or [0] * n)
    values = [("w", w)] + ([("b", b)] if bias else [])
    node = helper.make_node(op, ["x"] + [v for v, _ in values], ["y"], **attrs)
    return make_case(name, node, [("x", x)] + [(v, a) for v, a in values if v in runtime], [("y", y)],
                     initializers=[(v, a) for v, a in values if v not in runtime])


def conv_runtime_weights():
    rng = np.random.default_rng(5)
    cases = []
    for runtime in ("w", "b", "wb", ""):  # which of weight and bias are graph inputs
        tag = runtime or "const"
        cases += [
            conv_case(f"ct1d_{tag}", rng, "ConvTranspose", (1, 2, 6), (2, 3, 3), runtime,
                      strides=[2], pads=[1, 1]),
            conv_case(f"ct2d_{tag}", rng, "ConvTranspose", (2, 4, 4, 5), (4, 3, 3, 2), runtime,
                      strides=[2, 3], pads=[1, 0, 2, 1], dilations=[1, 2], group=2, output_padding=[1, 0]),
            conv_case(f"ct3d_{tag}", rng, "ConvTranspose", (1, 2, 3, 4, 3), (2, 2, 2, 3, 2), runtime,
                      strides=[2, 1, 2], pads=[0, 1, 1, 1, 0, 0]),
            conv_case(f"cv2d_{tag}", rng, "Conv", (2, 4, 7, 6), (6, 2, 3, 2), runtime, strides=[2, 1],
                      pads=[1, 0, 2, 1], dilations=[1, 2], group=2)]
    cases.append(conv_case("ct2d_w_no_bias", rng, "ConvTranspose", (1, 2, 4, 4), (2, 3, 3, 3), "w",
                           bias=False, strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]))
    # Kernels covering the whole input (torchonnx computes them as one matrix product), and one
    # whose padding leaves more than one output position (a convolution again).
    cases += [conv_case("cv1d_whole", rng, "Conv", (2, 3, 7), (4, 3, 7), ""),
              conv_case("cv2d_whole_no_bias", rng, "Conv", (3, 2, 5, 4), (6, 2, 5, 4), "", bias=False),
              conv_case("cv3d_whole", rng, "Conv", (1, 2, 3, 2, 4), (3, 2, 3, 2, 4), ""),
              conv_case("cv2d_whole_padded", rng, "Conv", (1, 2, 3, 3), (2, 2, 3, 3), "", pads=[1, 0, 1, 0])]
    # Kernels that tile the input (stride = kernel: one matrix product per tile), and one whose
    # tiles leave a remainder (a convolution again).
    cases += [conv_case("cv1d_tiles", rng, "Conv", (2, 3, 12), (5, 3, 4), "", strides=[4]),
              conv_case("cv2d_tiles", rng, "Conv", (2, 3, 8, 12), (6, 3, 4, 3), "", strides=[4, 3]),
              conv_case("cv2d_tiles_no_bias", rng, "Conv", (1, 2, 6, 6), (4, 2, 2, 3), "", bias=False,
                        strides=[2, 3]),
              conv_case("cv3d_tiles", rng, "Conv", (1, 2, 4, 6, 4), (3, 2, 2, 3, 2), "", strides=[2, 3, 2]),
              conv_case("cv2d_tiles_remainder", rng, "Conv", (1, 2, 7, 6), (3, 2, 2, 2), "", strides=[2, 2])]
    return cases
