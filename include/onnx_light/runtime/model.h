#pragma once
// Model: an immutable in-memory ONNX model read from the protobuf wire format. A model file and
// its external data are read into runtime memory (LoadMode::kCopy, the default) or mapped
// (LoadMode::kMap); initializer elements are then viewed where they lie, not copied again.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/kernel_context.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

struct Graph;

/// ONNX TypeProto, reduced to what the runtime checks.
struct ONNX_LIGHT_API TypeInfo {
  enum class Kind { kUnknown, kTensor, kSequence, kOptional, kMap, kSparseTensor };
  Kind kind = Kind::kUnknown;
  /// Tensor element type (for kTensor / kSparseTensor), or the map key type.
  DataType element_type = DataType::kUndefined;
  /// Dimensions of a tensor type; -1 for a symbolic or unknown dimension. Unset: rank unknown.
  std::optional<std::vector<int64_t>> shape;
  /// Names of symbolic dimensions (TensorShapeProto dim_param), one per entry of `shape`: "" for
  /// a dimension given as a number or left unnamed. Empty when no dimension has a name.
  std::vector<std::string> dim_params;
  /// Element type of a sequence or optional, value type of a map.
  std::shared_ptr<const TypeInfo> inner;
};

struct ONNX_LIGHT_API ValueInfo {
  std::string name;
  TypeInfo type;
};

enum class AttributeType : int32_t {
  kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5,
  kFloats = 6, kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10,
  kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13, kTypeProtos = 14,
};

struct ONNX_LIGHT_API Attribute {
  std::string name;
  AttributeType type = AttributeType::kUndefined;
  /// Inside a function body: the caller's attribute this one refers to ("" when a value).
  std::string ref_attr_name;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<const Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<const Graph>> graphs;
};

struct ONNX_LIGHT_API Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" and "ai.onnx" both mean the default domain
  std::string overload;
  /// Value names; "" marks an omitted optional input or an unused optional output.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;

  const Attribute* FindAttribute(std::string_view attr_name) const;
};

struct ONNX_LIGHT_API Initializer {
  std::string name;
  Tensor tensor;
};

/// A graph-declared feedback value: output `output_name` of one call becomes input `input_name`
/// of the next (GraphProto field 1001).
struct ONNX_LIGHT_API PersistentBinding {
  std::string input_name;
  std::string output_name;
};

struct ONNX_LIGHT_API Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Initializer> initializers;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  std::vector<PersistentBinding> persistent_bindings;
};

/// A model-local function (FunctionProto).
struct ONNX_LIGHT_API Function {
  std::string name;
  std::string domain;
  std::string overload;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// Attribute names without defaults, and attributes with default values.
  std::vector<std::string> attribute_names;
  std::vector<Attribute> attribute_defaults;
  std::vector<Node> nodes;
  std::vector<OpsetId> opset_imports;
};

/// How a model loaded from files relates to those files afterwards (docs/model-files.md).
enum class LoadMode {
  /// The model file and every external-data range are read (pread) into memory the runtime
  /// owns; nothing stays mapped or open. Truncating, rewriting or deleting the files later has
  /// no effect on the model or on sessions made from it.
  kCopy,
  /// The model file and external-data files are memory-mapped (MAP_PRIVATE) and initializers
  /// view the mappings: no copy, pages shared with the page cache. Contract: the files must not
  /// be truncated or modified while the model (or any tensor or session made from it) is alive;
  /// otherwise reading a weight may raise SIGBUS in the process or see the new bytes. For very
  /// large model files that nobody rewrites.
  kMap,
};

struct ONNX_LIGHT_API ModelLoadOptions {
  LoadMode mode = LoadMode::kCopy;
  /// Memory for the copied file bytes (copy mode) and for initializers the loader decodes or
  /// copies (typed value fields, misaligned raw data, bool normalisation). Null: a fresh
  /// CpuAllocator for this load. Its live bytes then measure the model's runtime-owned memory.
  std::shared_ptr<Allocator> allocator;
};

