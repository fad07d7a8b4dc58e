from vnncomp import report
from vnncomp.discover import Entry


def rows():
    e = [Entry("b1", "m1.onnx", "/x/m1.onnx"), Entry("b1", "m2.onnx", "/x/m2.onnx"),
         Entry("b2", "m3|x.onnx", "/x/m3.onnx"), Entry("b2", "gone.onnx", "/x/g.onnx")]
    return [report.make_row(e[1], status="fail", error="vmap: max error 1 > 1e-05", vmap="fail"),
            report.make_row(e[0], status="pass", max_error_cpu=1e-7, nodes_before=5,
                            nodes_after=3, convert_ms=2.5, vmap="ok", trace="ok", export="ok",
                            torch_export="ok", meta_device="n/a"),
            report.make_row(e[2], status="error", error="timeout after 5 s"),
            report.make_row(e[3], status="skipped", error="missing")]


def test_json_shape_and_summary():
    doc = report.to_json(rows(), {"device": "cpu"})
    assert set(doc) == {"results", "summary", "meta"}
    assert doc["summary"] == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert [r["model"] for r in doc["results"]] == ["m1.onnx", "m2.onnx", "gone.onnx", "m3|x.onnx"]
    assert list(doc["results"][0]) == list(report.FIELDS)
    assert report.summary_line(doc["summary"]) == "1 passed, 2 failed"


def test_markdown_has_totals_and_escapes():
    md = report.to_markdown(report.to_json(rows(), {"device": "cpu", "tolerance": 1e-5}))
    assert md.startswith("# VNN-COMP regression report\n\n1 passed, 2 failed (1 fail, 1 error, ")
    assert "| b1 | 2 | 1 | 1 | 0 | 0 | 2 | 0.0 |" in md
    assert "| b2 | 2 | 0 | 0 | 1 | 1 | 0 | 0.0 |" in md
    assert "| **total** | 4 | 1 | 1 | 1 | 1 | 2 | 0.0 |" in md
    assert "| b2 | m3\\|x.onnx |" in md
    assert "| b1 | m1.onnx | 5 | 3 | 2.5 | pass | 1.00e-07 |  | ok | ok | ok | ok | n/a |" in md
    assert "Skipped (1, listed in instances.csv but not on disk): b2/gone.onnx" in md


def test_merge_sorts_and_recounts():
    r = rows()
    a, b = report.to_json(r[:2], {"shard": "0/2"}), report.to_json(r[2:], {"shard": "1/2"})
    merged = report.merge([b, a])
    assert merged["results"] == report.to_json(r)["results"]
    assert merged["summary"] == report.to_json(r)["summary"]
    assert "shard" not in merged["meta"] and merged["meta"]["merged"] == 2
