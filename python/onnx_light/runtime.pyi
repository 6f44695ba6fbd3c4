"""Type stubs of the compiled runtime module.

``import onnx_light.runtime as runtime`` and
``from onnx_light.onnx_py._onnxpykernels import runtime`` give this same module.

Errors: every runtime failure raises one of four built-in exceptions, chosen by the error's
code: ``ValueError`` (invalid argument: malformed model, wrong dtype or shape), ``KeyError``
(unknown name), ``NotImplementedError`` (unsupported operator, opset or type) and
``RuntimeError`` (wrong state, such as a closed state or an overlapping call, and a run ended by
``request_stop()`` or ``run_timeout``); a missing model file raises ``FileNotFoundError`` and
feeds that are not arrays ``TypeError``. Each is also an instance of ``Error``
(``onnx_light.Error``), whose ``code`` is an ``ErrorCode``. Messages show bytes that are not
UTF-8 escaped (``\\xff``).

Names: every name read back (inputs, outputs, events, model_info, dict keys) is a str decoded with
"surrogateescape", so ``name.encode("utf-8", "surrogateescape")`` gives the model's bytes even when
they are not UTF-8; names passed in may be such a str or bytes.
"""

import enum
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, Literal, Union, overload

import numpy as np

__version__: str
"""The runtime's version (ONNX_LIGHT_VERSION_STRING of the C++ headers); also onnx_light.__version__."""

ModelSource = Union[str, os.PathLike[str], bytes, bytearray, memoryview, Any]
"""A model: a file path, serialized bytes (viewed, not copied) or an onnx.ModelProto."""

Feed = Union[np.ndarray, "Tensor", Any]
"""A C-contiguous CPU NumPy array in native byte order, a runtime.Tensor or a DLPack producer
(never copied, except a bool tensor holding bytes other than 0/1, which is fed as a 0/1 copy); for
sequence inputs a list of those, for an empty optional None; for a map input a dict (keys all int
or all str, values all numbers or all str; numeric values are cast to the input's value type),
for a sequence-of-maps input a list of dicts."""

Name = Union[str, bytes]
"""A name: a str (bytes that are not UTF-8 as surrogate escapes) or the raw bytes."""

Value = Union["Tensor", list["Tensor"], dict[Any, Any], list[dict[Any, Any]], bytes, None]
"""A value read back from the runtime: a tensor, a sequence of tensors, a map (a dict of Python
int/float/str, in key order), a sequence of maps (a list of such dicts), encoded bytes or an
empty optional."""

TensorKindName = Literal["unknown", "initializer", "input", "intermediate", "output"]

MAX_ONNX_OPSET: int
"""Newest ai.onnx opset version a model may import (28, as in the pinned onnx). Each operator
is served only for the opset versions its kernel implements (see supported_operators()), or
by its onnx function body (see schema_function_operators())."""

class OpsetId:
    """An operator-set id: a domain ('' is ai.onnx) and its version."""

    def __init__(self, domain: str, version: int) -> None: ...
    @property
    def domain(self) -> str: ...
    @property
    def version(self) -> int: ...

def default_opset(version: int) -> OpsetId:
    """The ai.onnx opset of that version. ValueError outside [1, MAX_ONNX_OPSET]."""

class KernelContext:
    """The scope of per-context custom kernels (register_kernel(..., kernel_context=...)),
    labelled with an ai.onnx opset. Kernels are chosen by the opsets the model imports; the label
    is for the context's owner and its kernels, the runtime does not read it. Copies share the
    custom-kernel table."""

    def __init__(self, opset: OpsetId | None = None) -> None:
        """Labelled with `opset`, or default_opset(MAX_ONNX_OPSET) when omitted."""
    @property
    def opset(self) -> OpsetId: ...

class RuntimeEventAction(enum.IntEnum):
    """What a RuntimeEvent records."""

    kAdd = 0
    """A value was added to a context."""
    kReplace = 1
    """An existing value was overwritten."""
    kRemove = 2
    """A value was released."""
    kRunNode = 3
    """A node was dispatched; duration_ns says how long it ran."""
    kPersistentStorage = 4
    """Persistent-state storage work; see the storage_* fields."""

