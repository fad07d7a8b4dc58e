"""Random networks for propdag's soundness fuzzing (random_nets_test.py): each one is built twice,
as an ONNX graph for propdag and as a float64 NumPy function of a batch of points, from the same
float32 weights. The ops are those of the VNN-COMP models that propdag bounds: affine maps
(MatMul, Gemm, Conv, ConvTranspose, BatchNormalization, ReduceSum / ReduceMean, Slice,
Transpose, Concat, Pad, Resize, Gather, Split, Expand, Squeeze / Unsqueeze), pooling, ReLU-like
and smooth activations, residual blocks v + c g(v), Softmax, and elementwise Max / Min, products
and quotients of two variables. Half the networks make every node an output, so that a fault
inside the graph is not hidden by the ops after it."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _sigmoid(x):
    return 0.5 * (1 + np.tanh(0.5 * x))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _windows(x, kh, kw, stride):
    """[N, C, Ho, Wo, kh, kw] views of x's kh x kw windows."""
    n, c, h, w = x.shape
    ho, wo = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.empty((n, c, ho, wo, kh, kw))
    for a in range(kh):
        for b in range(kw):
            out[..., a, b] = x[:, :, a:a + stride * (ho - 1) + 1:stride, b:b + stride * (wo - 1) + 1:stride]
    return out


