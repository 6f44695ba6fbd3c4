#!/usr/bin/env python3
"""Writes docs/api-reference.md from the Python type stubs and the C++ public headers.

    python3 scripts/generate_api_reference.py [--check]

Python: every class, function, method, property, enum member and documented constant of
python/onnx_light/runtime.pyi, with its signature as the stub writes it and the first paragraph
of its docstring. C++: for each header of include/onnx_light/runtime/, its opening comment and
every declaration preceded by a ``///`` comment, named with its enclosing class. Stdlib only; the
stubs are parsed, not imported, so no build is needed. ``--check`` compares instead of writing
and exits 1 when the committed page is stale (tests/python/test_api_reference.py runs it).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "python" / "onnx_light" / "runtime.pyi"
HEADERS = ROOT / "include" / "onnx_light" / "runtime"
OUTPUT = ROOT / "docs" / "api-reference.md"


def escape(text: str) -> str:
    """Markdown-safe prose: `<` outside code spans would open an HTML tag (Conv/float32/<path>)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;")
    return "`".join(parts)


def first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    paragraph = doc.strip().split("\n\n")[0]
    return escape(" ".join(paragraph.split()).replace("``", "`"))


def docstring_after(body: list[ast.stmt], index: int) -> str | None:
    """The string literal right after body[index] (how stubs document attributes)."""
    if index + 1 < len(body):
        node = body[index + 1]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def signature(node: ast.FunctionDef, drop_self: bool) -> str:
    args = node.args
    if drop_self and args.args and args.args[0].arg in ("self", "cls"):
        # Defaults belong to the last arguments, so dropping the first keeps them aligned.
        args = ast.arguments(posonlyargs=args.posonlyargs, args=args.args[1:], vararg=args.vararg,
                             kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults, kwarg=args.kwarg,
                             defaults=args.defaults)
    text = f"{node.name}({ast.unparse(args)})"
    if node.returns is not None:
        text += f" -> {ast.unparse(node.returns)}"
    return text


def decorators(node: ast.FunctionDef) -> set[str]:
    return {ast.unparse(d) for d in node.decorator_list}


def member_lines(cls: ast.ClassDef) -> list[str]:
    lines = []
    for index, node in enumerate(cls.body):
        if isinstance(node, ast.FunctionDef):
            if node.name.startswith("_") and not node.name.endswith("__"):
                continue  # private diagnostics
            marks = decorators(node)
            doc = first_paragraph(ast.get_docstring(node))
            if "property" in marks:
                kind = f"{node.name}: {ast.unparse(node.returns)}" if node.returns is not None else node.name
                lines.append(f"- property `{kind}`" + (f": {doc}" if doc else ""))
                continue
            if any(m.endswith(".setter") for m in marks):
                continue
            prefix = "static " if "staticmethod" in marks else "classmethod " if "classmethod" in marks else ""
            lines.append(f"- `{prefix}{signature(node, drop_self=not prefix.startswith('static'))}`"
                         + (f": {doc}" if doc else ""))
        elif isinstance(node, (ast.AnnAssign, ast.Assign)):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            text = ast.unparse(target)
            if isinstance(node, ast.AnnAssign):
                text += f": {ast.unparse(node.annotation)}"
            if node.value is not None:
                text += f" = {ast.unparse(node.value)}"
            doc = first_paragraph(docstring_after(cls.body, index))
            lines.append(f"- `{text}`" + (f": {doc}" if doc else ""))
    return lines