class ErrorCode(enum.IntEnum):
    """What kind of failure a runtime.Error reports."""

    kInvalidArgument = 0
    """Bad input: a malformed model, a wrong dtype, shape or attribute value."""
    kNotFound = 1
    """An unknown name, or a model file that does not exist."""
    kUnimplemented = 2
    """An operator, operator version, domain or element type the runtime does not support."""
    kFailedPrecondition = 3
    """Wrong state: a closed state, a context held by another run."""
    kInternal = 4
    """A broken invariant inside the runtime (a bug)."""
    kCancelled = 5
    """A run ended by request_stop() or its run_timeout."""

class Error(Exception):
    """Base of every exception the runtime raises (also ``onnx_light.Error``). Each instance is
    also the built-in exception of its kind, so ``except ValueError`` keeps working."""

    code: ErrorCode | None

class InvalidArgumentError(Error, ValueError):
    """Bad input: a malformed model, a wrong dtype, shape or attribute value."""

    code: ErrorCode

class NotFoundError(Error, KeyError):
    """An unknown name."""

    code: ErrorCode

class UnimplementedError(Error, NotImplementedError):
    """An operator, operator version, domain or element type the runtime does not support."""

    code: ErrorCode

class FailedPreconditionError(Error, RuntimeError):
    """Wrong state: a closed state, a context held by another run."""

    code: ErrorCode

class InternalError(Error, RuntimeError):
    """A broken invariant inside the runtime (a bug: please report it)."""

    code: ErrorCode

class CancelledError(Error, RuntimeError):
    """A run ended by request_stop() or its run_timeout."""

    code: ErrorCode

class ModelFileNotFoundError(Error, FileNotFoundError):
    """A model file (or one of its external-data files) does not exist."""

    code: ErrorCode

class InvalidTypeError(Error, TypeError):
    """An argument of the wrong Python type (a feed that is not an array, ...)."""

    code: ErrorCode

class IndexOutOfRangeError(Error, IndexError):
    """An index out of range."""

    code: ErrorCode

class InvalidBufferError(Error, BufferError):
    """A buffer that cannot be viewed as asked."""

    code: ErrorCode

def runtime_event_action_name(action: int) -> str:
    """'add', 'replace', 'remove', 'run_node', 'persistent_storage'; 'unknown' for other values."""

class RuntimeEvent:
    """One record of the event log. Read-only."""

    @property
    def action(self) -> RuntimeEventAction: ...
    @property
    def kind(self) -> TensorKindName:
        """Role of the value for tensor events ('unknown' otherwise)."""
    @property
    def timestamp_ns(self) -> int:
        """Nanoseconds since the Unix epoch; a node's dispatch start for run_node events."""
    @property
    def name(self) -> str:
        """Value name (add/replace/remove/persistent_storage) or node name (run_node)."""
    @property
    def data_type(self) -> int:
        """ONNX TensorProto element type: of a tensor's elements, a map's values or a
        sequence's elements; 0 for other values."""
    @property
    def shape(self) -> tuple[int, ...]:
        """A tensor's shape; (entries,) for a map; (items,) for a sequence or sequence of maps."""
    @property
    def value_kind(self) -> str:
        """For a value that is not a tensor: 'sequence', 'map', 'map sequence', 'empty optional'
        or 'encoded'; '' otherwise."""
    @property
    def op_domain(self) -> str: ...
    @property
    def op_type(self) -> str: ...
    @property
    def inputs(self) -> tuple[str, ...]:
        """Input value names of a dispatched node."""
    @property
    def duration_ns(self) -> int:
        """How long a dispatched node ran (run_node only)."""
    @property
    def node_index(self) -> int:
        """Position of the node in its graph; -1 for graph inputs, removals and idle contexts,
        -2 for initializers."""
    @property
    def subgraph_node_index(self) -> int:
        """Index of the node owning the subgraph the event happened in; -1 at top level."""
    @property
    def subgraph_attr_name(self) -> str:
        """Attribute holding that subgraph ('then_branch', 'body', ...); '' at top level."""
    @property
    def allocated_bytes(self) -> int:
        """Allocator live bytes when the event was recorded."""
    @property
    def peak_bytes(self) -> int:
        """Allocator peak bytes when the event was recorded."""
    @property
    def storage_allocations(self) -> int:
        """Persistent-storage buffers allocated by this event (persistent_storage only)."""
    @property
    def storage_allocated_bytes(self) -> int:
        """Bytes of those buffers."""
    @property
    def storage_prefix_copied_bytes(self) -> int:
        """Bytes of an existing prefix copied into a new buffer."""
    @property
    def storage_append_copied_bytes(self) -> int:
        """Bytes of newly appended rows written in place."""
    @property
    def storage_reuse_count(self) -> int:
        """Reservations served by an existing buffer without allocating."""
    @property
    def run_id(self) -> int:
        """The session run that recorded the event (process-unique); 0 outside any run."""
    @property
    def session_id(self) -> int:
        """RuntimeSession.session_id of that run's session; 0 outside a run."""
    @property
    def thread_id(self) -> int:
        """The operating system's id of the recording thread."""
    @property
    def process_id(self) -> int:
        """The recording process's id."""
    @property
    def covered_node_indices(self) -> tuple[int, ...]:
        """Positions, in the graph as written, of the nodes this record stands for after
        build-time rewriting (a fused node's nodes, the nodes folded into a constant); ()
        for a node that runs as written."""
    @property
    def covered_node_names(self) -> tuple[str, ...]:
        """Names of the nodes in covered_node_indices, in the same order."""
    def as_dict(self) -> dict[str, Any]:
        """The event as a dict with 'action' and 'kind' as names; the five storage_* keys appear
        only for persistent_storage events, the covered_node_* keys only when non-empty."""

