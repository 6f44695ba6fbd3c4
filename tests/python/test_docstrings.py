"""Every public member of onnx_light and onnx_light.runtime has a docstring: classes, functions,
methods and properties. pybind11 puts a generated signature line into every __doc__; only the text
after it counts."""

import inspect
import re
import types

import onnx_light
import onnx_light.runtime as runtime

# Members pybind11 generates for enums; their meaning is the enum's.
GENERATED = {"name", "value"}


def written_doc(obj, name: str) -> str:
    lines = []
    for line in (getattr(obj, "__doc__", None) or "").splitlines():
        stripped = line.strip()
        if stripped == "Overloaded function." or re.match(rf"^(\d+\. )?{re.escape(name)}\(.*\)( -> .*)?$", stripped):
            continue
        lines.append(stripped)
    return "\n".join(lines).strip()


def is_method_like(value) -> bool:
    return isinstance(value, (property, types.FunctionType, staticmethod, classmethod)) or \
        type(value).__name__ in ("instancemethod", "builtin_function_or_method")


def undocumented():
    missing = []
    for owner_name, module in (("onnx_light", onnx_light), ("runtime", runtime)):
        for name in dir(module):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                if not (obj.__doc__ or "").strip():
                    missing.append(f"{owner_name}.{name} (module)")
                continue
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            if not written_doc(obj, name):
                missing.append(f"{owner_name}.{name}")
            if not inspect.isclass(obj):
                continue
            is_enum = hasattr(obj, "__members__")
            for attr, value in vars(obj).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                if attr == "__init__" and (is_enum or issubclass(obj, BaseException)
                                           or type(value).__name__ == "wrapper_descriptor"):
                    continue
                if is_enum and attr in GENERATED:
                    continue
                if not is_method_like(value):
                    continue
                target = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                if not written_doc(target, attr):
                    missing.append(f"{owner_name}.{name}.{attr}")
    return missing


def test_every_public_member_has_a_docstring():
    assert undocumented() == []


def test_the_walk_finds_members():
    # A guard against a walk that silently checks nothing.
    assert written_doc(runtime.RuntimeSession.run, "run")
    assert written_doc(runtime.Tensor.shape, "shape")
    assert written_doc(runtime.ValueInfo, "ValueInfo")
    assert written_doc(len, "len")
    assert not written_doc(type("Bare", (), {}), "Bare")
