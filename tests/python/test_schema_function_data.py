"""The schema function bodies compiled into the runtime (src/functions/schema_function_data.cc)
are what scripts/generate_function_bodies.py makes from the installed onnx: after a bump of the
pinned onnx, this fails until the file is regenerated and committed."""

from __future__ import annotations

import os
import subprocess
import sys

import onnx
import onnx.defs

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "generate_function_bodies.py")
CHECKED_IN = os.path.join(ROOT, "src", "functions", "schema_function_data.cc")


def test_checked_in_bodies_match_the_installed_onnx(tmp_path):
    result = subprocess.run([sys.executable, SCRIPT, "--output-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "schema_function_data.cc", encoding="utf-8") as f:
        fresh = f.read()
    with open(CHECKED_IN, encoding="utf-8") as f:
        checked_in = f.read()
    assert fresh == checked_in, (
        f"src/functions/schema_function_data.cc differs from what onnx {onnx.__version__} gives; "
        "run `python3 scripts/generate_function_bodies.py` and commit the result")


def test_every_body_of_the_installed_onnx_is_listed():
    with open(CHECKED_IN, encoding="utf-8") as f:
        text = f.read()
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.has_function or schema.has_context_dependent_function:
            assert f'"{schema.name}"sv, {schema.since_version},' in text, (schema.name, schema.since_version)
