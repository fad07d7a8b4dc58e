"""Resize with coordinate_transformation_mode tf_crop_and_resize for forms_test.py. Expected outputs:
onnx's numpy reference for linear and cubic, and crop_nearest (the operator's formula in float32) for
nearest; forms_test.py also checks them against onnxruntime."""

import numpy as np
from onnx import helper
from onnx.backend.test.case.node.resize import cubic_coeffs, interpolate_nd, linear_coeffs

from forms_cases import make_case


def crop_nearest(x, roi, sizes, nearest_mode, extrapolation):
    """Resize nearest / tf_crop_and_resize to `sizes` by the operator's formula
    x_original = start * (in - 1) + i * (end - start) * (in - 1) / (out - 1), evaluated in float32 as
    onnxruntime does. (onnx's numpy reference evaluates it in float64, and onnx versions disagree on
    positions that are halfway in float32.) Positions outside [0, in - 1] take `extrapolation`."""
    y, inside = x, np.ones([1] * x.ndim, bool)
    f32 = np.float32
    for axis, (n_in, n_out) in enumerate(zip(x.shape, sizes)):
        start, end, span = f32(roi[axis]), f32(roi[axis + x.ndim]), f32(n_in - 1)
        i = np.arange(n_out, dtype=f32)
        if n_out > 1:
            pos = start * span + i * (end - start) * span / f32(n_out - 1)
        else:
            pos = np.full(1, 0.5 * (float(start) + float(end)) * float(span), f32)
        rounded = {"floor": np.floor(pos), "ceil": np.ceil(pos), "round_prefer_ceil": np.floor(pos + f32(0.5)),
                   "round_prefer_floor": np.ceil(pos - f32(0.5))}[nearest_mode]
        y = np.take(y, np.clip(rounded, 0, n_in - 1).astype(np.int64), axis=axis)
        shape = [1] * x.ndim
        shape[axis] = n_out
        inside = inside & ((pos >= 0) & (pos <= span)).reshape(shape)
    return np.where(inside, y, np.asarray(extrapolation).astype(x.dtype))


def resize_case(name, rng, shape, roi, sizes=None, scales=None, axes=None, mode="linear", nearest_mode=None,
                extrapolation=None, dtype=np.float32, opset=13):
    x = rng.standard_normal(shape).astype(np.float32) * 5
    x = x if dtype == np.float32 else np.abs(x).astype(dtype)
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize"}
    if extrapolation is not None:
        attrs["extrapolation_value"] = extrapolation
    if nearest_mode:
        attrs["nearest_mode"] = nearest_mode
    full_roi, full_sizes = np.array(roi, np.float32), sizes
    if axes:  # the reference wants every axis: the others keep their size over the whole [0, 1]
        attrs["axes"] = axes
        starts, ends, full_sizes = [0.0] * len(shape), [1.0] * len(shape), list(shape)
        for j, a in enumerate(axes):
            starts[a], ends[a], full_sizes[a] = roi[j], roi[j + len(axes)], sizes[j]
        full_roi = np.array(starts + ends, np.float32)
    if mode == "nearest":
        y = crop_nearest(x, full_roi, full_sizes, nearest_mode or "round_prefer_floor",
                         attrs.get("extrapolation_value", 0.0))
    else:
        y = interpolate_nd(x, {"linear": linear_coeffs, "cubic": cubic_coeffs}[mode], output_size=full_sizes,
                           scale_factors=None if scales is None else np.array(scales), roi=full_roi,
                           coordinate_transformation_mode="tf_crop_and_resize",
                           extrapolation_value=attrs.get("extrapolation_value", 0.0))
    inits = [("roi", np.array(roi, np.float32))]
    if sizes is None:
        inits.append(("scales", np.array(scales, np.float32)))
        node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], **attrs)
    else:
        inits.append(("sizes", np.array(sizes, np.int64)))
        node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], **attrs)
    return make_case(name, node, [("x", x)], [("y", y.astype(dtype))], initializers=inits, opset=opset)


def resize_crop():
    rng = np.random.default_rng(4)
    crop = [0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4]  # reaches outside the input: extrapolation_value shows
    return [resize_case(name, rng, shape, roi, **kw) for name, shape, roi, kw in [
        ("tfc_linear_inside", (1, 1, 4, 4), [0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8], dict(sizes=[1, 1, 3, 3])),
        ("tfc_linear_extrapolate", (2, 3, 5, 6), crop, dict(sizes=[2, 3, 7, 4], extrapolation=10.0)),
        ("tfc_linear_extrapolate_0", (1, 2, 5, 6), crop, dict(sizes=[1, 2, 4, 9])),
        ("tfc_linear_scales", (1, 2, 5, 6), [0, 0, 0.1, -0.3, 1, 1, 0.8, 1.2],
         dict(scales=[1, 1, 2.0, 1.5], extrapolation=-1.0)),
        ("tfc_linear_size1", (1, 2, 5, 6), [0, 0, 0.1, 0.2, 1, 1, 0.8, 0.7], dict(sizes=[1, 2, 1, 3])),
        ("tfc_nearest", (1, 2, 5, 6), crop, dict(mode="nearest", sizes=[1, 2, 7, 4], extrapolation=3.0)),
        ("tfc_nearest_floor", (1, 2, 5, 6), [0, 0, 0.1, 0.3, 1, 1, 0.9, 1.0],
         dict(mode="nearest", nearest_mode="floor", sizes=[1, 2, 7, 4])),
        ("tfc_nearest_ceil_int32", (1, 2, 5, 6), [0, 0, -0.5, 0.3, 1, 1, 0.9, 1.2],
         dict(mode="nearest", nearest_mode="ceil", sizes=[1, 2, 7, 4], extrapolation=7.0, dtype=np.int32)),
        ("tfc_cubic", (1, 2, 6, 6), [0, 0, 0.1, -0.2, 1, 1, 0.9, 0.8],
         dict(mode="cubic", sizes=[1, 2, 5, 7], extrapolation=2.0)),
        ("tfc_3d_all_axes", (2, 4, 5), [0.2, -0.1, 0.1, 0.9, 1.1, 0.8],
         dict(sizes=[3, 5, 4], extrapolation=1.5)),
        ("tfc_axes_opset18", (1, 2, 5, 6), [-0.2, 0.3, 0.9, 1.4],
         dict(sizes=[7, 4], axes=[2, 3], extrapolation=4.0, opset=18)),
        ("tfc_identity", (1, 2, 5, 6), [0, 0, 0, 0, 1, 1, 1, 1], dict(sizes=[1, 2, 5, 6])),
    ]]
