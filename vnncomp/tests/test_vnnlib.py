import gzip
import os

import numpy as np
import pytest

from vnncomp import vnnlib

HEAD = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const X_2 Real)\n" \
       "(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"


def test_plain_bounds_both_orders_and_unbounded():
    spec = vnnlib.parse(HEAD + """
; a comment (assert (<= X_0 100))
(assert (<= X_0 0.5))
(assert (>= X_0 -0.5))
(assert (>= 2 X_1))
(assert (<= -1e-3 X_1))
(assert (<= Y_0 Y_1))
""")
    assert (spec.num_inputs, spec.num_outputs) == (3, 2)
    assert len(spec.boxes) == 1
    np.testing.assert_array_equal(spec.lower, [-0.5, -1e-3, -np.inf])
    np.testing.assert_array_equal(spec.upper, [0.5, 2.0, np.inf])


def test_and_block_and_output_only_or():
    spec = vnnlib.parse(HEAD + """
(assert (and (<= X_0 1) (>= X_0 0) (and (<= X_2 3) (>= X_2 2))))
(assert (or (and (>= Y_0 1)) (and (<= Y_1 0))))
""")
    assert len(spec.boxes) == 1
    np.testing.assert_array_equal(spec.lower, [0, -np.inf, 2])
    np.testing.assert_array_equal(spec.upper, [1, np.inf, 3])


def test_or_gives_several_boxes_and_the_first_is_used():
    spec = vnnlib.parse(HEAD + """
(assert (<= X_1 9))
(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 5) (<= X_0 6) (>= X_1 8))))
""")
    assert len(spec.boxes) == 2
    np.testing.assert_array_equal(spec.lower[:2], [0, -np.inf])
    np.testing.assert_array_equal(spec.upper[:2], [1, 9])
    lo2, hi2 = spec.boxes[1]
    np.testing.assert_array_equal(lo2[:2], [5, 8])
    np.testing.assert_array_equal(hi2[:2], [6, 9])


def test_gz_file(tmp_path):
    path = tmp_path / "p.vnnlib.gz"
    with gzip.open(path, "wt") as f:
        f.write(HEAD + "(assert (<= X_2 0.25))\n(assert (>= X_2 0.125))\n")
    lo, hi = vnnlib.input_box(str(path))
    assert (lo[2], hi[2]) == (0.125, 0.25)


def test_malformed():
    with pytest.raises(vnnlib.VnnlibError, match="missing '\\)'"):
        vnnlib.parse(HEAD + "(assert (<= X_0 1)")
    with pytest.raises(vnnlib.VnnlibError, match="X_7 is not declared"):
        vnnlib.parse(HEAD + "(assert (<= X_7 1))")
    with pytest.raises(vnnlib.VnnlibError, match="expected a number"):
        vnnlib.parse(HEAD + "(assert (<= X_0 abc))")


def test_real_property_matches_its_readme(benchmarks):
    # test/README.md derives these bounds of test_prop.vnnlib (ACAS Xu property 3) by hand:
    # (1500-19791.091)/60261 etc.
    path = os.path.join(benchmarks, "test", "test_prop.vnnlib")
    spec = vnnlib.read(path)
    assert spec.num_inputs == 5
    np.testing.assert_allclose(spec.lower, [-0.30353115613746867, -0.009549296585513092,
                                            0.4933803235848431, 0.3, 0.3])
    np.testing.assert_allclose(spec.upper, [-0.29855281193475053, 0.009549296585513092,
                                            0.49999999998567607, 0.5, 0.5])


def test_real_gz_image_property(benchmarks):
    spec = vnnlib.read(os.path.join(benchmarks, "cora", "vnnlib", "mnist-img0.vnnlib.gz"))
    assert spec.num_inputs == 784 and spec.num_outputs == 10
    assert np.all(np.isfinite(spec.lower)) and np.all(spec.lower <= spec.upper)