class Tensor:
    """A named tensor owned or shared by the runtime. numpy.asarray(t) and numpy.from_dlpack(t)
    view it without copying."""

    def __init__(self, array: Feed, name: Name = "") -> None:
        """Wraps a contiguous NumPy array or DLPack tensor without copying (a bool array whose
        bytes are not all 0/1 is the exception: it is copied with every byte made 0 or 1)."""
    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def data_type(self) -> int:
        """ONNX TensorProto element type."""
    @property
    def readonly(self) -> bool:
        """True when the memory must not be written: a view of persistent state, of a feed or of
        a constant. NumPy views are then read-only (docs/zero-copy.md)."""
    @property
    def is_contiguous(self) -> bool: ...
    def numpy(self) -> np.ndarray:
        """A NumPy view, typed with ml_dtypes for bfloat16 and float8. Copies for strings (an
        object array of str elements, or bytes for elements that are not valid UTF-8) and for the packed sub-byte types (int4, uint4, int2, uint2, float4e2m1,
        float6), which NumPy keeps one element per byte."""
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """numpy.asarray(t) for the tensors the buffer protocol cannot show: strings (copied);
        packed sub-byte tensors raise TypeError (call .numpy(), which unpacks them)."""
    @staticmethod
    def pack(array: np.ndarray, name: str = "") -> Tensor:
        """A new tensor packing an ml_dtypes int4, uint4, int2, uint2, float4_e2m1fn,
        float6_e2m3fn or float6_e3m2fn array (one element per byte in NumPy) as the runtime
        stores it: a copy."""
    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """DLPack export: a 1.0 versioned capsule for a consumer passing max_version >= (1, 0),
        else a 0.6 one. Writable tensors are shared; a read-only one is copied unless copy=False,
        which shares it flagged read-only (BufferError for an unversioned consumer)."""
    def __dlpack_device__(self) -> tuple[int, int]: ...
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...

