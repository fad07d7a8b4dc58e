"""Checks a point that `propdag verify` printed with `falsified`, with onnxruntime: it lies in the
property's input box and its outputs meet the property's output conditions (float32, within the
tests' slack). Used by benchmarks/propdag_verify_vnncomp.sh --check.

    /usr/bin/python3 propdag/tests/check_counterexample.py MODEL SPEC VERIFY_OUTPUT_FILE

Prints "confirmed" (exit 0) or what misses (exit 1)."""

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if (importlib.util.find_spec("vnncomp") is None
        and REPO not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has propdag/tests/ (sampling.py) and not the repository (vnncomp,
    # which sampling imports): again, with the repository on PYTHONPATH.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

import numpy as np  # noqa: E402

import sampling  # noqa: E402
from verify_vnncomp_test import SLACK, asserts_of, counterexample_of, meets_property  # noqa: E402


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    model, spec, path = argv[1:]
    out = open(path).read()
    if out.split("\n")[0] != "falsified":
        print(f"{path}: not a falsified verdict")
        return 1
    x = counterexample_of(out)
    y = sampling.evaluate(model, x[None, :].astype(np.float32))[0][0]
    if not meets_property(asserts_of(spec), x, y, SLACK):
        print(f"missed: onnxruntime's outputs {y.tolist()} at the point meet no unsafe case")
        return 1
    print("confirmed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
