"""Cases for ops and forms of opsets 18-22 whose ONNX node tests only newer test data (ONNX 1.17,
Debian trixie) holds, so that the default test run covers their lowerings: CenterCropPad, Col2Im,
AffineGrid, DeformConv, GroupNormalization-21, BitwiseNot, ReduceMax/Min over an empty axis,
GridSample-20's 3-D nearest on exact halves, and Resize-18's antialias. Expected outputs are numpy
computations written from the ONNX spec, one output element at a time where the op is a loop.
"""

import itertools

import numpy as np
from onnx import helper

from forms_cases import make_case


def center_crop_pad():
    x = np.arange(5 * 6 * 4, dtype=np.float32).reshape(5, 6, 4)
    # axis 0 cropped 5 -> 3 from (5 - 3) // 2 = 1; axis 2 padded 4 -> 7 with (7 - 4) // 2 = 1 before.
    y = np.zeros((3, 6, 7), np.float32)
    y[:, :, 1:5] = x[1:4]
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0, -1])
    return [make_case("center_crop_pad", node, [("x", x)], [("y", y)],
                      [("s", np.array([3, 7], np.int64))], opset=18)]


def col2im():
    rng = np.random.default_rng(3)
    image, block, strides, dil, pads = [5, 6], [2, 3], [2, 1], [1, 2], [1, 0, 0, 2]
    n_blocks = [(image[d] + pads[d] + pads[d + 2] - dil[d] * (block[d] - 1) - 1) // strides[d] + 1
                for d in range(2)]
    cols = rng.standard_normal((2, 3 * 6, n_blocks[0] * n_blocks[1])).astype(np.float32)
    y = np.zeros((2, 3, *image), np.float64)
    for c, (kr, kc), (br, bc) in itertools.product(range(3), itertools.product(range(2), range(3)),
                                                    itertools.product(*map(range, n_blocks))):
        r = br * strides[0] - pads[0] + kr * dil[0]
        col = bc * strides[1] - pads[1] + kc * dil[1]
        if 0 <= r < image[0] and 0 <= col < image[1]:
            y[:, c, r, col] += cols[:, c * 6 + kr * 3 + kc, br * n_blocks[1] + bc]
    node = helper.make_node("Col2Im", ["x", "i", "b"], ["y"], strides=strides, dilations=dil,
                            pads=pads)
    return [make_case("col2im_pads_strides_dilations", node, [("x", cols)],
                      [("y", y.astype(np.float32))],
                      [("i", np.array(image, np.int64)), ("b", np.array(block, np.int64))],
                      opset=18)]


def affine_grid():
    rng = np.random.default_rng(4)
    cases = []
    for name, size, align in [("affine_grid_2d", [2, 3, 4, 5], 0),
                              ("affine_grid_2d_align", [2, 3, 4, 5], 1),
                              ("affine_grid_3d", [2, 1, 2, 3, 4], 0)]:
        k = len(size) - 2
        theta = rng.standard_normal((size[0], k, k + 1)).astype(np.float32)
        axes = []  # x (W), y (H)[, z (D)]
        for n in reversed(size[2:]):
            i = np.arange(n, dtype=np.float64)
            axes.append(-1 + 2 * i / (n - 1) if align else (2 * i + 1) / n - 1)
        y = np.zeros((size[0], *size[2:], k))
        for pos in itertools.product(*map(range, size[2:])):
            base = np.array([axes[a][pos[k - 1 - a]] for a in range(k)] + [1.0])
            y[(slice(None), *pos)] = theta.astype(np.float64) @ base
        node = helper.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=align)
        cases.append(make_case(name, node, [("t", theta)], [("y", y.astype(np.float32))],
                               [("s", np.array(size, np.int64))], opset=20))
    return cases