class RuntimeContext:
    """Holds a run's values, the shared event log and the kernel-usage recorder. One run at a
    time: a run holds the context, and a second run or a value access from another thread
    meanwhile raises RuntimeError; use one context per thread. request_stop() works from any
    thread."""

    kernel_usage_limit: int
    """Kernel-usage names kept before further ones are dropped (1024)."""

    def __init__(self, kernel_context: KernelContext | None = None, *, events_enabled: bool = False) -> None:
        """Defaults: a fresh KernelContext (newest supported opset, no custom kernels), events off."""
    @property
    def events_enabled(self) -> bool:
        """Whether events are recorded (fixed at construction)."""
    def events(self) -> list[RuntimeEvent]:
        """A snapshot of the shared event log, in recording order."""
    def clear_events(self) -> None:
        """Empties the log shared by all related contexts; values stay."""
    def clear(self) -> None:
        """Empties the shared log and this context's values."""
    def copy(self) -> RuntimeContext:
        """A copy sharing the event log, recorder, stop state and tensor storage; it starts idle."""
    def __copy__(self) -> RuntimeContext: ...
    def set_kernel_usage_enabled(self, enabled: bool) -> None: ...
    @property
    def kernel_usage_enabled(self) -> bool: ...
    def get_kernel_usage(self) -> list[str]:
        """The implementation names recorded so far ('MatMul/float32/blas', ...)."""
    def clear_kernel_usage(self) -> None: ...
    def record_kernel_usage(self, name: str) -> None: ...
    def put(self, name: Name, value: Feed, kind: TensorKindName = "unknown") -> None:
        """Stores a value without copying (records add or replace)."""
    def get(self, name: Name) -> Value:
        """The value named ``name``; KeyError when absent."""
    def remove(self, name: Name, kind: TensorKindName = "unknown") -> bool:
        """Removes a value (records remove); False if absent."""
    def __contains__(self, name: Name) -> bool: ...
    def tensors(self) -> dict[str, Tensor]:
        """Plain tensors by name."""
    def values(self) -> dict[str, Value]:
        """Sequences, optionals and encoded values by name."""
    def set_retained_outputs(self, names: Sequence[Name]) -> None:
        """Output names whose storage goes to an external owner (skips output materialisation)."""
    def request_stop(self) -> None:
        """Asks the run in flight in this context (or a related one: copies, children) to stop at
        its next node or loop iteration with RuntimeError; when none is in flight, the next run
        stops at once. Callable from any thread; never blocks."""
    @property
    def running(self) -> bool:
        """Whether a run holds this context now (a snapshot)."""
    @property
    def run_timeout(self) -> float | None:
        """Seconds each run in this context may take (checked before every node and loop
        iteration; a run over it raises RuntimeError), or None (the default). 0 also means none."""
    @run_timeout.setter
    def run_timeout(self, seconds: float | None) -> None: ...
    @property
    def retained_outputs(self) -> list[str]: ...
    @property
    def allocated_bytes(self) -> int:
        """The allocator's live bytes now."""
    @property
    def peak_bytes(self) -> int:
        """The allocator's peak bytes so far."""

