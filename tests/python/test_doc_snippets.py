"""scripts/run_doc_snippets.py, the runner CI uses on README.md and docs/, on small pages of its own:
it runs a page's python blocks in one namespace, honours the markers, and fails on a broken
snippet, on a block it cannot run and on a skip without a reason."""

import subprocess
import sys
import textwrap
from pathlib import Path

RUNNER = Path(__file__).resolve().parent.parent.parent / "scripts" / "run_doc_snippets.py"


def run_page(tmp_path, text):
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent(text))
    done = subprocess.run([sys.executable, str(RUNNER), page.name], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_a_good_page_passes_with_its_markers(tmp_path):
    code, out = run_page(tmp_path, """\
        # Page

        ```python
        import numpy as np
        import onnx_light.runtime as runtime
        session = runtime.RuntimeSession("model.onnx")
        ```

        <!-- snippet: setup
        x = np.ones((2, 4), np.float32)
        -->
        ```python
        y = np.asarray(session.run({"x": x})["y"])   # names from the block above and the setup
        assert y.shape == (2, 4)
        ```

        ```text
        output, not run
        ```

        <!-- snippet: skip - needs a machine we do not have -->
        ```bash
        exit 1
        ```

        ```bash
        test -f model.onnx
        ```
        """)
    assert code == 0, out
    assert "ran 3 (bash 1, python 2), output 1, skipped 1, failed 0" in out
    assert "skipped 1: needs a machine we do not have (page.md:22)" in out


def test_a_failing_block_and_an_unmarked_untagged_block_fail(tmp_path):
    code, out = run_page(tmp_path, """\
        ```python
        import onnx_light.runtime as runtime
        runtime.RuntimeSession("missing.onnx")
        ```

        ```python
        print("never reached")
        ```

        ```
        some command nobody marked
        ```
        """)
    assert code == 1
    assert "FAILED page.md:1 [python]" in out
    assert "missing.onnx" in out  # the traceback, with the page's own line number:
    assert 'File "page.md", line 3' in out
    assert "not reached: page.md:6 [python]" in out
    assert "FAILED page.md:10 [no tag]" in out
    assert "failed 2, not reached 1" in out


def test_a_skip_needs_a_reason(tmp_path):
    code, out = run_page(tmp_path, """\
        <!-- snippet: skip -->
        ```bash
        true
        ```
        """)
    assert code == 1
    assert "a skip marker needs a reason" in out


def test_a_failing_shell_command_fails(tmp_path):
    code, out = run_page(tmp_path, """\
        ```sh
        onnx-light info no-such-model.onnx
        ```
        """)
    assert code == 1
    assert "FAILED page.md:1 [sh]" in out
    assert "no-such-model.onnx" in out


def test_cpp_blocks_need_the_install_prefix(tmp_path):
    code, out = run_page(tmp_path, """\
        ```cpp
        olr::RuntimeSession session{std::filesystem::path("model.onnx")};
        ```
        """)
    assert code == 1
    assert "needs the install prefix: pass --prefix" in out
