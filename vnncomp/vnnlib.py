"""Input boxes from VNN-LIB property files (`.vnnlib` or `.vnnlib.gz`).

Understood: `(declare-const X_i Real)` / `Y_i`, and `(assert ...)` whose body is a comparison
(`<=`, `>=`, `<`, `>`, `=`) between one variable and a number (either order), or an `and` / `or`
of such bodies, nested. Constraints on Y_i (the output property) are ignored.

An `or` whose disjuncts bound the inputs yields several input boxes; `read()` keeps all of them
in `Spec.boxes`, and `Spec.lower` / `Spec.upper` are those of the FIRST box (the harness feeds one
box per model). Inputs never bounded are -inf / +inf.
"""

import gzip
import re
from dataclasses import dataclass, field

import numpy as np

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_VAR = re.compile(r"^([XY])_(\d+)$")
_FLIP = {"<=": ">=", ">=": "<=", "<": ">", ">": "<", "=": "="}


class VnnlibError(ValueError):
    pass


@dataclass
class Spec:
    num_inputs: int
    num_outputs: int
    boxes: list = field(default_factory=list)  # [(lower, upper)] float64 arrays

    @property
    def lower(self):
        return self.boxes[0][0]

    @property
    def upper(self):
        return self.boxes[0][1]


def _text(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read()


def _parse(text):
    """Top-level s-expressions as nested lists of string atoms."""
    text = re.sub(r";[^\n]*", "", text)
    stack, top = [], []
    for tok in _TOKEN.findall(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if not stack:
                raise VnnlibError("unbalanced ')'")
            done = stack.pop()
            (stack[-1] if stack else top).append(done)
        elif stack:
            stack[-1].append(tok)
        else:
            top.append(tok)
    if stack:
        raise VnnlibError("unbalanced '(': missing ')' at end of file")
    return top


def _number(tok):
    try:
        return float(tok)
    except (TypeError, ValueError):
        raise VnnlibError(f"expected a number, got {tok!r}") from None


def _bound(expr):
    """(op, index, value) for a comparison on X_i, None for one on Y_i."""
    if len(expr) != 3 or expr[0] not in _FLIP:
        raise VnnlibError(f"unsupported expression {_show(expr)}")
    op, a, b = expr
    if isinstance(a, str) and _VAR.match(a):
        var, value = a, b
    elif isinstance(b, str) and _VAR.match(b):
        var, value, op = b, a, _FLIP[op]
    else:
        if isinstance(a, list) or isinstance(b, list):
            return None  # a linear output constraint such as (<= Y_0 Y_1) or (<= (+ ...) ...)
        raise VnnlibError(f"unsupported expression {_show(expr)}")
    m = _VAR.match(var)
    if isinstance(value, str) and _VAR.match(value):
        return None  # variable against variable: an output property
    if m.group(1) == "Y":
        return None
    return op, int(m.group(2)), _number(value)


def _show(expr):
    if isinstance(expr, str):
        return expr
    return "(" + " ".join(_show(e) for e in expr) + ")"


def _mentions_x(expr):
    if isinstance(expr, str):
        return expr.startswith("X_")
    return any(_mentions_x(e) for e in expr)


def _apply(expr, box):
    """Boxes satisfying `expr` inside `box` (owned by the caller; atoms tighten it in place)."""
    head = expr[0] if isinstance(expr, list) and expr else None
    if head == "and":
        boxes = [box]
        for sub in expr[1:]:
            boxes = [b2 for b in boxes for b2 in _apply(sub, b)]
        return boxes
    if head == "or":
        subs = [sub for sub in expr[1:] if _mentions_x(sub)]
        if not subs:
            return [box]
        return [b for sub in subs for b in _apply(sub, (box[0].copy(), box[1].copy()))]
    bound = _bound(expr)
    if bound is None:
        return [box]
    op, i, v = bound
    lo, hi = box
    if i >= len(lo):
        raise VnnlibError(f"X_{i} is not declared")
    if op in ("<=", "<", "="):
        hi[i] = min(hi[i], v)
    if op in (">=", ">", "="):
        lo[i] = max(lo[i], v)
    return [box]


def parse(text):
    """Spec of VNN-LIB source text."""
    exprs = _parse(text)
    nx = ny = 0
    for e in exprs:
        if isinstance(e, list) and len(e) >= 2 and e[0] == "declare-const":
            m = _VAR.match(e[1])
            if not m:
                continue
            if m.group(1) == "X":
                nx = max(nx, int(m.group(2)) + 1)
            else:
                ny = max(ny, int(m.group(2)) + 1)
    boxes = [(np.full(nx, -np.inf), np.full(nx, np.inf))]
    for e in exprs:
        if isinstance(e, list) and e and e[0] == "assert":
            if len(e) != 2:
                raise VnnlibError(f"assert takes one expression: {_show(e)[:80]}")
            boxes = [b2 for b in boxes for b2 in _apply(e[1], b)]
    return Spec(nx, ny, boxes)


def read(path):
    """Spec of a .vnnlib or .vnnlib.gz file."""
    return parse(_text(path))


def input_box(path):
    """(lower, upper) of the first input box of a property file."""
    spec = read(path)
    return spec.lower, spec.upper