/// Immutable after loading; safe to share between threads and sessions. `backing` keeps the
/// bytes the model was parsed from alive (the copied or mapped file, or the caller's buffer);
/// every initializer that views them shares that ownership.
struct ONNX_LIGHT_API Model {
  int64_t ir_version = 0;
  std::vector<OpsetId> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  Graph graph;
  std::vector<Function> functions;
  /// Folder that external-data locations are relative to (empty for in-memory models).
  std::filesystem::path base_directory;
  std::shared_ptr<const void> backing;
  /// How the files were loaded (kCopy for models read from memory).
  LoadMode load_mode = LoadMode::kCopy;
  /// Initializer bytes copied to a new block after the model bytes were in memory or mapped:
  /// raw data not aligned for its type, and bool data holding bytes other than 0 and 1.
  /// External data read in copy mode goes straight to its aligned block and is not counted.
  uint64_t initializer_bytes_copied = 0;
  /// The same fixes made without new memory: in copy mode the model file's bytes belong to the
  /// model, so misaligned raw data is moved to an aligned address over already parsed bytes of
  /// its own TensorProto, and bool data is normalised where it lies.
  uint64_t initializer_bytes_fixed_in_place = 0;
  /// Bytes read from the model file and external-data files into runtime memory (copy mode);
  /// 0 for map mode and for models read from memory.
  uint64_t file_bytes_read = 0;
  /// When reading began (ns since the Unix epoch) and how long it took, files and external data
  /// included: for traces (ChromeTraceOptions::build_spans).
  int64_t load_start_ns = 0;
  int64_t load_duration_ns = 0;
  /// ModelProto.metadata_props: (key, value) pairs in file order.
  std::vector<std::pair<std::string, std::string>> metadata_props;

  /// Version imported for `domain` ("" or "ai.onnx" for the default domain); 0 when absent.
  int64_t OpsetVersion(std::string_view domain) const;
};

/// The version `imports` (a model's or a function's opset_imports) gives `domain`; "" and
/// "ai.onnx" both name the default domain. 0 when `domain` is not imported.
ONNX_LIGHT_API int64_t ImportedOpsetVersion(std::span<const OpsetId> imports, std::string_view domain);

/// Reads a model file; external data is read relative to the file's folder. `options.mode`
/// says whether the files are copied (default) or mapped. Throws Error(kInvalidArgument) naming
/// the field and byte offset for malformed input or a file that is not a regular file (a FIFO or
/// device is refused without blocking), Error(kNotFound) for a missing file.
///
/// External data: each location must be relative and resolve beneath the model folder, in one
/// resolution (openat2 RESOLVE_BENEATH; without it, a walk that refuses symbolic links), and
/// name a regular file; otherwise Error(kInvalidArgument) naming the tensor, location and folder
/// (kNotFound for a missing file). Bool tensors are normalised: a byte other than 0 means 1.
ONNX_LIGHT_API std::shared_ptr<const Model> LoadModel(const std::filesystem::path& path,
                                       const ModelLoadOptions& options = {});

/// Reads a model from bytes that `owner` keeps alive; initializers view those bytes, so the
/// caller must not change them while the model lives. `base_directory` resolves external data
/// (empty: external data is an error), which `options.mode` copies or maps as LoadModel does.
ONNX_LIGHT_API std::shared_ptr<const Model> LoadModelFromBuffer(std::shared_ptr<const void> owner,
                                                 std::span<const std::byte> bytes,
                                                 const std::filesystem::path& base_directory = {},
                                                 const ModelLoadOptions& options = {});

/// Reads a model from a string of bytes, which the model takes over.
ONNX_LIGHT_API std::shared_ptr<const Model> LoadModelFromBytes(std::string bytes,
                                                const std::filesystem::path& base_directory = {},
                                                const ModelLoadOptions& options = {});

/// Returns `model_bytes` with GraphProto field 1001 declarations appended for each
/// {input_name, output_name} pair (existing declarations are kept). The result is a valid ONNX
/// model for every standard reader, which ignores the field.
ONNX_LIGHT_API std::string WithPersistentBindings(std::string_view model_bytes,
                                   std::span<const PersistentBinding> bindings);

}  // namespace onnx_light::runtime