class RuntimeSessionOptions:
    """How a RuntimeSession or PersistentValueState is built."""

    def __init__(self, *, persistent_tensor_initial_capacity: int = 32, num_threads: int = 0,
                 kernel_context: KernelContext | None = None, fuse_conv_batchnorm: bool = True,
                 load_mode: Literal["copy", "map"] = "copy",
                 max_expanded_nodes: int = 1_000_000, max_nesting_depth: int = 64,
                 max_subgraphs: int = 100_000, persistent_tensor_reserved_rows: int = 4096,
                 fold_constants: bool = True, eliminate_noop_nodes: bool = True,
                 fuse_gelu: bool = True, fuse_conv_activation: bool = True,
                 fuse_attention: bool = True, fuse_quantized_matmul: bool = True, fuse_qdq: bool = True,
                 thread_pool: SharedThreadPool | None = None, fuse_conv_add: bool = True,
                 fuse_matmul_add: bool = True, fuse_matmul_integer_scale: bool = True,
                 fuse_dequantize_gather: bool = True, fuse_conv_scale: bool = True,
                 fuse_conv_concat: bool = True, quantize_matmul_activations: bool = False) -> None: ...
    persistent_tensor_initial_capacity: int
    """Rows reserved for the first append to a persistent value, 0 to 2**24; 0 disables
    reservations. Out of range: ValueError when set."""
    persistent_tensor_reserved_rows: int
    """Rows of lazily backed address space a persistent value is laid out for (memory is used
    only where rows are written; appends up to this length never copy the prefix), 0 to 2**24;
    0 turns it off. Out of range: ValueError when set."""
    num_threads: int
    """Ranges one run splits each parallel region into, the calling thread taking part, 0 to
    1024; 0 means the size of the shared pool, 1 no pool. The session starts no thread of its
    own: the ranges run on `thread_pool` or the process-wide pool (docs/scaling.md). Out of
    range: ValueError."""
    thread_pool: SharedThreadPool | None
    """The pool whose workers run the session's parallel regions, shared with other sessions;
    None: the process-wide pool (set_thread_budget)."""
    max_expanded_nodes: int
    """Build budget: nodes compiled in total (function bodies once per call, subgraphs
    included); at least 1. A model over it fails to build with ValueError."""
    max_nesting_depth: int
    """Build budget: levels of subgraphs and function bodies below the main graph, 0 to 1024."""
    max_subgraphs: int
    """Build budget: subgraphs compiled in total; at least 0."""
    kernel_context: KernelContext | None
    """Custom kernels to resolve against when the session is built."""
    fuse_conv_batchnorm: bool
    """Fold float32 Conv -> BatchNormalization pairs with constant parameters into new Conv
    weights at build time (one FusedConv node, kernel usage ".../<path>+bn"); False keeps them."""
    fuse_conv_activation: bool
    """Run the activation that alone reads a float32 Conv's output (Relu, LeakyRelu, Clip,
    HardSigmoid, HardSwish, Sigmoid, Tanh, SiLU as Mul(y, Sigmoid(y))) in the convolution's
    epilogue, as one FusedConv node (docs/graph-passes.md)."""
    fuse_conv_add: bool
    """Add the other input of a residual Add that alone reads a float32 Conv's output in the
    convolution's epilogue, before a fused activation, with Add's broadcasting (one FusedConv
    node, kernel usage ".../<path>+add"; docs/graph-passes.md)."""
    fuse_conv_scale: bool
    """Fold a Mul that alone feeds a float32 Conv's input X into that Conv (one FusedConv node). When
    one operand holds one factor per channel of the other (a squeeze-and-excitation block), an
    AVX-512 1x1 convolution applies the factors as it reads X (kernel usage ".../<path>+mul");
    another convolution scales W's input channels instead of X when W is small against X
    (".../<path>+scale"); otherwise the Mul runs inside the node ("+mul"). Results match the two
    nodes up to one rounding per product (docs/graph-passes.md)."""
    fuse_conv_concat: bool
    """Let float32 convolutions whose outputs only a Concat along channels reads (squeezenet's fire
    modules, inception blocks) write their channels straight into the Concat's output: the Concat
    copies nothing, the convolutions run as a chain of FusedConv nodes whose last stands for the
    Concat (kernel usage ".../<path>+concat"); results equal the unfused graph's
    (docs/graph-passes.md)."""
    fold_constants: bool
    """Compute nodes whose inputs are all constants once, at build time; they are no longer
    dispatched and their results appear as initializers (docs/graph-passes.md)."""
    eliminate_noop_nodes: bool
    """Remove Identity, inference Dropout and same-type Cast nodes and collapse Reshape chains
    at build time (docs/graph-passes.md)."""
    fuse_gelu: bool
    """Run the decomposed GELU forms exporters write (Erf form, tanh form) as one Gelu kernel
    (docs/graph-passes.md)."""
    fuse_attention: bool
    """Run the scaled dot-product attention exporters write as separate nodes (MatMul, scale,
    mask Add, Softmax, Where(IsNaN) guard, MatMul) as one attention kernel that never transposes
    or copies the keys; its operands must be 4-D, of one batch size, with key/value heads equal to
    the query heads or 1. Also lets attention read grouped-query keys and values once instead of
    through the chain that repeats every head (docs/graph-passes.md)."""
    fuse_quantized_matmul: bool
    """Run MatMul, Gemm or Conv(A, DequantizeLinear(W)) with a constant int4/uint4/int8/uint8 W (per
    tensor, per column or output channel, or blocked along K for MatMul and Gemm; float32 scales) as
    one kernel that keeps W packed in 4 or 8 bits and dequantizes it while multiplying; no float
    copy of W is held (docs/quantization.md)."""
    fuse_qdq: bool
    """Run the DequantizeLinear -> Conv / MatMul / Add / Gemm -> QuantizeLinear groups of QDQ models
    as QLinearConv / QLinearMatMul / QLinearAdd / QGemm (a Gemm with a float output too; and MaxPool
    between a matching pair on the quantized values); results may differ by one quantization step
    (docs/quantization.md)."""
    quantize_matmul_activations: bool
    """Let the blocked 4-bit weight-only products of up to 8 rows quantize each block of A to
    int8 and sum it with integer dot products (AVX-512 VNNI; kernel usage
    "MatMul/float32/uint4-gemv-avx512vnni-a8"), as ONNX Runtime's MatMulNBits does at accuracy
    level 4. Results differ from the written graph by A's 8-bit rounding (docs/quantization.md).
    Off by default."""
    fuse_matmul_add: bool
    """Run MatMul(A, B) followed by Add of a bias, with B a constant float32 matrix [K, N] and the
    bias a constant float32 vector [N], as one MatMulAdd node whose product starts from the bias
    (kernel usage "MatMulAdd/float32/<path>"); results match the two nodes up to rounding
    (docs/graph-passes.md)."""
    fuse_matmul_integer_scale: bool
    """Run the MatMulInteger -> Cast to float32 -> Mul by the scales (-> Add of a constant bias)
    chains onnxruntime's quantize_dynamic writes for each Linear layer as one MatMulIntegerToFloat
    node that converts the int32 product in place (kernel usage
    "MatMulIntegerToFloat/<A type>/<path>"); results equal the unfused nodes' (docs/quantization.md)."""
    fuse_dequantize_gather: bool
    """Run Gather(DequantizeLinear(x, scale[, zero_point])) with x a constant int8/uint8 tensor and
    one float32 scale (a QDQ model's embedding lookup) as one DequantizeGather node that gathers the
    8-bit rows and dequantizes only those (kernel usage "DequantizeGather/<x type>/rows"); results
    equal the written graph's (docs/quantization.md)."""
    load_mode: Literal["copy", "map"]
    """How a model path is loaded: "copy" reads the file and its external data into runtime
    memory (later changes to the files cannot reach the session); "map" maps them without copying,
    and they must not be truncated or modified while the session lives (docs/model-files.md)."""