def python_section() -> list[str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    out = ["## Python: `onnx_light.runtime`", "",
           f"From `{STUB.relative_to(ROOT)}`. {first_paragraph(ast.get_docstring(tree))}", ""]
    constants, functions, classes = [], [], []
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ClassDef):
            classes.append(node)
        elif isinstance(node, ast.FunctionDef):
            functions.append(node)
        elif isinstance(node, (ast.AnnAssign, ast.Assign)):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            text = ast.unparse(target)
            if isinstance(node, ast.AnnAssign):
                text += f": {ast.unparse(node.annotation)}"
            doc = first_paragraph(docstring_after(tree.body, index))
            if doc:
                constants.append(f"- `{text}`: {doc}")
    out += ["### Module constants and types", "", *constants, "", "### Functions", ""]
    for node in functions:
        doc = first_paragraph(ast.get_docstring(node))
        out.append(f"- `{signature(node, drop_self=False)}`" + (f": {doc}" if doc else ""))
    out.append("")
    out += ["### Classes", "", ", ".join(f"[`{c.name}`](#{c.name.lower()})" for c in classes), ""]
    for cls in classes:
        bases = ", ".join(ast.unparse(b) for b in cls.bases)
        out += [f"#### {cls.name}", "", f"`class {cls.name}" + (f"({bases})`" if bases else "`"), ""]
        doc = first_paragraph(ast.get_docstring(cls))
        if doc:
            out += [doc, ""]
        members = member_lines(cls)
        if members:
            out += [*members, ""]
    return out


BODY_OPEN = re.compile(r"\)\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:final\s*)?\{")
INITIALIZERS = re.compile(r"\)\s*:\s*[A-Za-z_]\w*[({]")
CLASS_OPEN = re.compile(r"^(\s*)(?:class|struct)\s+(?:ONNX_LIGHT_API\s+)?(\w+)(?:\s+final)?[^;]*\{\s*$")


def header_entries(path: Path) -> tuple[str, list[str]]:
    lines = path.read_text(encoding="utf-8").split("\n")
    intro = []
    for line in lines[1:]:
        if line.startswith("//") and not line.startswith("///"):
            intro.append(line[2:].strip())
        else:
            break
    entries, scopes, comment = [], [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        opened = CLASS_OPEN.match(line)
        if scopes and stripped.startswith("};") and len(line) - len(line.lstrip()) == scopes[-1][0]:
            scopes.pop()
        if stripped.startswith("///"):
            comment.append(stripped[3:].strip())
            i += 1
            continue
        if comment:
            declaration = []
            j = i
            while j < len(lines) and j < i + 8:
                declaration.append(lines[j].strip())
                if ";" in lines[j] or lines[j].rstrip().endswith("{"):
                    break
                j += 1
            text = " ".join(declaration)
            # Cut an inline body or a constructor's initializers; `= {}` defaults are kept.
            cuts = [m.start() + 1 for m in (BODY_OPEN.search(text), INITIALIZERS.search(text)) if m]
            if cuts:
                text = text[:min(cuts)]
            text = text.removesuffix("{").strip().rstrip(";").strip()
            text = " ".join(text.replace("ONNX_LIGHT_API ", "").split())
            owner = "::".join(name for _, name in scopes)
            label = f"{owner}: `{text}`" if owner else f"`{text}`"
            entries.append(f"- {label}: {escape(' '.join(comment))}")
            comment = []
        if opened:
            scopes.append((len(opened.group(1)), opened.group(2)))
        i += 1
    return escape(" ".join(intro)), entries


def cpp_section() -> list[str]:
    out = ["## C++: `onnx_light::runtime`", "",
           f"From the `///` comments of `{HEADERS.relative_to(ROOT)}/`; "
           "`#include <onnx_light/runtime/runtime.h>` includes every header.", ""]
    for path in sorted(HEADERS.glob("*.h")):
        intro, entries = header_entries(path)
        if not intro and not entries:
            continue
        out += [f"### `onnx_light/runtime/{path.name}`", ""]
        if intro:
            out += [intro, ""]
        if entries:
            out += [*entries, ""]
    return out


def render() -> str:
    lines = ["# API reference", "",
             "<!-- Generated by scripts/generate_api_reference.py from python/onnx_light/runtime.pyi and "
             "include/onnx_light/runtime/*.h: edit those, then run the script. -->", "",
             "Every public name of the Python module and the C++ headers, with its signature and the first "
             "paragraph of its documentation. The pages under [docs/](.) explain how the pieces work "
             "together; this one is generated from the type stubs and the headers, and a test fails when it "
             "falls behind them.", "",
             "- [Python: `onnx_light.runtime`](#python-onnx_lightruntime)",
             "- [C++: `onnx_light::runtime`](#c-onnx_lightruntime)", ""]
    lines += python_section()
    lines += cpp_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api-reference.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python3 scripts/generate_api_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
