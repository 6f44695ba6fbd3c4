"""Shared pytest fixtures: a fresh RuntimeContext per test."""

import pytest

import onnx_light.runtime as runtime


def pytest_configure(config):
    # An exception in a test's own thread is only a warning by default, so a test whose worker
    # threads all raised would pass: make it fail the test.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture
def context():
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))


@pytest.fixture
def events_context():
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