class SharedThreadPool:
    """Worker threads sessions share (RuntimeSessionOptions(thread_pool=...)), so many sessions
    run on one budget of threads. Sessions use the process-wide pool when none is given."""

    def __init__(self, num_threads: int) -> None:
        """A pool of num_threads threads in total (num_threads - 1 workers and the caller)."""
    @property
    def num_threads(self) -> int:
        """The pool's budget: its workers and one calling thread."""

def set_thread_budget(num_threads: int) -> None:
    """Sets the process-wide pool's size (0: one per core) before the first session is built;
    afterwards a different value raises RuntimeError."""

def thread_budget() -> int:
    """The process-wide pool's size."""

class RuntimeSession:
    """A model compiled for execution. run() may be called from several threads, each with its
    own RuntimeContext; it releases the GIL. PersistentValueState(session, initial) runs many
    streams of state on one session (docs/scaling.md)."""

    def __init__(self, model: ModelSource, options: RuntimeSessionOptions | None = None, *,
                 base_dir: str | os.PathLike[str] | None = None) -> None: ...
    @overload
    def run(self, context: RuntimeContext, feeds: Mapping[Name, Feed] | None = None) -> dict[str, Value]: ...
    @overload
    def run(self, feeds: Mapping[Name, Feed]) -> dict[str, Value]: ...
    @overload
    def run(self, context: Sequence[Name] | None, feeds: Mapping[Name, Feed]) -> list[Value | None]: ...
    @overload
    def run(self, context: RuntimeContext, feeds: Mapping[Name, Feed] | None = None, *,
            reuse_values: bool) -> dict[str, Value]: ...
    def run(self, context: Any = None, feeds: Mapping[Name, Feed] | None = None, *,
            reuse_values: bool = False) -> Any:
        """run(feeds) returns every graph output by name; run(None, feeds) and run([names],
        feeds) a list in graph order or in the order of names; each call uses a fresh default
        context, so any number of threads may call them at once. run(context, feeds) runs in
        `context` (events, kernel usage, stop, timeout). A required input missing from feeds is
        a ValueError naming it unless reuse_values=True, which runs with the value the context
        holds from an earlier run. A failed run leaves the context's values as they were."""
    def _custom_plan_count(self) -> int:
        """Diagnostics: plans cached for contexts with custom kernels of their own."""
    @property
    def input_names(self) -> list[str]:
        """Names of every graph input, in graph order."""
    @property
    def output_names(self) -> list[str]:
        """Names of every graph output, in graph order."""
    @property
    def required_input_names(self) -> list[str]:
        """Inputs without an initializer default."""
    @property
    def inputs(self) -> list[ValueInfo]:
        """Every graph input: name, shape (ints, symbolic names, None), type string, dtype."""
    @property
    def outputs(self) -> list[ValueInfo]:
        """Every graph output, in graph order."""
    def get_inputs(self) -> list[ValueInfo]:
        """ONNX Runtime's name for inputs."""
    def get_outputs(self) -> list[ValueInfo]:
        """ONNX Runtime's name for outputs."""
    @property
    def metadata(self) -> ModelMetadata:
        """The model's producer, domain, version, doc string, graph name, opsets and metadata_props."""
    def get_modelmeta(self) -> ModelMetadata:
        """ONNX Runtime's name for metadata."""
    @property
    def load_time_ns(self) -> int:
        """How long reading the model took, ns."""
    @property
    def compile_time_ns(self) -> int:
        """How long compiling the session took, ns."""
    @property
    def session_id(self) -> int:
        """A process-unique id (1, 2, ... in construction order)."""
    @property
    def num_threads(self) -> int:
        """Ranges each parallel region of a run is split into (1: no pool)."""

