#!/usr/bin/env python3
"""Runs every fenced code block of README.md and docs/*.md, so that no snippet goes stale.

    python3 scripts/run_doc_snippets.py [--prefix build/prefix] [FILE.md ...]

With no FILE, the README and every page under docs/. The installed Python package must be
importable (pip install ., or PYTHONPATH=build/dev/python_package); C++ and CMake blocks build
against the install prefix given by --prefix (its lib/pkgconfig/onnx_light.pc and CMake package).

The rules, by the block's tag:

- ``python``: the python blocks of one page run in order in one fresh process, in one namespace,
  so a later block may use the names an earlier one defined (as a reader would, going down the
  page). A failing block stops its page; the blocks after it are reported as not reached.
- ``cpp``: each block is a program of its own. A block with ``int main`` compiles as it is;
  any other block is a fragment: its leading ``#include`` and ``namespace x = ...;`` lines stay at
  file scope and the rest becomes the body of ``main`` (classes defined there are local classes).
  Every C++ block gets ``<onnx_light/runtime/runtime.h>``, the common standard headers,
  ``namespace olr = onnx_light::runtime;`` and ``using namespace std::chrono_literals;`` first. It
  is compiled with ``pkg-config --cflags --libs onnx_light`` from the prefix, then run.
- ``bash`` / ``sh``: run by ``bash -euo pipefail``, ``python`` and (when not installed)
  ``onnx-light`` resolving to this interpreter and its package.
- ``cmake``: the block is appended to a host project (one executable target ``app`` whose
  ``main.cc`` includes the runtime and prints its version), configured against the prefix, built
  and run.
- ``text``: output or a listing, not run. A block without a tag, or with any other tag, fails
  unless a marker says otherwise.

Every block runs in a temporary folder of its page that holds the fixtures written by
scripts/doc_snippet_fixtures.py: ``model.onnx`` (x [batch, 4] -> y), ``big.onnx`` (the same), ``scale.onnx`` (a custom operator),
``decoder.onnx`` (a one-layer decoder: x, past_key, past_value -> y, present_key, present_value),
``llama.onnx`` (an exported decoder from tests/data/decoders) and ``export/model.onnx`` (one with
external data).

Markers are HTML comments on the lines right before a block's fence (blank lines between are
allowed); GitHub does not show them:

- ``<!-- snippet: skip - REASON -->`` does not run the block; the reason is required and printed
  in the summary.
- ``<!-- snippet: setup`` ... ``-->`` gives code (of the block's language) that runs first: for
  python in the page's namespace before the block, for cpp at the start of ``main`` before the
  fragment, for bash before the commands. Setup defines what the page takes as given (a session,
  feeds, a token loop) without repeating it in every block.
- ``<!-- snippet: wrap`` ... ``-->`` (cpp) is a whole program in which the line ``// @snippet``
  is replaced by the block, for fragments that belong inside a function other than main (the
  body of a kernel's Run).

The summary lists how many blocks ran, were output, and were skipped (each with its reason); the
exit status is 1 when any block failed or could not be run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "doc_snippet_fixtures.py"
TIMEOUT = 180  # seconds per page (python) or per block (others)

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
MARKER_START = "<!-- snippet:"

CPP_PRELUDE = """\
#include <onnx_light/runtime/runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace olr = onnx_light::runtime;
using namespace std::chrono_literals;
"""

CMAKE_HOST = """\
cmake_minimum_required(VERSION 3.20)
project(doc_snippet CXX)
set(CMAKE_CXX_STANDARD 20)
add_executable(app main.cc)
"""

CMAKE_MAIN = """\
#include <onnx_light/runtime/runtime.h>
#include <onnx_light/runtime/version.h>

#include <cstdio>

