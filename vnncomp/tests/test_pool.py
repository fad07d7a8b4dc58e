"""Memory planning of the validating workers (vnncomp.pool), without starting any."""

import gzip
import signal
import threading
import time

from vnncomp import pool

GIB = 1 << 30


def test_mem_available_reads_meminfo(tmp_path):
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24683520 kB\nMemFree:        21683520 kB\n"
                    "MemAvailable:   23852032 kB\n")
    assert pool.mem_available(str(info)) == 23852032 * 1024
    info.write_text("MemTotal:       24683520 kB\n")
    assert pool.mem_available(str(info)) is None
    assert pool.mem_available(str(tmp_path / "absent")) is None


def test_model_bytes_is_the_uncompressed_size(tmp_path):
    data = bytes(range(256)) * 4000
    plain, packed = tmp_path / "m.onnx", tmp_path / "m.onnx.gz"
    plain.write_bytes(data)
    with gzip.open(packed, "wb") as f:
        f.write(data)
    assert pool.model_bytes(str(plain)) == len(data)
    assert pool.model_bytes(str(packed)) == len(data)
    assert pool.model_bytes(str(tmp_path / "absent.onnx")) == 0


def test_plan_fits_the_largest_models_side_by_side():
    one = pool.cost(GIB)  # a worker validating a 1 GiB model
    small = pool.cost(1 << 20)
    # Room for three of the largest: three workers of eight.
    assert pool.plan([one] * 10 + [small] * 50, 3 * one + 1, 8) == 3
    # Small models: every job.
    assert pool.plan([small] * 50, 8 * GIB, 8) == 8
    # A model larger than all the memory still gets one worker.
    assert pool.plan([pool.cost(64 * GIB)], 4 * GIB, 8) == 1
    # Unknown free memory, or nothing to validate: the jobs asked for.
    assert pool.plan([one], None, 4) == 4
    assert pool.plan([], GIB, 4) == 4


def test_cost_counts_the_stacked_samples():
    # 512 MiB for the worker, six copies of a 100 MiB model, and the float64 vmap of 5 samples
    # of 300 MiB activations each (3 GiB // 600 MiB = 5).
    mib = 1 << 20
    assert pool.cost(100 * mib, 300 * mib) == 512 * mib + 600 * mib + 2 * 300 * mib * 5
    assert pool.cost(100 * mib) == 512 * mib + 600 * mib


def test_budget_lets_a_model_wait_until_it_fits():
    budget = pool.MemoryBudget(10)
    budget.acquire(6)
    started = threading.Event()

    def second():
        budget.acquire(6)  # 6 + 6 > 10: waits for the first to finish
        started.set()
        budget.release(6)

    t = threading.Thread(target=second)
    t.start()
    time.sleep(0.2)
    assert not started.is_set()
    budget.release(6)
    t.join(5)
    assert started.is_set()
    budget.acquire(50)  # alone, a model runs whatever its size
    budget.release(50)
    assert budget.used == 0


def test_a_kernel_kill_is_named():
    assert "out-of-memory" in pool.crash_text(-signal.SIGKILL, "")
    assert pool.crash_text(-signal.SIGSEGV, "Fatal Python error: Segmentation fault") == (
        "worker crashed (signal 11): Fatal Python error: Segmentation fault")
    assert pool.crash_text(3, "") == "worker crashed (exit code 3)"
