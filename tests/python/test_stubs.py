"""The type stubs ship with the package and describe exactly the runtime module's surface."""

import ast
import inspect
import os

import onnx_light
import onnx_light.runtime as runtime

PACKAGE = os.path.dirname(onnx_light.__file__)
STUB_ONLY_ALIASES = {"ModelSource", "Feed", "Value", "TensorKindName", "Name"}


def stub_tree(*parts):
    with open(os.path.join(PACKAGE, *parts), encoding="utf-8") as f:
        return ast.parse(f.read())


def names_in(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.If):  # version-dependent members
            names |= names_in(node.body)
    return names


def public(names):
    return {n for n in names if not n.startswith("_")}


def test_stub_files_and_marker_are_installed():
    for parts in (("py.typed",), ("runtime.pyi",), ("onnx_py", "_onnxpykernels.pyi")):
        assert os.path.isfile(os.path.join(PACKAGE, *parts)), parts


def test_stub_lists_every_module_member_and_nothing_else():
    tree = stub_tree("runtime.pyi")
    declared = public(names_in(tree.body)) - STUB_ONLY_ALIASES
    actual = public(n for n in dir(runtime) if not inspect.ismodule(getattr(runtime, n)))
    assert declared == actual


def test_stub_classes_match_the_compiled_classes():
    tree = stub_tree("runtime.pyi")
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name in ("RuntimeEventAction", "ErrorCode"):
            continue
        cls = getattr(runtime, node.name)
        declared = public(names_in(node.body))
        actual = public(vars(cls))
        assert declared == actual, node.name
    for enum_name in ("RuntimeEventAction", "ErrorCode"):
        members = set(getattr(runtime, enum_name).__members__)
        (enum_stub,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == enum_name]
        assert names_in(enum_stub.body) == members, enum_name


def test_every_stubbed_function_and_class_has_a_docstring():
    tree = stub_tree("runtime.pyi")
    assert ast.get_docstring(tree)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            assert ast.get_docstring(node), node.name
        if isinstance(node, ast.FunctionDef):
            assert ast.get_docstring(node), node.name