class ValueInfo:
    """A graph input or output as the model declares it; also readable as info["name"]."""

    name: str
    shape: list[int | str | None] | None
    """Fixed dimensions as ints, symbolic ones by name, unknown ones None; None for unknown rank."""
    dims: list[int] | None
    """The dimensions as ints, -1 where not fixed."""
    type: str
    """The ONNX type string, such as 'tensor(float)' or 'seq(tensor(int64))'."""
    dtype: np.dtype[Any] | None
    """The numpy dtype of a tensor's elements."""
    data_type: int
    """The ONNX element type code."""
    kind: str
    """'tensor', 'sequence', 'map', 'optional', 'sparse_tensor' or 'unknown'."""
    def __getitem__(self, key: str) -> Any:
        """The attribute named key."""
    def __contains__(self, key: object) -> bool:
        """Whether key is one of keys()."""
    def __iter__(self) -> Iterator[str]:
        """Iterates over keys()."""
    def __len__(self) -> int:
        """The number of keys()."""
    def keys(self) -> list[str]:
        """The attribute names readable as info[name]."""
    def get(self, key: str, default: Any = None) -> Any:
        """info[key], or default."""

class ModelMetadata:
    """What a model says about itself, like ONNX Runtime's get_modelmeta()."""

    producer_name: str
    producer_version: str
    domain: str
    model_version: int
    doc_string: str
    graph_name: str
    ir_version: int
    opset_imports: dict[str, int]
    metadata_props: dict[str, str]
    @property
    def description(self) -> str:
        """ONNX Runtime's name for doc_string."""
    @property
    def version(self) -> int:
        """ONNX Runtime's name for model_version."""
    @property
    def custom_metadata_map(self) -> dict[str, str]:
        """ONNX Runtime's name for metadata_props."""
    def __getitem__(self, key: str) -> Any:
        """The attribute named key."""
    def __contains__(self, key: object) -> bool:
        """Whether key is one of keys()."""
    def __iter__(self) -> Iterator[str]:
        """Iterates over keys()."""
    def __len__(self) -> int:
        """The number of keys()."""
    def keys(self) -> list[str]:
        """The attribute names readable as meta[name]."""
    def get(self, key: str, default: Any = None) -> Any:
        """meta[key], or default."""

class ModelBytes(bytes):
    """Serialized model bytes that remember the folder their external data is read from
    (`base_dir`, None for a self-contained model)."""

    base_dir: str | bytes | None
    def __new__(cls, data: bytes, base_dir: str | bytes | None = None) -> ModelBytes: ...

def with_persistent_bindings(model: ModelSource, bindings: Mapping[Name, Name], *,
                             base_dir: str | os.PathLike[str] | None = None) -> ModelBytes:
    """The model with declarations {input_name: output_name} (the output of one call feeds the
    input of the next), as ModelBytes remembering the folder of its external data: the model
    file's folder, `base_dir`, or the one a ModelBytes argument carries. Standard ONNX readers
    ignore the declarations."""