int main() { std::printf("onnx-light %s\\n", ONNX_LIGHT_VERSION_STRING); }
"""

# Runs a page's python blocks in one namespace; a block's line numbers in tracebacks are the
# page's own, since each is compiled with as many leading newlines as precede it.
PYTHON_DRIVER = """\
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for index, block in enumerate(blocks):
    try:
        if block["setup"]:
            exec(compile(block["setup"], block["where"] + " (setup)", "exec"), namespace)
        code = "\\n" * block["line"] + block["code"]
        exec(compile(code, block["page"], "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"@@failed {index}", flush=True)
        sys.exit(1)
    print(f"@@ok {index}", flush=True)
"""


@dataclasses.dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    tag: str
    code: str
    marker: str | None = None  # skip / setup / wrap
    marker_text: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


class SnippetError(Exception):
    pass


def parse_marker(lines: list[str], fence_index: int) -> tuple[str | None, str]:
    """The marker comment ending right before the fence (blank lines between allowed)."""
    i = fence_index - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0 or not lines[i].rstrip().endswith("-->"):
        return None, ""
    end = i
    while i >= 0 and "<!--" not in lines[i]:
        i -= 1
    if i < 0 or not lines[i].lstrip().startswith(MARKER_START):
        return None, ""
    text = "\n".join(lines[i:end + 1]).strip()
    text = text[len(MARKER_START):-len("-->")]
    first, _, rest = text.partition("\n")
    words = first.split(None, 1)
    kind = words[0] if words else ""
    if kind not in ("skip", "setup", "wrap"):
        raise SnippetError(f"line {i + 1}: unknown snippet marker {kind!r} (skip, setup or wrap)")
    if kind == "skip":
        reason = " ".join((words[1] if len(words) > 1 else "").split() + rest.split()).lstrip("-—: ").strip()
        if not reason:
            raise SnippetError(f"line {i + 1}: a skip marker needs a reason: <!-- snippet: skip - why -->")
        return kind, reason
    body = (words[1] + "\n" if len(words) > 1 else "") + rest
    return kind, body.strip("\n")


def extract(path: Path) -> list[Block]:
    page = os.path.relpath(path, ROOT) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, tag = match.group(2), match.group(3).lower()
        start = i
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        if i == len(lines):
            raise SnippetError(f"{page}:{start + 1}: code block without a closing fence")
        indent = len(match.group(1))
        body = [line[indent:] if line[:indent].isspace() else line for line in lines[start + 1:i]]
        try:
            kind, text = parse_marker(lines, start)
        except SnippetError as e:
            raise SnippetError(f"{page}:{e}") from None
        blocks.append(Block(page, start + 1, tag, "\n".join(body) + "\n", kind, text))
        i += 1
    return blocks


@dataclasses.dataclass
class Result:
    block: Block
    status: str  # ran, output, skipped, failed, not reached
    detail: str = ""
    seconds: float = 0.0


class Runner:
    def __init__(self, prefix: Path | None, workdir: Path, verbose: bool):
        self.prefix = prefix
        self.workdir = workdir
        self.verbose = verbose
        self.fixtures: Path | None = None
        self.bin = workdir / "bin"
        self.bin.mkdir()
        self.env = dict(os.environ, MPLBACKEND="Agg")
        self.env["PATH"] = f"{self.bin}{os.pathsep}{self.env.get('PATH', '')}"
        (self.bin / "python").symlink_to(sys.executable)
        (self.bin / "python3").symlink_to(sys.executable)
        if not shutil.which("onnx-light"):
            shim = self.bin / "onnx-light"
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m onnx_light.cli "$@"\n')
            shim.chmod(0o755)
        self.cxx = [c for c in (shutil.which("ccache"),) if c] + [os.environ.get("CXX", "c++")]

    def folder(self, page: str) -> Path:
        """A fresh folder holding the fixtures, one per page and language."""
        if self.fixtures is None:
            self.fixtures = self.workdir / "fixtures"
            self.run_checked([sys.executable, str(FIXTURES), str(self.fixtures)], cwd=self.workdir,
                             what="writing the fixtures")
        name = re.sub(r"[^A-Za-z0-9]+", "_", page)
        folder = Path(tempfile.mkdtemp(prefix=name + "-", dir=self.workdir))
        shutil.copytree(self.fixtures, folder, dirs_exist_ok=True)
        return folder

    def run_checked(self, command, cwd, what, timeout=TIMEOUT):
        try:
            done = subprocess.run(command, cwd=cwd, env=self.env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SnippetError(f"{what}: timed out after {timeout} s") from None
        if done.returncode != 0:
            raise SnippetError(f"{what} failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
        return done

    # python ---------------------------------------------------------------------------------
    def run_python_page(self, blocks: list[Block]) -> list[Result]:
        folder = self.folder(blocks[0].page)
        payload = [{"page": b.page, "where": b.where, "line": b.line, "code": b.code,
                    "setup": b.marker_text if b.marker == "setup" else ""} for b in blocks]
        (folder / "_blocks.json").write_text(json.dumps(payload))
        (folder / "_driver.py").write_text(PYTHON_DRIVER)
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "_driver.py", "_blocks.json"], cwd=folder, env=self.env,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as e:
            output = f"{e.stdout or ''}{e.stderr or ''}\ntimed out after {TIMEOUT} s"
            code = -1
        seconds = time.perf_counter() - start
        finished = {int(m) for m in re.findall(r"^@@ok (\d+)$", output, re.M)}
        results = []
        for index, block in enumerate(blocks):
            if index in finished:
                results.append(Result(block, "ran", seconds=seconds / len(blocks)))
            elif not results or results[-1].status == "ran":
                results.append(Result(block, "failed", output if code else "no completion reported"))
            else:
                results.append(Result(block, "not reached", "an earlier python block of the page failed"))
        return results

    # C++ ------------------------------------------------------------------------------------
    def need_prefix(self, block: Block) -> Path:
        if self.prefix is None:
            raise SnippetError(f"a {block.tag} block needs the install prefix: pass --prefix")
        return self.prefix

    def cpp_source(self, block: Block) -> str:
        if block.marker == "wrap":
            if "// @snippet" not in block.marker_text:
                raise SnippetError("a wrap marker needs a '// @snippet' line")
            return CPP_PRELUDE + "\n" + block.marker_text.replace("// @snippet", block.code) + "\n"
        if re.search(r"\bint\s+main\s*\(", block.code):
            return CPP_PRELUDE + "\n" + block.code
        lines = block.code.split("\n")
        head = 0
        while head < len(lines) and (not lines[head].strip() or lines[head].startswith("#include")
                                     or re.match(r"namespace\s+\w+\s*=", lines[head])):
            head += 1
        setup = block.marker_text if block.marker == "setup" else ""
        body = "\n".join(lines[head:])
        return (CPP_PRELUDE + "\n".join(lines[:head]) + "\n\nint main() {\n" + setup + "\n" + body
                + "\n  return 0;\n}\n")

    def run_cpp(self, block: Block) -> None:
        prefix = self.need_prefix(block)
        folder = self.folder(block.page)
        (folder / "snippet.cc").write_text(self.cpp_source(block))
        pc = dict(self.env, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "onnx_light"], env=pc, capture_output=True,
                               text=True, check=True).stdout.split()
        self.run_checked([*self.cxx, "-std=c++20", "snippet.cc", "-o", "snippet", *flags,
                          f"-Wl,-rpath,{prefix / 'lib'}"], cwd=folder, what="compiling")
        self.run_checked([str(folder / "snippet")], cwd=folder, what="running")

    def run_cmake(self, block: Block) -> None:
        prefix = self.need_prefix(block)
        folder = self.folder(block.page)
        (folder / "CMakeLists.txt").write_text(CMAKE_HOST + block.code)
        (folder / "main.cc").write_text(CMAKE_MAIN)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        env_cxx = {"CMAKE_CXX_COMPILER_LAUNCHER": "ccache"} if shutil.which("ccache") else {}
        defines = [f"-D{k}={v}" for k, v in env_cxx.items()]
        self.run_checked(["cmake", "-S", ".", "-B", "build", *generator, f"-DCMAKE_PREFIX_PATH={prefix}",
                          *defines], cwd=folder, what="configuring")
        self.run_checked(["cmake", "--build", "build"], cwd=folder, what="building")
        self.run_checked([str(folder / "build" / "app")], cwd=folder, what="running")

    # shell ----------------------------------------------------------------------------------
    def run_shell(self, block: Block) -> None:
        folder = self.folder(block.page)
        setup = block.marker_text if block.marker == "setup" else ""
        (folder / "snippet.sh").write_text(setup + "\n" + block.code)
        self.run_checked(["bash", "-euo", "pipefail", "snippet.sh"], cwd=folder, what="running")

    # all ------------------------------------------------------------------------------------
    def run(self, blocks: list[Block]) -> list[Result]:
        results: list[Result] = []
        python_pages: dict[str, list[Block]] = {}
        for block in blocks:
            if block.marker == "skip":
                results.append(Result(block, "skipped", block.marker_text))
            elif block.tag == "text":
                results.append(Result(block, "output"))
            elif block.tag == "python":
                python_pages.setdefault(block.page, []).append(block)
            elif block.marker == "wrap" and block.tag != "cpp":
                results.append(Result(block, "failed", "a wrap marker is for cpp blocks"))
            elif block.tag in ("cpp", "c++", "bash", "sh", "cmake"):
                start = time.perf_counter()
                try:
                    {"cpp": self.run_cpp, "c++": self.run_cpp, "cmake": self.run_cmake}.get(
                        block.tag, self.run_shell)(block)
                    results.append(Result(block, "ran", seconds=time.perf_counter() - start))
                except SnippetError as e:
                    results.append(Result(block, "failed", str(e)))
            else:
                what = f"tag {block.tag!r}" if block.tag else "no tag"
                results.append(Result(block, "failed", f"cannot run a block with {what}: tag output "
                                      "'text', or mark it <!-- snippet: skip - reason -->"))
            if results and results[-1].block is block:
                self.report(results[-1])
        for page_blocks in python_pages.values():
            for result in self.run_python_page(page_blocks):
                results.append(result)
                self.report(result)
        return results

    def report(self, result: Result) -> None:
        if result.status == "failed":
            print(f"FAILED {result.block.where} [{result.block.tag or 'no tag'}]\n{result.detail}".rstrip() + "\n",
                  flush=True)
        elif self.verbose:
            print(f"{result.status} {result.block.where} [{result.block.tag}] {result.seconds:.1f}s", flush=True)


def summarize(results: list[Result], seconds: float) -> str:
    def count(status):
        return sum(r.status == status for r in results)

    by_tag: dict[str, int] = {}
    for r in results:
        if r.status == "ran":
            by_tag[r.block.tag] = by_tag.get(r.block.tag, 0) + 1
    tags = ", ".join(f"{tag} {n}" for tag, n in sorted(by_tag.items()))
    lines = [f"doc snippets: {len(results)} blocks; ran {count('ran')} ({tags}), output {count('output')}, "
             f"skipped {count('skipped')}, failed {count('failed')}, not reached {count('not reached')} "
             f"in {seconds:.0f} s"]
    reasons: dict[str, list[str]] = {}
    for r in results:
        if r.status == "skipped":
            reasons.setdefault(r.detail, []).append(r.block.where)
    for reason, where in sorted(reasons.items(), key=lambda item: item[1][0]):
        lines.append(f"  skipped {len(where)}: {reason} ({', '.join(where)})")
    for r in results:
        if r.status in ("failed", "not reached"):
            lines.append(f"  {r.status}: {r.block.where} [{r.block.tag or 'no tag'}]")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="markdown files (default: README.md docs/*.md)")
    parser.add_argument("--prefix", type=Path, help="install prefix for cpp and cmake blocks")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders and print where")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every block's result")
    args = parser.parse_args(argv)
    files = args.files or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    start = time.perf_counter()
    try:
        blocks = [block for path in files for block in extract(path)]
    except SnippetError as e:
        print(f"FAILED {e}")
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="doc-snippets-"))
    try:
        runner = Runner(args.prefix.resolve() if args.prefix else None, workdir, args.verbose)
        try:
            results = runner.run(blocks)
        except SnippetError as e:
            print(f"FAILED {e}")
            return 1
    finally:
        if args.keep:
            print(f"temporary folders kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(summarize(results, time.perf_counter() - start))
    return 1 if any(r.status in ("failed", "not reached") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
