"""propdag's verdicts (the per-instance lines of benchmarks/propdag_verify_vnncomp.sh --out FILE)
beside the published VNN-COMP 2024 answers (published_2024_results.csv): per benchmark, the
instances run, decided by propdag (verified / falsified) overall and within 10 s and 60 s of the
whole CLI call, decided by alpha-beta-CROWN within 60 s, and contradictions: propdag verified
where the consensus says violated, or falsified where it says holds. The consensus of an instance
is the answer every tool that decided it gave (none when they disagree or none decided).

    /usr/bin/python3 benchmarks/propdag_vnncomp_report.py LINES_FILE [--published CSV] [--md]

Exit status 1 when there is a contradiction."""

import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PUBLISHED = os.path.join(HERE, "..", "..", "shared", "vnncomp2024", "published_2024_results.csv")
TOOLS = ("alpha_beta_crown", "neuralsat", "pyrat", "nnenum", "marabou")
VERDICT = {"verified": "holds", "falsified": "violated"}


def strip(name):
    name = os.path.basename(name)
    return name[:-3] if name.endswith(".gz") else name


def read_lines(path):
    """{(benchmark, model, property): (verdict, seconds)} from the script's output lines."""
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) < 5:
            continue
        if f[-1] in ("confirmed", "missed"):
            f = f[:-1]
        verdict = "error" if f[3] == "error:" else f[3]
        try:
            seconds = float(f[-1])
        except ValueError:
            continue
        out[(f[0], strip(f[1]), strip(f[2]))] = (verdict, seconds)
    return out


def read_published(path):
    """{(benchmark, model, property): row}."""
    out = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            out[(row["benchmark"], strip(row["onnx"]), strip(row["vnnlib"]))] = row
    return out


def consensus(row):
    answers = {row[t + "_result"] for t in TOOLS if row.get(t + "_result") in ("holds", "violated")}
    return answers.pop() if len(answers) == 1 else None


def crown_decided(row, limit):
    try:
        seconds = float(row["alpha_beta_crown_time"])
    except (TypeError, ValueError):
        return False
    return row["alpha_beta_crown_result"] in ("holds", "violated") and seconds <= limit


def tally(lines, published):
    """Per benchmark: counts, and the list of contradictions."""
    rows, bad = {}, []
    for key, (verdict, seconds) in sorted(lines.items()):
        bench = key[0]
        r = rows.setdefault(bench, dict(n=0, verified=0, falsified=0, unknown=0, error=0,
                                        d10=0, d60=0, crown60=0, consensus=0))
        r["n"] += 1
        r[verdict if verdict in r else "unknown"] += 1
        decided = verdict in VERDICT
        r["d10"] += decided and seconds <= 10
        r["d60"] += decided and seconds <= 60
        row = published.get(key)
        if row is None:
            continue
        r["crown60"] += crown_decided(row, 60)
        agreed = consensus(row)
        r["consensus"] += agreed is not None
        if decided and agreed is not None and VERDICT[verdict] != agreed:
            bad.append(f"{' '.join(key)}: propdag {verdict}, consensus {agreed}")
    return rows, bad


def table(rows, md):
    head = ["benchmark", "n", "verified", "falsified", "unknown", "error", "decided <= 10 s",
            "decided <= 60 s", "a,b-CROWN <= 60 s"]
    keys = ["n", "verified", "falsified", "unknown", "error", "d10", "d60", "crown60"]
    total = {k: sum(r[k] for r in rows.values()) for k in keys}
    body = [[b] + [str(rows[b][k]) for k in keys] for b in sorted(rows)]
    body.append(["all"] + [str(total[k]) for k in keys])
    if md:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in body]
    else:
        widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
        out = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
               for r in [head] + body]
    return "\n".join(out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("lines")
    p.add_argument("--published", default=PUBLISHED)
    p.add_argument("--md", action="store_true", help="a Markdown table")
    a = p.parse_args(argv)
    lines = read_lines(a.lines)
    published = read_published(a.published)
    rows, bad = tally(lines, published)
    print(table(rows, a.md))
    missing = sum(1 for k in lines if k not in published)
    if missing:
        print(f"{missing} instance(s) without a published row")
    print(f"contradictions with the published consensus: {len(bad)}")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