class Net:
    """A graph under construction: values are (onnx name, shape without the batch dim, function of
    the input points giving that value for each point)."""

    def __init__(self, rng, shape):
        self.rng, self.nodes, self.inits, self.count = rng, [], [], 0
        self.input_shape = shape
        self.x = ("x", list(shape), lambda p: p.reshape((-1, *shape)))
        self.ops = []  # op types in order, for reports
        self.values = []  # every node's function, for the size of the intermediate values
        self.nodes_out = []  # every node's value, which may all be outputs

    def _name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, array, dtype=np.float32):
        name = self._name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def node(self, op, inputs, shape, fn, **attrs):
        out = self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        self.ops.append(op)
        self.values.append(fn)
        self.nodes_out.append((out, list(shape), fn))
        return (out, list(shape), fn)

    def weights(self, *shape, fan_in=None):
        scale = self.rng.choice([0.3, 1.0, 3.0]) / np.sqrt(fan_in or shape[0])
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def model(self, outputs, opset=13):
        graph = helper.make_graph(
            self.nodes, "random",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, *self.input_shape])],
            [helper.make_tensor_value_info(v[0], TensorProto.FLOAT, [1, *v[1]]) for v in outputs],
            self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m

    # ---- affine maps of a vector [n] ----
    def linear(self, v, m):
        name, (n,), f = v
        w, b = self.weights(n, m), self.weights(m, fan_in=1) * 0.5
        wd, bd = w.astype(np.float64), b.astype(np.float64)
        if self.rng.random() < 0.5:
            t = self.node("MatMul", [name, self.const(w)], [m], lambda p: f(p) @ wd)
            return self.node("Add", [t[0], self.const(b)], [m], lambda p: t[2](p) + bd)
        return self.node("Gemm", [name, self.const(w.T), self.const(b)], [m],
                         lambda p: f(p) @ wd + bd, transB=1)

    def batchnorm(self, v):
        name, (n,), f = v
        s, b, mean = self.weights(n, fan_in=1), self.weights(n, fan_in=1), self.weights(n, fan_in=1)
        var = (self.rng.random(n) + 0.2).astype(np.float32)
        eps = 1e-5
        k = s.astype(np.float64) / np.sqrt(var.astype(np.float64) + np.float64(np.float32(eps)))
        fn = lambda p: (f(p) - mean.astype(np.float64)) * k + b.astype(np.float64)  # noqa: E731
        return self.node("BatchNormalization",
                         [name, self.const(s), self.const(b), self.const(mean), self.const(var)],
                         [n], fn, epsilon=eps)

    def reduce(self, v):
        name, (n,), f = v
        a = next(d for d in (4, 3, 2, 1) if n % d == 0)
        r = self.node("Reshape", [name, self.const([1, a, n // a], np.int64)], [a, n // a],
                      lambda p: f(p).reshape(-1, a, n // a))
        if self.rng.random() < 0.5:
            return self.node("ReduceSum", [r[0], self.const([1], np.int64)], [n // a],
                             lambda p: r[2](p).sum(axis=1), keepdims=0)
        return self.node("ReduceMean", [r[0]], [n // a], lambda p: r[2](p).mean(axis=1),
                         axes=[1], keepdims=0)

    def transpose(self, v):
        name, (n,), f = v
        a = next(d for d in (3, 2, 1) if n % d == 0)
        b = n // a
        r = self.node("Reshape", [name, self.const([1, a, b], np.int64)], [a, b],
                      lambda p: f(p).reshape(-1, a, b))
        t = self.node("Transpose", [r[0]], [b, a], lambda p: r[2](p).transpose(0, 2, 1),
                      perm=[0, 2, 1])
        return self.node("Reshape", [t[0], self.const([1, n], np.int64)], [n],
                         lambda p: t[2](p).reshape(-1, n))

    def slice(self, v):
        name, (n,), f = v
        lo = int(self.rng.integers(0, max(1, n - 1)))
        hi = int(self.rng.integers(lo + 1, n + 1))
        return self.node("Slice", [name, self.const([lo], np.int64), self.const([hi], np.int64),
                                   self.const([1], np.int64)], [hi - lo], lambda p: f(p)[:, lo:hi])

    def shuffle(self, v):
        """A copy of some of v's elements, by Gather, Split, Expand or Unsqueeze / Squeeze."""
        name, (n,), f = v
        kind = self.rng.choice(["Gather", "Split", "Expand", "Squeeze"])
        if kind == "Gather":
            idx = self.rng.integers(0, n, size=int(self.rng.integers(1, 2 * n + 1)))
            return self.node("Gather", [name, self.const(idx, np.int64)], [len(idx)],
                             lambda p: f(p)[:, idx], axis=1)
        if kind == "Split" and n >= 2:
            k = int(self.rng.integers(1, n))
            out = self._name("split")
            self.nodes.append(helper.make_node("Split", [name, self.const([k, n - k], np.int64)],
                                               [out + "_a", out + "_b"], axis=1))
            self.ops.append("Split")
            fn = lambda p: f(p)[:, k:]  # noqa: E731
            self.values.append(fn)
            return (out + "_b", [n - k], fn)
        if kind == "Expand":
            u = self.node("Unsqueeze", [name, self.const([1], np.int64)], [1, n],
                          lambda p: f(p)[:, None, :])
            e = self.node("Expand", [u[0], self.const([1, 2, n], np.int64)], [2, n],
                          lambda p: np.repeat(u[2](p), 2, axis=1))
            return self.node("Reshape", [e[0], self.const([1, 2 * n], np.int64)], [2 * n],
                             lambda p: e[2](p).reshape(-1, 2 * n))
        u = self.node("Unsqueeze", [name, self.const([2], np.int64)], [n, 1],
                      lambda p: f(p)[:, :, None])
        return self.node("Squeeze", [u[0], self.const([2], np.int64)], [n],
                         lambda p: u[2](p)[:, :, 0])

    # ---- elementwise ops of one vector ----
    def activation(self, v):
        name, shape, f = v
        kind = self.rng.choice(["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Sin", "Cos", "Clip",
                                "Neg", "Square", "Softmax", "Exp", "Softplus"])
        if kind == "Relu":
            return self.node("Relu", [name], shape, lambda p: np.maximum(f(p), 0))
        if kind == "LeakyRelu":
            a = float(np.float32(self.rng.uniform(0.01, 0.5)))
            return self.node("LeakyRelu", [name], shape,
                             lambda p: np.where(f(p) >= 0, f(p), a * f(p)), alpha=a)
        unary = {"Sigmoid": _sigmoid, "Tanh": np.tanh, "Sin": np.sin, "Cos": np.cos,
                 "Neg": np.negative, "Exp": np.exp, "Softplus": lambda x: np.logaddexp(0, x)}
        if kind in unary:
            g = unary[kind]
            return self.node(kind, [name], shape, lambda p: g(f(p)))
        if kind == "Square":
            if self.rng.random() < 0.5:
                return self.node("Mul", [name, name], shape, lambda p: f(p) * f(p))
            return self.node("Pow", [name, self.const(2.0)], shape, lambda p: f(p) ** 2)
        if kind == "Clip":
            lo = float(np.float32(self.rng.uniform(-2, 0)))
            hi = float(np.float32(lo + self.rng.uniform(0.1, 3)))
            return self.node("Clip", [name, self.const(lo), self.const(hi)], shape,
                             lambda p: np.clip(f(p), lo, hi))
        return self.node("Softmax", [name], shape, lambda p: _softmax(f(p)), axis=-1)

    # ---- two vectors of the same length ----
    def binary(self, v, u):
        name, shape, f = v
        other, _, g = u
        kind = self.rng.choice(["Add", "Sub", "Mul", "Max", "Min", "Div"])
        if kind == "Add":
            return self.node("Add", [name, other], shape, lambda p: f(p) + g(p))
        if kind == "Sub":
            return self.node("Sub", [name, other], shape, lambda p: f(p) - g(p))
        if kind == "Mul":
            return self.node("Mul", [name, other], shape, lambda p: f(p) * g(p))
        if kind == "Max":
            return self.node("Max", [name, other], shape, lambda p: np.maximum(f(p), g(p)))
        if kind == "Min":
            return self.node("Min", [name, other], shape, lambda p: np.minimum(f(p), g(p)))
        # A divisor in [0.5, 1.5]: Sigmoid(u) + 0.5.
        s = self.node("Sigmoid", [other], shape, lambda p: _sigmoid(g(p)))
        d = self.node("Add", [s[0], self.const(0.5)], shape, lambda p: s[2](p) + 0.5)
        return self.node("Div", [name, d[0]], shape, lambda p: f(p) / d[2](p))

    def residual(self, v):
        """v + c * g(v) for an activation g and a constant c of either sign (a residual block)."""
        name, shape, f = v
        g = self.image_activation(v) if self.rng.random() < 0.5 else self.activation(v)
        c = self.weights(*shape, fan_in=1)
        cd = c.astype(np.float64)
        m = self.node("Mul", [g[0], self.const(c)], shape, lambda p: g[2](p) * cd)
        return self.node("Add", [name, m[0]], shape, lambda p: f(p) + m[2](p))

    def concat(self, v, u):
        name, (n,), f = v
        other, (m,), g = u
        return self.node("Concat", [name, other], [n + m],
                         lambda p: np.concatenate([f(p), g(p)], axis=1), axis=1)

    def matmul2(self, v, u):
        """Both factors variables: v as [a, b] times u as [b, c] (u of length b * c)."""
        name, (n,), f = v
        a = next(d for d in (2, 1) if n % d == 0)
        b = n // a
        w = self.linear(u, b * 2)
        x = self.node("Reshape", [name, self.const([1, a, b], np.int64)], [a, b],
                      lambda p: f(p).reshape(-1, a, b))
        y = self.node("Reshape", [w[0], self.const([1, b, 2], np.int64)], [b, 2],
                      lambda p: w[2](p).reshape(-1, b, 2))
        z = self.node("MatMul", [x[0], y[0]], [a, 2], lambda p: x[2](p) @ y[2](p))
        return self.node("Reshape", [z[0], self.const([1, 2 * a], np.int64)], [2 * a],
                         lambda p: z[2](p).reshape(-1, 2 * a))

    # ---- images [C, H, W] ----
    def conv(self, v, m):
        name, (c, h, w_), f = v
        k = int(self.rng.integers(1, min(3, h, w_) + 1))
        s = int(self.rng.integers(1, 3))
        pad = int(self.rng.integers(0, k))
        w, b = self.weights(m, c, k, k, fan_in=c * k * k), self.weights(m, fan_in=1) * 0.5
        ho, wo = (h + 2 * pad - k) // s + 1, (w_ + 2 * pad - k) // s + 1
        wd, bd = w.astype(np.float64), b.astype(np.float64)

        def fn(p):
            x = np.pad(f(p), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
            return np.einsum("ncijab,mcab->nmij", _windows(x, k, k, s), wd) + bd[:, None, None]
        return self.node("Conv", [name, self.const(w), self.const(b)], [m, ho, wo], fn,
                         kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4)

    def conv_transpose(self, v, m):
        name, (c, h, w_), f = v
        k, s = int(self.rng.integers(2, 4)), int(self.rng.integers(1, 3))
        pad = int(self.rng.integers(0, k - 1))
        w, b = self.weights(c, m, k, k, fan_in=c * k), self.weights(m, fan_in=1) * 0.5
        full_h, full_w = (h - 1) * s + k, (w_ - 1) * s + k
        wd, bd = w.astype(np.float64), b.astype(np.float64)

        def fn(p):
            x = f(p)
            out = np.zeros((len(x), m, full_h, full_w))
            for a in range(k):
                for b_ in range(k):
                    out[:, :, a:a + s * (h - 1) + 1:s, b_:b_ + s * (w_ - 1) + 1:s] += np.einsum(
                        "ncij,cm->nmij", x, wd[:, :, a, b_])
            return out[:, :, pad:full_h - pad, pad:full_w - pad] + bd[:, None, None]
        return self.node("ConvTranspose", [name, self.const(w), self.const(b)],
                         [m, full_h - 2 * pad, full_w - 2 * pad], fn, kernel_shape=[k, k],
                         strides=[s, s], pads=[pad] * 4)

    def pad(self, v):
        name, (c, h, w_), f = v
        t, left = int(self.rng.integers(0, 2)), int(self.rng.integers(0, 2))
        value = float(np.float32(self.rng.uniform(-1, 1)))
        return self.node("Pad", [name, self.const([0, 0, t, left, 0, 0, 1, 0], np.int64),
                                 self.const(value)], [c, h + t + 1, w_ + left],
                         lambda p: np.pad(f(p), ((0, 0), (0, 0), (t, 1), (left, 0)),
                                          constant_values=value))

    def upsample(self, v):
        name, (c, h, w_), f = v
        return self.node("Resize", [name, "", self.const([1, 1, 2, 2])], [c, 2 * h, 2 * w_],
                         lambda p: f(p).repeat(2, axis=2).repeat(2, axis=3), mode="nearest")

    def pool(self, v):
        name, (c, h, w_), f = v
        if min(h, w_) < 2:
            return v
        if self.rng.random() < 0.5:
            return self.node("MaxPool", [name], [c, h // 2, w_ // 2],
                             lambda p: _windows(f(p), 2, 2, 2).max(axis=(4, 5)),
                             kernel_shape=[2, 2], strides=[2, 2])
        return self.node("AveragePool", [name], [c, h // 2, w_ // 2],
                         lambda p: _windows(f(p), 2, 2, 2).mean(axis=(4, 5)),
                         kernel_shape=[2, 2], strides=[2, 2])

    def image_activation(self, v):
        name, shape, f = v
        if self.rng.random() < 0.7:
            return self.node("Relu", [name], shape, lambda p: np.maximum(f(p), 0))
        return self.node("Sigmoid", [name], shape, lambda p: _sigmoid(f(p)))

    def flatten(self, v):
        name, shape, f = v
        n = int(np.prod(shape))
        return self.node("Flatten", [name], [n], lambda p: f(p).reshape(-1, n))


def random_net(seed):
    """(ONNX model, float64 function of points [N, n] to outputs [N, m], input count, op types,
    function of points giving each point's largest magnitude of any value in the graph)."""
    rng = np.random.default_rng(seed)
    image = rng.random() < 0.3
    if image:
        c, h = int(rng.integers(1, 3)), int(rng.integers(4, 8))
        net = Net(rng, [c, h, h])
        v = net.x
        for _ in range(int(rng.integers(1, 3))):
            r = rng.random()
            if r < 0.2:
                v = net.conv_transpose(v, int(rng.integers(1, 4)))
            elif r < 0.3:
                v = net.pad(v)
            elif r < 0.4 and v[1][1] <= 6:
                v = net.upsample(v)
            v = net.image_activation(net.conv(v, int(rng.integers(2, 5))))
            if rng.random() < 0.5:
                v = net.pool(v)
        v = net.flatten(v)
        if v[1][0] > 24:
            v = net.linear(v, int(rng.integers(4, 12)))
    else:
        net = Net(rng, [int(rng.integers(2, 7))])
        # Mostly a linear layer first; else the input itself goes on, so that an activation may
        # see a box's own ends (one tiny beside one huge).
        v = net.linear(net.x, int(rng.integers(3, 10))) if rng.random() < 0.7 else net.x
        if v is net.x and rng.random() < 0.5:
            v = net.residual(v)
    seen = [v]
    for _ in range(int(rng.integers(2, 7))):
        r = rng.random()
        n = v[1][0]
        if r < 0.27:
            v = net.activation(v)
        elif r < 0.35:
            v = net.residual(v)
        elif r < 0.55:
            v = net.linear(v, int(rng.integers(2, 10)))
        elif r < 0.7:
            u = seen[int(rng.integers(0, len(seen)))]
            v = net.binary(v, net.linear(u, n) if u[1][0] != n or rng.random() < 0.5 else u)
        elif r < 0.76:
            v = net.concat(v, seen[int(rng.integers(0, len(seen)))])
        elif r < 0.82:
            v = net.matmul2(v, seen[int(rng.integers(0, len(seen)))])
        elif r < 0.88:
            v = net.batchnorm(v)
        elif r < 0.92:
            v = net.reduce(v)
        elif r < 0.94:
            v = net.transpose(v)
        elif r < 0.97:
            v = net.shuffle(v)
        else:
            v = net.slice(v)
        seen.append(v)
    outputs = [v]
    if rng.random() < 0.5:  # every node an output: a fault inside is not hidden by later ops
        outputs = [o for o in net.nodes_out if o[0] != v[0]] + [v]
    elif rng.random() < 0.3 and seen[-2] is not v and seen[-2][1] != []:
        outputs.insert(0, seen[-2])
    fns = [o[2] for o in outputs]
    sizes = [int(np.prod(o[1])) for o in outputs]

    def forward(points):
        return np.concatenate([fn(points).reshape(len(points), s) for fn, s in zip(fns, sizes)],
                              axis=1)
    def magnitude(points):
        return np.max([np.abs(fn(points)).reshape(len(points), -1).max(axis=1)
                       for fn in net.values], axis=0)
    return net.model(outputs), forward, int(np.prod(net.input_shape)), net.ops, magnitude


def random_box(rng, n):
    """(lo, hi, kind): a box of one of several shapes, from a point to ends 1e22 apart."""
    kind = rng.choice(["point", "tiny", "small", "unit", "wide", "mixed", "far"])
    c = rng.uniform(-1, 1, n) * rng.choice([1.0, 3.0])
    r = {"point": np.zeros(n), "tiny": np.full(n, 1e-4), "small": rng.uniform(0.01, 0.1, n),
         "unit": rng.uniform(0.2, 1.0, n), "wide": rng.uniform(1.0, 5.0, n),
         "mixed": rng.uniform(0, 2, n) * (rng.random(n) < 0.6), "far": rng.uniform(0.1, 1, n)}[kind]
    lo, hi = c - r, c + r
    if kind == "far":  # some ends far from the others: a small end beside a huge one
        far = rng.random(n) < 0.5
        hi[far] = 10.0 ** rng.uniform(3, 22, far.sum())
        if rng.random() < 0.5:  # beyond float64's 16 digits: the small end rounds away from sums
            hi[far] = 10.0 ** rng.uniform(17, 22, far.sum())
    return lo, hi, str(kind)
