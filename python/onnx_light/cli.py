"""The ``onnx-light`` command line.

    onnx-light run MODEL.onnx [--inputs FILE.npz] [--events] [--trace OUT.json] [--kernel-usage] [--repeat N]
    onnx-light info MODEL.onnx [--json]
    onnx-light merge-traces A.json B.json ... -o ALL.json [--labels NAME,NAME,...]

``run`` feeds the model random inputs (or the arrays of an .npz file, by input name), runs it and
prints its outputs, timings and, with --events, the per-operator table, persistent-storage
traffic and allocator peak. ``info`` describes a model and says whether every operator in it has
a kernel (or a function body the runtime runs). ``merge-traces`` combines the Chrome traces of
several workers into one, a process track per worker (onnx_light.trace.merge_traces). Also available as ``python -m onnx_light.cli``.

Exit codes: 0 success; 1 the run failed; 2 usage error, or a file that is missing, unreadable or
holds arrays that do not fit the model; 3 the model is invalid or uses something the runtime (or
the random input generator) does not support; 4 an internal error, a bug in onnx-light (the only
case that prints a traceback). See docs/errors.md.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import sys
import time
import traceback
from typing import Any, Sequence

import numpy as np

EXIT_OK = 0
EXIT_RUNTIME_ERROR = 1
EXIT_USAGE = 2
EXIT_MODEL = 3
EXIT_INTERNAL = 4
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what other tools report for `| head`

# Random inputs larger than this are refused (pass them with --inputs instead).
RANDOM_INPUT_LIMIT_BYTES = 1 << 30

# ONNX TensorProto element types the command line can generate or print.
_DTYPES: dict[int, tuple[str, Any]] = {
    1: ("float32", np.float32), 2: ("uint8", np.uint8), 3: ("int8", np.int8), 4: ("uint16", np.uint16),
    5: ("int16", np.int16), 6: ("int32", np.int32), 7: ("int64", np.int64), 8: ("string", np.str_),
    9: ("bool", np.bool_), 10: ("float16", np.float16), 11: ("float64", np.float64),
    12: ("uint32", np.uint32), 13: ("uint64", np.uint64), 14: ("complex64", np.complex64),
    15: ("complex128", np.complex128), 16: ("bfloat16", None), 17: ("float8e4m3fn", None),
    18: ("float8e4m3fnuz", None), 19: ("float8e5m2", None), 20: ("float8e5m2fnuz", None), 21: ("uint4", None),
    22: ("int4", None), 23: ("float4e2m1", None), 24: ("float8e8m0", None), 25: ("uint2", None),
    26: ("int2", None), 27: ("float6e2m3", None), 28: ("float6e3m2", None),
}


class CliError(Exception):
    """A failure with the exit code it maps to."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _type_name(data_type: int) -> str:
    return _DTYPES.get(int(data_type), (f"type {data_type}", None))[0]


def _shape_text(shape) -> str:
    if shape is None:
        return "[rank unknown]"
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def _dims(info) -> list | None:
    """A graph input's dimensions as ints, -1 where not fixed (a runtime.ValueInfo, or a dict of
    the same keys)."""
    if "dims" in info:
        return info["dims"]
    shape = info["shape"]
    return None if shape is None else [d if isinstance(d, int) else -1 for d in shape]


def _check_model_path(path: str) -> None:
    if not os.path.exists(path):
        raise CliError(EXIT_USAGE, f"model file '{path}' does not exist")
    if os.path.isdir(path):
        raise CliError(EXIT_USAGE, f"'{path}' is a directory, not a model file")
    if not os.access(path, os.R_OK):
        raise CliError(EXIT_USAGE, f"model file '{path}' is not readable")


def _model_info(runtime, path: str) -> dict:
    _check_model_path(path)
    try:
        return runtime.model_info(path)
    except (ValueError, KeyError, NotImplementedError) as error:
        raise CliError(EXIT_MODEL, f"'{path}' is not a valid ONNX model: {_message(error)}") from error
    except OSError as error:
        raise CliError(EXIT_USAGE, f"cannot read '{path}': {error}") from error


def _message(error: BaseException) -> str:
    # KeyError wraps its message in quotes; show the text itself.
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error)


