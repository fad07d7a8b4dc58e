"""benchmarks/propdag_vnncomp_report.py on hand-made inputs: a published table of four instances
and propdag's lines for them, with the counts worked out by hand."""

import os
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(REPO, "benchmarks", "propdag_vnncomp_report.py")

HEAD = ("benchmark,onnx,vnnlib,timeout,alpha_beta_crown_result,alpha_beta_crown_time,"
        "neuralsat_result,neuralsat_time,pyrat_result,pyrat_time,nnenum_result,nnenum_time,"
        "marabou_result,marabou_time\n")
# a/m1 p1: all tools say holds; a/m1 p2: violated (CROWN at 70 s, past 60);
# a/m2 p1: tools disagree (no consensus); b/m3 p1: nobody decided.
PUBLISHED = HEAD + """a,onnx/m1.onnx,vnnlib/p1.vnnlib,60,holds,1.0,holds,2.0,-,,-,,-,
a,onnx/m1.onnx,vnnlib/p2.vnnlib,120,violated,70.0,violated,3.0,-,,-,,-,
a,onnx/m2.onnx,vnnlib/p1.vnnlib,60,holds,5.0,violated,2.0,-,,-,,-,
b,onnx/m3.onnx,vnnlib/p1.vnnlib,60,unknown,1.0,timeout,60.0,-,,-,,-,
"""


def run(lines):
    with tempfile.TemporaryDirectory() as tmp:
        pub, out = os.path.join(tmp, "pub.csv"), os.path.join(tmp, "lines.txt")
        open(pub, "w").write(PUBLISHED)
        open(out, "w").write(lines)
        p = subprocess.run(["/usr/bin/python3", REPORT, out, "--published", pub],
                           capture_output=True, text=True)
    return p.returncode, p.stdout


def row(text, name):
    return next(line.split()[1:] for line in text.split("\n") if line.startswith(name + " "))


def test_counts_and_no_contradiction():
    rc, out = run("a m1.onnx.gz p1.vnnlib.gz verified 0.50\n"
                  "a m1.onnx.gz p2.vnnlib.gz falsified 12.00 confirmed\n"
                  "a m2.onnx p1.vnnlib verified 3.00\n"
                  "b m3.onnx p1.vnnlib error: no bound rule for op Erf 0.10\n")
    assert rc == 0, out
    # n, verified, falsified, unknown, error, <= 10 s, <= 60 s, CROWN <= 60 s
    assert row(out, "a") == ["3", "2", "1", "0", "0", "2", "3", "2"]
    assert row(out, "b") == ["1", "0", "0", "0", "1", "0", "0", "0"]
    assert row(out, "all") == ["4", "2", "1", "0", "1", "2", "3", "2"]
    assert "contradictions with the published consensus: 0" in out


def test_contradiction_is_reported():
    rc, out = run("a m1.onnx p1.vnnlib falsified 1.00\na m1.onnx p2.vnnlib unknown 60.00\n")
    assert rc == 1
    assert "contradictions with the published consensus: 1" in out
    assert "a m1.onnx p1.vnnlib: propdag falsified, consensus holds" in out