def bilinear(img, h, w):
    """img [H, W] at (h, w); neighbours outside the image count as zero."""
    h0, w0 = int(np.floor(h)), int(np.floor(w))
    total = 0.0
    for dh, dw in itertools.product((0, 1), (0, 1)):
        r, c = h0 + dh, w0 + dw
        if 0 <= r < img.shape[0] and 0 <= c < img.shape[1]:
            total += (1 - abs(h - r)) * (1 - abs(w - c)) * img[r, c]
    return total


def deform_conv():
    rng = np.random.default_rng(5)
    n, c, hw, oc, group, og, k, pad, stride = 2, 4, 5, 4, 2, 2, 3, 1, 2
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    w = rng.standard_normal((oc, c // group, k, k)).astype(np.float32)
    out = (hw + 2 * pad - k) // stride + 1
    offset = (rng.standard_normal((n, og * k * k * 2, out, out)) * 1.5).astype(np.float32)
    offset[0, 0, 0, 0] = -2.0  # a sample exactly one pixel outside the input reads nothing
    mask = rng.uniform(size=(n, og * k * k, out, out)).astype(np.float32)
    bias = rng.standard_normal(oc).astype(np.float32)
    off = offset.reshape(n, og, k * k, 2, out, out)
    m = mask.reshape(n, og, k * k, out, out)
    y = np.zeros((n, oc, out, out))
    for b, o, oh, ow in itertools.product(range(n), range(oc), range(out), range(out)):
        g = o // (oc // group)
        total = float(bias[o])
        for ci, kk in itertools.product(range(c // group), range(k * k)):
            ch = g * (c // group) + ci
            grp = ch // (c // og)
            h = oh * stride - pad + kk // k + off[b, grp, kk, 0, oh, ow]
            wc = ow * stride - pad + kk % k + off[b, grp, kk, 1, oh, ow]
            v = bilinear(x[b, ch].astype(np.float64), float(h), float(wc))
            total += w[o, ci, kk // k, kk % k] * m[b, grp, kk, oh, ow] * v
        y[b, o, oh, ow] = total
    node = helper.make_node("DeformConv", ["x", "w", "off", "b", "m"], ["y"], group=group,
                            offset_group=og, pads=[pad] * 4, strides=[stride] * 2,
                            kernel_shape=[k, k])
    return [make_case("deform_conv_groups_mask", node, [("x", x), ("off", offset), ("m", mask)],
                      [("y", y.astype(np.float32))], [("w", w), ("b", bias)], opset=19)]


def group_norm_21():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 6, 5)).astype(np.float32)
    scale, bias = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    g = x.astype(np.float64).reshape(2, 2, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    y = y * scale[:, None] + bias[:, None]
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    return [make_case("group_norm_21", node, [("x", x), ("s", scale), ("b", bias)],
                      [("y", y.astype(np.float32))], opset=21)]


def bitwise_not():
    x = np.array([[0, 1, -1], [2 ** 31 - 1, -(2 ** 31), 12345]], np.int32)
    node = helper.make_node("BitwiseNot", ["x"], ["y"])
    return [make_case("bitwise_not_int32", node, [("x", x)], [("y", -x - 1)], opset=18)]


def empty_reductions():
    """Max over nothing is -inf (the type's lowest value for integers), min +inf (highest)."""
    x = np.zeros((2, 0, 3), np.float32)
    xi = np.zeros((2, 0, 3), np.int32)
    axes = [("a", np.array([1], np.int64))]
    return [
        make_case("reduce_max_empty", helper.make_node("ReduceMax", ["x", "a"], ["y"], keepdims=0),
                  [("x", x)], [("y", np.full((2, 3), -np.inf, np.float32))], axes, opset=18),
        make_case("reduce_min_empty_int", helper.make_node("ReduceMin", ["x", "a"], ["y"]),
                  [("x", xi)], [("y", np.full((2, 1, 3), 2 ** 31 - 1, np.int32))], axes,
                  opset=18),
    ]


def grid_sample_3d_nearest():
    """Sample positions exactly halfway between voxels round to the even one (ONNX's reference,
    torch >= 2.1; torch 1.13's 3-D kernel rounds them away from zero)."""
    x = np.arange(3 * 4 * 5, dtype=np.float32).reshape(1, 1, 3, 4, 5)
    cases = []
    for align in (0, 1):
        # Pixel coordinates per axis (x: W = 5, y: H = 4, z: D = 3), halves included.
        px = np.array([0.5, 1.5, 2.5, 3.5, -0.5, 4.5, 1.2, 2.0])
        py = np.array([0.5, 1.5, 2.5, -0.5, 3.5, 0.0, 2.7, 1.5])
        pz = np.array([0.5, 1.5, -0.5, 2.5, 1.0, 0.5, 1.6, 0.2])
        def norm(p, size):
            return 2 * p / (size - 1) - 1 if align else (2 * p + 1) / size - 1
        grid = np.stack([norm(px, 5), norm(py, 4), norm(pz, 3)], -1).reshape(1, 1, 2, 4, 3)
        grid = grid.astype(np.float32)
        y = np.zeros((1, 1, 1, 2, 4), np.float32)
        for i, (a, b, c) in enumerate(zip(np.rint(px), np.rint(py), np.rint(pz))):
            inside = 0 <= a < 5 and 0 <= b < 4 and 0 <= c < 3
            y.reshape(-1)[i] = x[0, 0, int(c), int(b), int(a)] if inside else 0
        node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="nearest",
                                align_corners=align)
        cases.append(make_case(f"grid_sample_3d_nearest_align_{align}", node,
                               [("x", x), ("g", grid)], [("y", y)], opset=20))
    return cases


def antialias_coeffs(ratio, scale, cubic, a=-0.75):
    """ONNX's antialiased filter (Resize-18): the linear or cubic kernel stretched by 1 / scale
    when scale < 1, sampled at the taps around the source position, normalized."""
    s = min(scale, 1.0)
    start = int(np.floor((-2 if cubic else -1) / s)) + 1
    t = np.abs((np.arange(start, 2 - start) - ratio) * s)
    if cubic:
        w = np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                     np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))
    else:
        w = np.clip(1 - t, 0, 1)
    return w / w.sum()


def resize_axis(data, out_len, scale, cubic):
    """Resizes the last axis (half_pixel): each output takes the filter's length of input positions
    nearest its source position (the lower first on ties) on the input extended by edge copies."""
    out = np.zeros((*data.shape[:-1], out_len))
    for i in range(out_len):
        x = (i + 0.5) / scale - 0.5
        ratio = 1.0 if x == np.floor(x) else x - np.floor(x)
        w = antialias_coeffs(ratio, scale, cubic)
        pad = (len(w) + 1) // 2
        padded = np.pad(data, [(0, 0)] * (data.ndim - 1) + [(pad, pad)], mode="edge")
        near = sorted(sorted(range(padded.shape[-1]), key=lambda j: (abs(x + pad - j), j))[:len(w)])
        out[..., i] = padded[..., near] @ w
    return out


def resize_antialias():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 6, 9)).astype(np.float32)
    cases = []
    for mode in ("linear", "cubic"):
        scales = np.array([1, 1, 0.6, 0.45], np.float32)
        h, w = int(6 * scales[2]), int(9 * scales[3])
        y = resize_axis(x.astype(np.float64), w, float(scales[3]), mode == "cubic")
        y = resize_axis(y.swapaxes(2, 3), h, float(scales[2]), mode == "cubic").swapaxes(2, 3)
        node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode, antialias=1)
        cases.append(make_case(f"resize_{mode}_antialias", node, [("x", x)],
                               [("y", y.astype(np.float32))], [("s", scales)], opset=18))
    return cases


FAMILIES = {"center_crop_pad": center_crop_pad, "col2im": col2im, "affine_grid": affine_grid,
            "deform_conv": deform_conv, "group_norm_21": group_norm_21,
            "bitwise_not": bitwise_not, "empty_reductions": empty_reductions,
            "grid_sample_3d_nearest": grid_sample_3d_nearest, "resize_antialias": resize_antialias}
