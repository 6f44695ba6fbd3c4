"""Shared pytest fixtures: a fresh RuntimeContext per test."""

import pytest

import onnx_light.runtime as runtime


@pytest.fixture
def context():
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))


@pytest.fixture
def events_context():
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
