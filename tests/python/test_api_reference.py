"""docs/api-reference.md is what scripts/generate_api_reference.py writes from the stubs and the
headers today, so the committed page cannot fall behind them."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_api_reference", ROOT / "scripts" / "generate_api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_page_matches_the_generator():
    generator = load_generator()
    committed = (ROOT / "docs" / "api-reference.md").read_text(encoding="utf-8")
    assert committed == generator.render(), "run: python3 scripts/generate_api_reference.py"


def test_page_names_the_public_api():
    text = (ROOT / "docs" / "api-reference.md").read_text(encoding="utf-8")
    for name in ("#### RuntimeSession", "#### PersistentValueState", "- `with_persistent_bindings(",
                 "### `onnx_light/runtime/runtime_session.h`", "RuntimeContext: `"):
        assert name in text, name
