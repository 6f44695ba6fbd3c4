"""A bounded, seeded slice of the whole-pipeline probe (tests/fuzz/model_probe.py): corrupted and
hostile models and edge-valued feeds go through RuntimeSession(bytes) and run in a worker process;
every outcome must be a clean run or a documented exception (no crash, hang or memory blow-up)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))

import model_probe  # noqa: E402


def test_probe_slice_has_no_crash_hang_or_blow_up():
    result = model_probe.run(seed=2026, probes=300, time_budget=120.0, save=None)
    findings = "\n".join(f"#{n} {name} / {mutation}: {outcome}: {detail}"
                         for n, name, mutation, outcome, detail in result["findings"])
    assert not result["findings"], f"unacceptable outcomes:\n{findings}"
    # The slice did real work: it ran, and both clean runs and refusals occurred.
    assert result["probes"] >= 100, result
    assert result["counts"].get("ok", 0) > 0 and result["counts"].get("error", 0) > 0, result
    # The never-ending Loop is stopped by the context's run timeout, as an error.
    assert result["by_mutation"]["endless_loop"] == {"error": len(range(0, result["probes"], 50))}
