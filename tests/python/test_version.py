"""One version source: CMakeLists.txt's project() line.

CMake writes it into onnx_light/runtime/version.h (ONNX_LIGHT_VERSION_STRING), the extension
reports that string as runtime.__version__, onnx_light.__version__ is the same, and pyproject.toml
reads the distribution's version from the same line with a regex.
"""

import importlib.metadata
import pathlib
import re
import tomllib

import onnx_light
import onnx_light.runtime as runtime

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"^project\(onnx_light VERSION ([0-9.]+) ", text, re.M).group(1)


def test_package_and_module_report_the_project_version():
    assert runtime.__version__ == _project_version()
    assert onnx_light.__version__ == runtime.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", runtime.__version__)


def test_pyproject_reads_the_same_line():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    provider = pyproject["tool"]["scikit-build"]["metadata"]["version"]
    assert provider["provider"] == "scikit_build_core.metadata.regex"
    text = (ROOT / provider["input"]).read_text()
    assert re.search(provider["regex"], text).group("value") == _project_version()


def test_installed_distribution_matches_when_present():
    try:
        installed = importlib.metadata.version("onnx-light-runtime")
    except importlib.metadata.PackageNotFoundError:
        return  # a developer build on PYTHONPATH: no distribution metadata to compare
    assert installed == runtime.__version__