def _build_session(runtime, path: str, threads: int):
    options = runtime.RuntimeSessionOptions(num_threads=threads)
    try:
        return runtime.RuntimeSession(path, options)
    except NotImplementedError as error:
        raise CliError(EXIT_MODEL, f"the model uses something the runtime does not support: {error}") from error
    except (ValueError, KeyError) as error:
        raise CliError(EXIT_MODEL, f"the model cannot be compiled: {_message(error)}") from error


# ---- info ------------------------------------------------------------------------------------


def _ranges(table: Sequence[tuple[str, str, int, int]]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    ranges: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for domain, op, since, until in table:
        ranges.setdefault((domain, op), []).append((int(since), int(until)))
    return ranges


def operator_support(info: dict, supported: Sequence[tuple[str, str, int, int]],
                     function_bodies: Sequence[tuple[str, str, int, int]] = ()) -> list[dict]:
    """Each operator of ``model_info`` with ``status``: 'supported' (and ``since_version`` of the
    kernel that serves it), 'function' (a model-local function), 'function_body' (no kernel, but
    the runtime runs the function body onnx defines for that version; ``function_bodies`` is
    ``runtime.schema_function_operators()``) or 'unsupported' (none of these for the opset
    version the model imports)."""
    kernels = _ranges(supported)
    bodies = _ranges(function_bodies)
    functions = {(domain, name) for domain, name in info["functions"]}
    rows = []
    for op in info["operators"]:
        key = (op["domain"], op["op_type"])
        row = dict(op, status="unsupported", since_version=None)
        version = op["opset_version"]
        serving = [since for since, until in kernels.get(key, []) if since <= version <= until]
        if key in functions:
            row["status"] = "function"
        elif serving:
            row["status"] = "supported"
            row["since_version"] = max(serving)
        elif any(since <= version <= until for since, until in bodies.get(key, [])):
            row["status"] = "function_body"
        rows.append(row)
    return rows


def _domain_text(domain: str) -> str:
    return domain or "ai.onnx"


def cmd_info(args) -> int:
    import onnx_light.runtime as runtime

    info = _model_info(runtime, args.model)
    ops = operator_support(info, runtime.supported_operators(), runtime.schema_function_operators())
    build_error = None
    if all(op["status"] != "unsupported" for op in ops):
        try:
            _build_session(runtime, args.model, 0)
        except CliError as error:
            build_error = str(error)
    unsupported = [op for op in ops if op["status"] == "unsupported"]
    ok = not unsupported and build_error is None

    if args.json:
        report = dict(info, operators=ops, supported=ok, build_error=build_error)
        for title in ("inputs", "outputs"):
            # "shape" keeps its ints (-1: not fixed); "symbolic_shape" names dimensions as ValueInfo.shape does.
            report[title] = [{"name": v["name"], "kind": v["kind"], "data_type": v["data_type"], "shape": _dims(v),
                              "symbolic_shape": v["shape"], "type": v["type"]} for v in info[title]]
        report["opset_imports"] = [list(o) for o in info["opset_imports"]]
        print(json.dumps(report, indent=2))
        return EXIT_OK if ok else EXIT_MODEL

    print(f"model: {args.model}")
    producer = info["producer_name"] + (f" {info['producer_version']}" if info["producer_version"] else "")
    print(f"  ir_version {info['ir_version']}, producer {producer or '(none)'}, graph '{info['graph_name']}', "
          f"{info['node_count']} nodes, {info['initializer_count']} initializers")
    print("opsets: " + ", ".join(f"{_domain_text(d)} {v}" for d, v in info["opset_imports"]))
    for title in ("inputs", "outputs"):
        print(f"{title}:")
        for v in info[title]:
            kind = "" if v["kind"] == "tensor" else f" ({v['kind']})"
            print(f"  {v['name']:<28}{_type_name(v['data_type']):<10}{_shape_text(_dims(v))}{kind}")
    if info["functions"]:
        print("functions: " + ", ".join(f"{_domain_text(d)}::{n}" for d, n in info["functions"]))
    if info["persistent_bindings"]:
        print("persistent bindings: " + ", ".join(f"{i} <- {o}" for i, o in info["persistent_bindings"]))
    print("operators:")
    width = max([20] + [len(op["op_type"]) + 2 for op in ops])
    for op in ops:
        where = f"{_domain_text(op['domain'])} {op['opset_version']}"
        if op["status"] == "supported":
            status = f"supported (kernel since opset {op['since_version']})"
        elif op["status"] == "function":
            status = "model-local function"
        elif op["status"] == "function_body":
            status = "supported (function body)"
        else:
            status = "NOT SUPPORTED"
        print(f"  {op['op_type']:<{width}}{op['count']:>6}  {where:<18}{status}")
    if unsupported:
        names = ", ".join(op["op_type"] for op in unsupported)
        print(f"\n{len(unsupported)} operator(s) without a kernel or function body: {names}")
    elif build_error:
        print(f"\nevery operator is supported, but the session does not build: {build_error}")
    else:
        print("\nevery operator is supported; the session builds")
    return EXIT_OK if ok else EXIT_MODEL


# ---- run -------------------------------------------------------------------------------------


def random_input(info: dict, rng: np.random.Generator) -> np.ndarray:
    """An array for a graph input: symbolic dimensions become 1, the element type comes from the
    model. Floats are standard normal, integers 0 or 1, booleans random."""
    name = info["name"]
    if info.get("kind", "tensor") != "tensor":
        raise CliError(EXIT_MODEL, f"input '{name}' is a {info['kind']}; the command line feeds tensors only")
    code = int(info["data_type"])
    type_name, dtype = _DTYPES.get(code, (f"type {code}", None))
    if dtype is None:
        raise CliError(EXIT_MODEL, f"input '{name}' has element type {type_name}, which the command line "
                                   "cannot generate; pass it with --inputs")
    shape = tuple(1 if d < 0 else int(d) for d in (_dims(info) or ()))
    count = 1
    for d in shape:
        count *= d
    size = count * np.dtype(dtype).itemsize
    if size > RANDOM_INPUT_LIMIT_BYTES:
        raise CliError(EXIT_MODEL, f"input '{name}' has shape {_shape_text(shape)}, {count} elements "
                                   f"({size} bytes of {type_name}); the command line generates at most "
                                   f"{RANDOM_INPUT_LIMIT_BYTES} bytes of random data per input: pass it "
                                   "with --inputs")
    if np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype is np.str_:
        return np.full(shape, "a")
    return rng.integers(0, 2, shape).astype(dtype)


def _load_inputs(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise CliError(EXIT_USAGE, f"inputs file '{path}' does not exist")
    try:
        data = np.load(path, allow_pickle=False)
        if not hasattr(data, "files"):
            raise CliError(EXIT_USAGE, f"'{path}' holds a single array; --inputs needs an .npz file with "
                                       "one array per input name (numpy.savez)")
        with data:
            arrays = {name: data[name] for name in data.files}
    except CliError:
        raise
    except Exception as error:  # numpy reports bad files as OSError, ValueError, BadZipFile, ...
        raise CliError(EXIT_USAGE, f"cannot read inputs file '{path}': {error}") from error
    # The runtime views arrays without copying and needs them C-contiguous (this keeps 0-d arrays
    # 0-d, which numpy.ascontiguousarray would not) and in this machine's byte order (a file
    # written on a big-endian machine is not).
    for name, a in arrays.items():
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        arrays[name] = a if a.flags.c_contiguous else a.copy(order="C")
    return arrays


def _check_given(name: str, array: np.ndarray, info: dict, path: str) -> None:
    """An array of the inputs file against the graph input it feeds: a mismatch is the file's
    fault, so it is a usage error named after the file rather than a failed run."""
    if info.get("kind", "tensor") != "tensor":
        return
    type_name, dtype = _DTYPES.get(int(info["data_type"]), (None, None))
    if dtype is not None and array.dtype != np.dtype(dtype) and not (
            dtype is np.str_ and array.dtype.kind in "US"):
        raise CliError(EXIT_USAGE, f"inputs file '{path}': array '{name}' has dtype {array.dtype}, the "
                                   f"model's input '{name}' is {type_name}")
    shape = _dims(info)
    if shape is None:
        return
    if array.ndim != len(shape) or any(d >= 0 and d != n for d, n in zip(shape, array.shape)):
        raise CliError(EXIT_USAGE, f"inputs file '{path}': array '{name}' has shape "
                                   f"{_shape_text(array.shape)}, the model's input '{name}' is "
                                   f"{_shape_text(shape)}")


def _feeds(session, args, rng) -> tuple[dict[str, np.ndarray], list[str]]:
    given = _load_inputs(args.inputs) if args.inputs else {}
    known = {v["name"]: v for v in session.inputs}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise CliError(EXIT_USAGE, f"inputs file has arrays {unknown} that are not graph inputs; "
                                   f"the inputs are {sorted(known)}")
    for name, array in given.items():
        _check_given(name, array, known[name], args.inputs)
    generated = []
    feeds = dict(given)
    for name in session.required_input_names:
        if name not in feeds:
            feeds[name] = random_input(known[name], rng)
            generated.append(name)
    return feeds, generated


def _array_stats(array: np.ndarray) -> str:
    if array.size == 0 or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        return ""
    values = np.abs(array) if np.issubdtype(array.dtype, np.complexfloating) else array.astype(np.float64)
    return f"  min {np.min(values):.4g}  max {np.max(values):.4g}  mean {np.mean(values):.4g}"


def _describe_output(value) -> str:
    if isinstance(value, dict):
        return f"map of {len(value)} entries"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return f"sequence of {len(value)} maps"
    if isinstance(value, list):
        return f"sequence of {len(value)} tensors"
    if value is None:
        return "empty optional"
    if isinstance(value, bytes):
        return f"{len(value)} encoded bytes"
    array = value.numpy()
    return f"{array.dtype.name:<10}{_shape_text(array.shape)}{_array_stats(array)}"


def cmd_run(args) -> int:
    import onnx_light.runtime as runtime
    from onnx_light import summary, trace

    if args.repeat < 1:
        raise CliError(EXIT_USAGE, f"--repeat must be at least 1, got {args.repeat}")
    if args.trace:
        folder = os.path.dirname(os.path.abspath(args.trace))
        if not os.path.isdir(folder):
            raise CliError(EXIT_USAGE, f"cannot write the trace: folder '{folder}' does not exist")
    info = _model_info(runtime, args.model)
    session = _build_session(runtime, args.model, args.threads)
    rng = np.random.default_rng(args.seed)
    feeds, generated = _feeds(session, args, rng)

    print(f"model: {args.model} ({info['node_count']} nodes; opsets "
          + ", ".join(f"{_domain_text(d)} {v}" for d, v in info["opset_imports"]) + ")")
    print("inputs:")
    for name, array in feeds.items():
        origin = "random" if name in generated else "from " + os.path.basename(args.inputs)
        print(f"  {name:<28}{array.dtype.name:<10}{_shape_text(array.shape)}  ({origin})")

    events_on = bool(args.events or args.trace)
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(runtime.MAX_ONNX_OPSET)),
                                     events_enabled=events_on)
    if args.kernel_usage:
        context.set_kernel_usage_enabled(True)
    times = []
    outputs = {}
    for _ in range(args.repeat):
        start = time.perf_counter()
        try:
            outputs = session.run(context, feeds)
        except NotImplementedError as error:
            raise CliError(EXIT_MODEL, f"unsupported: {error}") from error
        except (ValueError, KeyError, RuntimeError, TypeError, MemoryError) as error:
            raise CliError(EXIT_RUNTIME_ERROR, f"the run failed: {_message(error)}") from error
        times.append(time.perf_counter() - start)

    print("outputs:")
    for name, value in outputs.items():
        print(f"  {name:<28}{_describe_output(value)}")
    mean = sum(times) / len(times)
    if len(times) == 1:
        print(f"time: {mean * 1e3:.3f} ms")
    else:
        print(f"time: {len(times)} runs, mean {mean * 1e3:.3f} ms, min {min(times) * 1e3:.3f} ms, "
              f"max {max(times) * 1e3:.3f} ms")

    events = context.events() if events_on else []
    if args.events:
        print()
        print(summary.format_summary(events))
    if args.kernel_usage:
        print("\nkernels that ran:")
        print(summary.format_kernel_usage(context.get_kernel_usage()))
    if args.trace:
        try:
            trace.export_chrome_trace(events, args.trace)
        except OSError as error:
            raise CliError(EXIT_USAGE, f"cannot write the trace to '{args.trace}': {error}") from error
        print(f"\ntrace: {args.trace} ({len(events)} events; open it in https://ui.perfetto.dev "
              "or chrome://tracing)")
    return EXIT_OK


