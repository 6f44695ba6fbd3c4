#!/usr/bin/env python3
"""Differential fuzzer for single operators: onnx-light against onnx.reference (the oracle),
with ONNX Runtime as a second opinion.

    python tests/fuzz/op_fuzzer.py --seed 1 --cases-per-op 20
    python tests/fuzz/op_fuzzer.py --seed 1 --cases-per-op 500 --ops Gather,Pad --save /tmp/fuzz
    python tests/fuzz/op_fuzzer.py --time-budget 600 --cases-per-op 100000
    python tests/fuzz/op_fuzzer.py --replay /tmp/fuzz/Pad-18_s1_i42

Every operator `runtime.supported_operators()` lists gets cases from its recipe (op_recipes.py):
random shapes (zero-size and size-1 dims, broadcasting), negative axes, the element types the
schema allows, attribute values from the schema's domain, and NaN, infinities, -0, huge values
and integer extremes. About one case in ten sets an attribute outside its domain; onnx-light must
refuse such a case when the session is built, naming the node and the attribute.

Cases run in a worker process, so a crash or a hang is reported as a finding instead of ending
the run. A disagreement that tests/fuzz/known_differences.py justifies is counted as known; any
other is a failure, printed with a one-line description and, with --save, written as a
reproducer folder (model.onnx, test_data_set_0/input_N.pb, README.txt). Exit status 1 when there
is a failure.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import select
import subprocess
import sys
import time
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.defs  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import known_differences  # noqa: E402
from op_recipes import RECIPES, make_case  # noqa: E402
from recipe_tools import Case, Seq, onnx_type, type_name  # noqa: E402

NODE_NAME = "fuzz_node"
CASE_TIMEOUT = 60.0  # seconds one case may take before the worker counts as hung

# Verdicts. PASS, REFUSED (an invalid case refused properly), UNSUPPORTED (we do not implement
# this type or version) and NO_ORACLE (neither onnx.reference nor ORT could run it) are fine;
# KNOWN is a justified difference; FAIL is a finding.
PASS, REFUSED, UNSUPPORTED, NO_ORACLE, KNOWN, FAIL = (
    "pass", "refused", "unsupported", "no-oracle", "known", "fail")


# ---------------------------------------------------------------------------------------------
# Operators and versions


def operator_versions(ops: list[str] | None = None) -> dict[str, list[int]]:
    """For each ai.onnx operator we implement: the opset versions to fuzz (one per operator
    version in the schema history that our kernels serve)."""
    import onnx.defs

    import onnx_light.runtime as runtime

    newest = onnx.defs.onnx_opset_version()
    ranges: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for entry in runtime.supported_operators():
        domain, op, since = entry[0], entry[1], entry[2]
        until = entry[3] if len(entry) > 3 else newest
        if domain in ("", "ai.onnx"):
            ranges[op].append((since, min(until, newest)))
    out = {}
    for op in sorted(ranges):
        if ops and op not in ops:
            continue
        history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                          if s.name == op and s.domain == ""})
        versions = set()
        for i, since in enumerate(history):
            until = history[i + 1] - 1 if i + 1 < len(history) else newest
            for lo, hi in ranges[op]:
                start, end = max(since, lo), min(until, hi)
                if start <= end:
                    versions.add(start)
        if versions:
            out[op] = sorted(versions)
    return out


# ---------------------------------------------------------------------------------------------
# Models and feeds


def _value_info(name: str, value: Any):
    if isinstance(value, Seq):
        return helper.make_tensor_sequence_value_info(name, onnx_type(value.type), None)
    return helper.make_tensor_value_info(name, onnx_type(type_name(value.dtype)), value.shape)


_FLOAT_LISTS = ("value_floats", "scales", "floats")


def make_node(op: str, inputs: list, outputs: list, name: str = "", domain: str = "",
              **attrs) -> onnx.NodeProto:
    """helper.make_node, except that an empty list attribute gets its type from its name."""
    node = helper.make_node(op, inputs, outputs, name=name, domain=domain,
                            **{k: v for k, v in attrs.items() if not (isinstance(v, list) and not v)})
    for key, value in attrs.items():
        if isinstance(value, list) and not value:
            kind = onnx.AttributeProto.FLOATS if key in _FLOAT_LISTS else onnx.AttributeProto.INTS
            node.attribute.append(helper.make_attribute(key, [], attr_type=kind))
    return node


def build_model(case: Case) -> onnx.ModelProto:
    names = [f"x{i}" if v is not None else "" for i, v in enumerate(case.inputs)]
    while names and names[-1] == "":
        names.pop()
    graph_inputs = [_value_info(f"x{i}", v) for i, v in enumerate(case.inputs) if v is not None]
    outputs = [f"y{i}" for i in range(case.n_outputs)]
    nodes = case.nodes or [make_node(case.op, names, outputs, name=NODE_NAME, domain=case.domain,
                                     **case.attrs)]
    graph = helper.make_graph(nodes, "fuzz", graph_inputs,
                              [helper.make_value_info(o, onnx.TypeProto()) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(case.domain, case.opset)])
    model.ir_version = 10
    return model


def feeds(case: Case) -> dict[str, Any]:
    out = {}
    for i, v in enumerate(case.inputs):
        if v is not None:
            out[f"x{i}"] = list(v.items) if isinstance(v, Seq) else v
    return out


# ---------------------------------------------------------------------------------------------
# Backends


@dataclasses.dataclass
class Outcome:
    ok: bool
    outputs: list | None = None
    kind: str = ""  # for errors: unsupported, refused, internal
    message: str = ""
    phase: str = ""  # build or run


def _first_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}"[:500]


def _ours_kind(error: BaseException) -> str:
    if isinstance(error, NotImplementedError):
        return "unsupported"
    if isinstance(error, (ValueError, KeyError, TypeError)):
        return "refused"
    return "internal"


def _from_ours(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_from_ours(v) for v in value]
    return value.numpy()


def run_ours(model_bytes: bytes, inputs: dict, n_outputs: int) -> Outcome:
    import onnx_light.runtime as runtime

    try:
        session = runtime.RuntimeSession(model_bytes)
    except Exception as error:  # noqa: BLE001 - every failure is an outcome
        return Outcome(False, kind=_ours_kind(error), message=_first_line(error), phase="build")
    try:
        context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(
            onnx.defs.onnx_opset_version())))
        out = session.run(context, inputs)
    except Exception as error:  # noqa: BLE001
        return Outcome(False, kind=_ours_kind(error), message=_first_line(error), phase="run")
    try:
        outputs = [_from_ours(out.get(f"y{i}")) for i in range(n_outputs)]
    except ValueError as error:  # an empty tensor whose dims NumPy cannot represent
        return Outcome(True, None, message=f"outputs not representable in NumPy: {_first_line(error)}")
    return Outcome(True, outputs)


# onnx.reference errors that say it has no implementation (of this version, type or mode).
_REFERENCE_UNSUPPORTED = ("No implementation for operator", "No registered implementation",
                          "not implemented", "Not implemented", "is not supported",
                          "does not support")


def run_reference(model: onnx.ModelProto, inputs: dict) -> Outcome:
    from onnx.reference import ReferenceEvaluator

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outputs = ReferenceEvaluator(model).run(None, inputs)
    except Exception as error:  # noqa: BLE001
        message = _first_line(error)
        kind = "unsupported" if any(s in message for s in _REFERENCE_UNSUPPORTED) else "refused"
        return Outcome(False, kind=kind, message=message)
    return Outcome(True, [_normalize_reference(v) for v in outputs])


def _normalize_reference(value: Any) -> Any:
    if isinstance(value, list):
        return [_normalize_reference(v) for v in value]
    if value is None:
        return None
    return np.asarray(value)


_ORT_UNSUPPORTED = ("NOT_IMPLEMENTED", "not implemented", "Could not find an implementation",
                    "is not supported", "Unsupported", "unsupported", "opset", "Opset")


def run_ort(model_bytes: bytes, inputs: dict) -> Outcome | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001
        message = _first_line(error)
        kind = "unsupported" if any(s in message for s in _ORT_UNSUPPORTED) else "refused"
        return Outcome(False, kind=kind, message=message, phase="build")
    try:
        names = [o.name for o in session.get_outputs()]
        outputs = session.run(names, inputs)
    except Exception as error:  # noqa: BLE001
        message = _first_line(error)
        kind = "unsupported" if "numpy" in message and "type" in message else "refused"
        return Outcome(False, kind=kind, message=message, phase="run")
    return Outcome(True, [_normalize_reference(v) for v in outputs])


# ---------------------------------------------------------------------------------------------
# Judging


_HALF_TOLERANCE = {"float16": (2.0**-7, 2.0**-10), "bfloat16": (2.0**-5, 2.0**-7)}


def mismatch(case: Case, actual: list, expected: list) -> str:
    """'' when every compared output agrees within the tolerance rules of backend_test."""
    from onnx_light.backend_test import DEFAULT_ATOL, DEFAULT_RTOL, Mismatch, compare

    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        if i in case.skip_outputs:
            continue
        rtol = case.rtol if case.rtol is not None else DEFAULT_RTOL
        atol = case.atol if case.atol is not None else DEFAULT_ATOL
        # numpy (and so onnx.reference) rounds every intermediate result of a half-precision
        # computation to the half type; onnx-light computes in float32 and rounds once.
        dtype = getattr(e, "dtype", None)
        if dtype is not None and dtype.name in _HALF_TOLERANCE:
            rtol = max(rtol, _HALF_TOLERANCE[dtype.name][0])
            atol = max(atol, _HALF_TOLERANCE[dtype.name][1])
        try:
            compare(a, e, rtol, atol, where=f"y{i}")
        except Mismatch as m:
            return str(m)
    return ""


@dataclasses.dataclass
class Verdict:
    status: str
    kind: str = ""  # for failures: mismatch, ours-refuses, ours-accepts, accepts-invalid, ...
    detail: str = ""
    known: str = ""  # the known difference that explains it


def judge(case: Case, ours: Outcome, ref: Outcome | None, ort: Outcome | None) -> Verdict:
    if case.robustness:
        if not ours.ok and ours.kind == "internal":
            return Verdict(FAIL, "internal-error", ours.message)
        if not ours.ok and f"'{NODE_NAME}'" not in ours.message and "'probe'" not in ours.message:
            return Verdict(FAIL, "unclear-refusal", f"refused without naming the node: {ours.message}")
        return Verdict(PASS if ours.ok else REFUSED, detail=ours.message)
    if case.invalid:
        if ours.ok:
            return Verdict(FAIL, "accepts-invalid", f"ran a case outside the domain: {case.invalid}")
        if ours.kind == "unsupported":
            return Verdict(UNSUPPORTED, detail=ours.message)
        if ours.kind == "internal":
            return Verdict(FAIL, "internal-error", ours.message)
        named = f"'{NODE_NAME}'" in ours.message
        if case.invalid_attribute:
            named = named and case.invalid_attribute in ours.message and ours.phase == "build"
        if not named:
            return Verdict(FAIL, "unclear-refusal",
                           f"refused, but not at build naming the node and attribute: {ours.message}")
        return Verdict(REFUSED, detail=ours.message)
    if ours.kind == "unsupported":
        return Verdict(UNSUPPORTED, detail=ours.message)
    if not ours.ok and ours.kind == "internal":
        return Verdict(FAIL, "internal-error", ours.message)
    ort_ok = ort is not None and ort.ok
    ort_refuses = ort is not None and not ort.ok and ort.kind == "refused"
    if ours.ok:
        if ref is not None and ref.ok:
            diff = mismatch(case, ours.outputs, ref.outputs)
            if not diff:
                return Verdict(PASS)
            note = ""
            if ort_ok:
                note = (" (ORT agrees with onnx-light)" if not mismatch(case, ours.outputs, ort.outputs)
                        else " (ORT agrees with the reference)"
                        if not mismatch(case, ort.outputs, ref.outputs) else " (ORT differs from both)")
            return Verdict(FAIL, "mismatch", f"vs onnx.reference: {diff}{note}")
        if ort_ok:
            diff = mismatch(case, ours.outputs, ort.outputs)
            if not diff:
                return Verdict(PASS, detail="reference could not run it; ORT agrees")
            return Verdict(FAIL, "mismatch", f"vs ORT (the reference failed: {ref.message}): {diff}")
        if ort_refuses and ref is not None and ref.kind == "refused":
            return Verdict(FAIL, "ours-accepts",
                           f"reference ({ref.message}) and ORT ({ort.message}) refuse it")
        return Verdict(NO_ORACLE, detail=ref.message if ref else "")
    # We refused a case the recipe considers valid.
    if ref is not None and ref.ok:
        if ort_refuses:
            return Verdict(PASS, detail=f"refused like ORT ({ours.message})")
        return Verdict(FAIL, "ours-refuses", f"{ours.message}; the reference computes it")
    return Verdict(PASS, detail="refused by every runtime")


# ---------------------------------------------------------------------------------------------
# One case


def _stage(name: str) -> None:
    """Marks which runtime a worker is in, so the parent can tell whose crash it saw."""
    if STAGE_MARKERS:
        os.write(2, f"{STAGE_PREFIX}{name}\n".encode())


STAGE_PREFIX = "@@op_fuzzer stage "
STAGE_MARKERS = False  # set in worker processes


def execute(case: Case, use_ort: bool = True) -> tuple[Verdict, dict]:
    """Runs one case on every backend and judges it. Returns the verdict and raw outcomes."""
    model = build_model(case)
    model_bytes = model.SerializeToString()
    inputs = feeds(case)
    _stage("onnx-light")
    ours = run_ours(model_bytes, inputs, case.n_outputs)
    # An invalid case needs no oracle: onnx-light must refuse it whatever the others do.
    ref = ort = None
    if not case.invalid and not case.robustness:
        _stage("onnx.reference")
        ref = run_reference(model, inputs)
        if use_ort and not (ref.ok and ours.ok and not mismatch(case, ours.outputs, ref.outputs)):
            _stage("onnxruntime")
            ort = run_ort(model_bytes, inputs)
    _stage("judge")
    verdict = judge(case, ours, ref, ort)
    if verdict.status == FAIL:
        entry = known_differences.match(case, verdict, ours, ref, ort)
        if entry is not None:
            verdict = Verdict(KNOWN, verdict.kind, verdict.detail, entry.name)
    return verdict, {"ours": ours, "ref": ref, "ort": ort}


def result_record(op: str, opset: int, seed: int, index: int, case: Case | None,
                  verdict: Verdict, seconds: float) -> dict:
    return {"op": op, "opset": opset, "seed": seed, "index": index,
            "case": case.describe() if case else "", "status": verdict.status,
            "kind": verdict.kind, "detail": verdict.detail, "known": verdict.known,
            "seconds": round(seconds, 4)}


def run_one(op: str, opset: int, seed: int, index: int, use_ort: bool = True) -> dict:
    start = time.perf_counter()
    case = None
    try:
        case = make_case(op, opset, seed, index)
        verdict, _ = execute(case, use_ort)
    except Exception as error:  # noqa: BLE001 - a recipe or harness bug is a finding too
        verdict = Verdict(FAIL, "harness-error", _first_line(error))
    return result_record(op, opset, seed, index, case, verdict, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# Worker process: reads "op opset seed index" lines, writes one JSON result line each.


def worker_main() -> int:
    # For the harness's own test: die once, as a crashing kernel would.
    crash_marker = os.environ.get("OP_FUZZER_CRASH_ONCE")
    for line in sys.stdin:
        if crash_marker and not os.path.exists(crash_marker):
            open(crash_marker, "w").close()
            os.abort()
        op, opset, seed, index, *flags = line.split()
        record = run_one(op, int(opset), int(seed), int(index), use_ort="no-ort" not in flags)
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
    return 0


class Worker:
    """A child process running cases; restarted after a crash or a hang."""

    def __init__(self, stderr_path: str, env: dict | None = None):
        self.stderr_path = stderr_path
        self.env = env
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        self.stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=self.env, bufsize=0)

    def run(self, op: str, opset: int, seed: int, index: int, timeout: float,
            use_ort: bool = True) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        offset = os.path.getsize(self.stderr_path)
        flags = "" if use_ort else " no-ort"
        self.proc.stdin.write(f"{op} {opset} {seed} {index}{flags}\n".encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if line:
            return json.loads(line)
        hung = not ready
        self.close(kill=True)
        with open(self.stderr_path, "rb") as f:
            f.seek(offset)
            lines = f.read().decode("utf-8", "replace").strip().splitlines()
        stages = [line[len(STAGE_PREFIX):] for line in lines if line.startswith(STAGE_PREFIX)]
        stage = stages[-1] if stages else "onnx-light"
        if stage == "onnxruntime" and use_ort:
            # ONNX Runtime's crash, not ours: judge the case without the second opinion.
            record = self.run(op, opset, seed, index, timeout, use_ort=False)
            record["detail"] = (record["detail"] + " (onnxruntime crashed on this case)").strip()
            return record
        tail = [line for line in lines if not line.startswith(STAGE_PREFIX)][-12:]
        kind = "hang" if hung else "crash"
        detail = (f"no result after {timeout:.0f} s in {stage}" if hung
                  else f"worker died in {stage} (exit {self.proc_exit})") + (": " + " | ".join(tail) if tail else "")
        case = None
        try:
            case = make_case(op, opset, seed, index)
        except Exception:  # noqa: BLE001
            pass
        return result_record(op, opset, seed, index, case, Verdict(FAIL, kind, detail[:4000]), timeout)

    proc_exit: int | None = None

    def close(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.stdin.close()
        self.proc_exit = self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()
        self.proc = None


# ---------------------------------------------------------------------------------------------
# Reproducers


def save_reproducer(directory: str, record: dict) -> str:
    """Writes the case of `record` as model.onnx + test_data_set_0/input_N.pb + README.txt."""
    case = make_case(record["op"], record["opset"], record["seed"], record["index"])
    name = f"{record['op']}-{record['opset']}_s{record['seed']}_i{record['index']}"
    folder = os.path.join(directory, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    model = build_model(case)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    position = 0
    for i, value in enumerate(case.inputs):
        if value is None:
            continue
        if isinstance(value, Seq):
            proto = numpy_helper.from_list(list(value.items), f"x{i}")
        else:
            proto = numpy_helper.from_array(value, f"x{i}")
        with open(os.path.join(data, f"input_{position}.pb"), "wb") as f:
            f.write(proto.SerializeToString())
        position += 1
    with open(os.path.join(folder, "README.txt"), "w") as f:
        f.write(f"{record['kind']}: {record['case']}\n{record['detail']}\n\n"
                f"replay: python tests/fuzz/op_fuzzer.py --replay {folder}\n"
                f"regenerate: python tests/fuzz/op_fuzzer.py --ops {record['op']} "
                f"--seed {record['seed']} --only-index {record['index']}\n")
    return folder


def load_reproducer(folder: str) -> tuple[onnx.ModelProto, dict]:
    model = onnx.load(os.path.join(folder, "model.onnx"))
    names = [i.name for i in model.graph.input]
    inputs = {}
    data = os.path.join(folder, "test_data_set_0")
    for position, name in enumerate(names):
        raw = open(os.path.join(data, f"input_{position}.pb"), "rb").read()
        if model.graph.input[position].type.HasField("sequence_type"):
            proto = onnx.SequenceProto()
            proto.ParseFromString(raw)
            inputs[name] = numpy_helper.to_list(proto)
        else:
            proto = onnx.TensorProto()
            proto.ParseFromString(raw)
            inputs[name] = numpy_helper.to_array(proto)
    return model, inputs


def replay(folder: str) -> int:
    model, inputs = load_reproducer(folder)
    print(open(os.path.join(folder, "README.txt")).read().splitlines()[0])
    model_bytes = model.SerializeToString()
    n_outputs = len(model.graph.output)
    for name, outcome in (("onnx-light", run_ours(model_bytes, inputs, n_outputs)),
                          ("onnx.reference", run_reference(model, inputs)),
                          ("onnxruntime", run_ort(model_bytes, inputs))):
        if outcome is None:
            print(f"{name}: not installed")
        elif outcome.ok:
            print(f"{name}: {outcome.outputs}")
        else:
            print(f"{name}: {outcome.kind} at {outcome.phase or 'run'}: {outcome.message}")
    return 0


# ---------------------------------------------------------------------------------------------
# Driver


@dataclasses.dataclass
class Summary:
    records: list
    seconds: float
    ops_without_recipe: list

    def counts(self) -> collections.Counter:
        return collections.Counter(r["status"] for r in self.records)

    def failures(self) -> list[dict]:
        return [r for r in self.records if r["status"] == FAIL]

    def format(self) -> str:
        counts = self.counts()
        lines = [f"{len(self.records)} cases in {self.seconds:.1f} s: "
                 + ", ".join(f"{k} {counts[k]}" for k in (PASS, REFUSED, UNSUPPORTED, NO_ORACLE,
                                                          KNOWN, FAIL))]
        known = collections.Counter(r["known"] for r in self.records if r["status"] == KNOWN)
        for name, n in sorted(known.items()):
            lines.append(f"  known  {n:5d}  {name}")
        if self.ops_without_recipe:
            lines.append("  schema recipe only: " + ", ".join(self.ops_without_recipe))
        for r in self.failures():
            lines.append(f"FAIL {r['kind']}: {r['case']} [seed {r['seed']} index {r['index']}]"
                         f"\n     {r['detail']}")
        return "\n".join(lines)


def fuzz(seed: int, cases_per_op: int, ops: list[str] | None = None,
         time_budget: float | None = None, save: str | None = None, isolate: bool = True,
         only_index: int | None = None, env: dict | None = None, progress: bool = False,
         stderr_path: str | None = None) -> Summary:
    versions = operator_versions(ops)
    if ops:
        missing = sorted(set(ops) - set(versions))
        if missing:
            raise SystemExit(f"not implemented by onnx-light (ai.onnx): {', '.join(missing)}")
    start = time.perf_counter()
    records = []
    worker = None
    if isolate:
        worker = Worker(stderr_path or os.path.join(save or "/tmp", f"op_fuzzer_{os.getpid()}.log"),
                        env)
    indices = [only_index] if only_index is not None else range(cases_per_op)
    try:
        # Round robin: every operator gets case i before any gets case i + 1, so a time budget
        # still covers every operator.
        for index in indices:
            for op, opsets in versions.items():
                if time_budget is not None and time.perf_counter() - start > time_budget:
                    raise TimeoutError
                opset = opsets[index % len(opsets)]
                if worker is not None:
                    record = worker.run(op, opset, seed, index, CASE_TIMEOUT)
                else:
                    record = run_one(op, opset, seed, index)
                records.append(record)
                if record["status"] == FAIL and save:
                    record["saved"] = save_reproducer(save, record)
                if progress and record["status"] == FAIL:
                    print(f"FAIL {record['kind']}: {record['case']}\n     {record['detail']}",
                          flush=True)
    except TimeoutError:
        pass
    finally:
        if worker is not None:
            worker.close()
    return Summary(records, time.perf_counter() - start,
                   sorted(op for op in versions if op not in RECIPES))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases-per-op", type=int, default=20)
    parser.add_argument("--ops", help="comma-separated operators (default: every one we implement)")
    parser.add_argument("--time-budget", type=float, help="stop starting cases after this many seconds")
    parser.add_argument("--save", help="write a reproducer folder for every failure here")
    parser.add_argument("--only-index", type=int, help="run only this case index (with --ops)")
    parser.add_argument("--in-process", action="store_true",
                        help="run cases in this process (faster to debug; a crash ends the run)")
    parser.add_argument("--json", help="write every case result to this file")
    parser.add_argument("--replay", help="run a saved reproducer folder on every backend")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        global STAGE_MARKERS
        STAGE_MARKERS = True
        return worker_main()
    if args.replay:
        return replay(args.replay)
    ops = args.ops.split(",") if args.ops else None
    if args.save:
        os.makedirs(args.save, exist_ok=True)
    summary = fuzz(args.seed, args.cases_per_op, ops, args.time_budget, args.save,
                   isolate=not args.in_process, only_index=args.only_index, progress=True)
    print(summary.format())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary.records, f, indent=1)
    return 1 if summary.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