class PersistentValueState:
    """Feedback values (a KV cache) kept across calls, appended in place. One call at a time;
    an overlapping call raises RuntimeError. States built on one RuntimeSession share it and
    may run at once from different threads (docs/scaling.md)."""

    @overload
    def __init__(self, model: RuntimeSession, initial: Mapping[Name, Feed]) -> None: ...
    @overload
    def __init__(self, model: ModelSource, initial: Mapping[Name, Feed],
                 options: RuntimeSessionOptions | None = None, *,
                 base_dir: str | os.PathLike[str] | None = None) -> None: ...
    def __init__(self, model: Any, initial: Mapping[Name, Feed],
                 options: RuntimeSessionOptions | None = None, *,
                 base_dir: str | os.PathLike[str] | None = None) -> None:
        """Compiles `model` (or shares an already compiled RuntimeSession) and binds the
        initial values."""
    @property
    def session(self) -> RuntimeSession:
        """The session the state runs, shared with the other states built on it."""
    @overload
    def run(self, context: RuntimeContext, feeds: Mapping[Name, Feed] | None = None) -> dict[str, Value]: ...
    @overload
    def run(self, feeds: Mapping[Name, Feed]) -> dict[str, Value]: ...
    @overload
    def run(self, context: Sequence[Name] | None, feeds: Mapping[Name, Feed]) -> list[Value | None]: ...
    def run(self, context: Any = None, feeds: Mapping[Name, Feed] | None = None) -> Any:
        """Runs one call with the non-bound inputs, in the forms of RuntimeSession.run (a fresh
        default context unless one is given). Every unbound input must be fed. A failed call
        leaves the state unchanged; bound outputs are read-only views of the next values."""
    def reset(self, values: Mapping[Name, Feed]) -> None:
        """Replaces the persistent values."""
    def close(self) -> None:
        """Releases the state; later calls raise RuntimeError."""
    @property
    def closed(self) -> bool:
        """Whether close() was called."""
    @property
    def values(self) -> dict[str, Tensor]:
        """The persistent values by input name (shared, read-only views)."""
    @property
    def bindings(self) -> dict[str, str]:
        """The declarations {input_name: output_name}."""

def register_kernel(domain: str, op_type: str, fn: Callable[..., Any], kernel_context: KernelContext | None = None,
                    since_version: int = 1) -> None:
    """Registers fn(*inputs, **attributes) -> output(s) as the kernel of (domain, op_type): for
    every session built afterwards, or, with kernel_context, only for runs whose context was
    built from that KernelContext. Overrides built-in kernels."""

def supported_operators() -> list[tuple[str, str, int, int]]:
    """The built-in kernels as (domain, op_type, since, until) tuples, sorted; domain '' is
    ai.onnx. A kernel serves the opset versions since..until of its domain."""

def schema_function_operators() -> list[tuple[str, str, int, int]]:
    """The operators the runtime serves by the function body onnx defines for them, as
    (domain, op_type, since, until) tuples like supported_operators(): a model that imports a
    version in since..until and uses the operator where no kernel serves it runs the body (whose
    operators need kernels in turn)."""

def model_info(model: ModelSource, *, options: RuntimeSessionOptions | None = None) -> dict[str, Any]:
    """Describes a model without compiling it: ir_version, producer_name, producer_version,
    domain, model_version, doc_string, graph_name, opset_imports [(domain, version)], inputs,
    outputs, initializer_count, node_count, persistent_bindings [(input, output)], functions
    [(domain, name)] and operators [{domain, op_type, opset_version, count}], counting nodes in
    subgraphs and function bodies."""

def export_chrome_trace(events: Iterable[RuntimeEvent] | Iterable[Mapping[str, Any]] | RuntimeContext,
                        path: str | os.PathLike[str] | IO[str], *, include_value_events: bool = False,
                        sessions: Iterable[RuntimeSession | PersistentValueState] = ()) -> None:
    """Writes the events as a Chrome trace-event JSON file that Perfetto and chrome://tracing
    open (onnx_light.trace, a wrapper over the C++ ExportChromeTrace)."""