# ---- merge-traces ------------------------------------------------------------------------------


def cmd_merge_traces(args) -> int:
    from onnx_light import trace

    labels = None
    if args.labels is not None:
        labels = args.labels.split(",")
        if len(labels) != len(args.traces):
            raise CliError(EXIT_USAGE, f"--labels names {len(labels)} workers for {len(args.traces)} traces")
    for path in args.traces:
        if not os.path.isfile(path):
            raise CliError(EXIT_USAGE, f"trace file '{path}' does not exist")
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise CliError(EXIT_USAGE, f"cannot write the merged trace: folder '{folder}' does not exist")
    try:
        merged = trace.merge_traces(args.traces, labels)
    except ValueError as error:
        raise CliError(EXIT_USAGE, str(error).removeprefix("merge_traces: ")) from error
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(merged, f)
    except OSError as error:
        raise CliError(EXIT_USAGE, f"cannot write the merged trace to '{args.output}': {error}") from error
    workers = sorted({info["label"] for info in merged["otherData"]["merged"]})
    print(f"{args.output}: {len(args.traces)} traces, {len(workers)} workers ({', '.join(workers)}), "
          f"{len(merged['traceEvents'])} trace events")
    return EXIT_OK


# ---- entry point -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from onnx_light import __version__

    parser = argparse.ArgumentParser(
        prog="onnx-light", description="Run and inspect ONNX models with the onnx-light runtime.",
        epilog="exit codes: 0 ok, 1 runtime error, 2 usage error or missing file, "
               "3 invalid or unsupported model, 4 internal error (a bug)")
    parser.add_argument("--version", action="version", version=f"onnx-light {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="run a model with random or given inputs and print a summary",
                              description="Run a model once (or --repeat N times) and print its outputs "
                                          "and timings. Symbolic dimensions of random inputs become 1.")
    run.add_argument("model", metavar="MODEL.onnx")
    run.add_argument("--inputs", metavar="FILE.npz",
                     help="arrays by input name (numpy.savez); inputs it lacks are random")
    run.add_argument("--events", action="store_true",
                     help="record events and print the per-operator table and storage traffic")
    run.add_argument("--trace", metavar="OUT.json",
                     help="write a Chrome trace (Perfetto, chrome://tracing); turns events on")
    run.add_argument("--kernel-usage", action="store_true", help="print which kernel implementations ran")
    run.add_argument("--repeat", type=int, default=1, metavar="N", help="run N times (default 1)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    run.add_argument("--threads", type=int, default=0, metavar="N",
                     help="RuntimeSessionOptions.num_threads (default 0: the runtime chooses)")
    run.set_defaults(handler=cmd_run)

    info = commands.add_parser("info", help="describe a model and check that every operator is supported",
                               description="Print inputs, outputs, opsets and operators, and whether the "
                                           "runtime has a kernel (or runs the onnx function body) for "
                                           "each. Exits with 3 when it has not.")
    info.add_argument("model", metavar="MODEL.onnx")
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    info.set_defaults(handler=cmd_info)

    merge = commands.add_parser("merge-traces", help="combine Chrome traces of several workers into one",
                                description="Merge traces written by export_chrome_trace in several "
                                            "processes: one process track per worker, aligned on the "
                                            "wall clock. Files with the same label share a track.")
    merge.add_argument("traces", nargs="+", metavar="TRACE.json")
    merge.add_argument("-o", "--output", required=True, metavar="OUT.json", help="where to write the merged trace")
    merge.add_argument("--labels", metavar="NAME,NAME,...",
                       help="worker name of each trace, comma-separated (default: the trace's "
                            "otherData.label, else its file name)")
    merge.set_defaults(handler=cmd_merge_traces)
    return parser


def _escape_names(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler for names that are not UTF-8: the runtime hands them out with
    surrogate escapes (U+DCFF for the byte 0xff), printed here as \xff; anything else the
    output encoding lacks is printed as a backslash escape."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF
                   else c.encode("ascii", "backslashreplace").decode("ascii") for c in text), error.end


codecs.register_error("onnx_light_escape", _escape_names)


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # never fail on a name the terminal cannot show
            stream.reconfigure(errors="onnx_light_escape")
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on usage errors
    try:
        code = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not as noise at interpreter exit
        return code
    except CliError as error:
        print(f"onnx-light: error: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more is written to the pipe
        except OSError:
            pass
        return EXIT_BROKEN_PIPE
    except Exception as error:  # noqa: BLE001 - every user error is a CliError: this is a bug
        print(f"onnx-light: internal error (a bug in onnx-light; please report it with what follows): "
              f"{type(error).__name__}: {error}", file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
