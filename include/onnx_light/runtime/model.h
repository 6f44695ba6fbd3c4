#pragma once
// Model: an immutable in-memory ONNX model read from the protobuf wire format. Initializer
// elements are viewed where they lie (the mapped file or the caller's buffer), not copied.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/kernel_context.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

struct Graph;

/// ONNX TypeProto, reduced to what the runtime checks.
struct TypeInfo {
  enum class Kind { kUnknown, kTensor, kSequence, kOptional, kMap, kSparseTensor };
  Kind kind = Kind::kUnknown;
  /// Tensor element type (for kTensor / kSparseTensor), or the map key type.
  DataType element_type = DataType::kUndefined;
  /// Dimensions of a tensor type; -1 for a symbolic or unknown dimension. Unset: rank unknown.
  std::optional<std::vector<int64_t>> shape;
  /// Element type of a sequence or optional, value type of a map.
  std::shared_ptr<const TypeInfo> inner;
};

struct ValueInfo {
  std::string name;
  TypeInfo type;
};

enum class AttributeType : int32_t {
  kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5,
  kFloats = 6, kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10,
  kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13, kTypeProtos = 14,
};

struct Attribute {
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

struct Node {
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

struct Initializer {
  std::string name;
  Tensor tensor;
};

/// A graph-declared feedback value: output `output_name` of one call becomes input `input_name`
/// of the next (GraphProto field 1001).
struct PersistentBinding {
  std::string input_name;
  std::string output_name;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Initializer> initializers;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  std::vector<PersistentBinding> persistent_bindings;
};

/// A model-local function (FunctionProto).
struct Function {
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

/// Immutable after loading; safe to share between threads and sessions. `backing` keeps the
/// bytes that initializers view alive (a file mapping or the caller's buffer).
struct Model {
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
  /// Initializer bytes that had to be copied because they were not aligned for their type.
  uint64_t initializer_bytes_copied = 0;

  /// Version imported for `domain` ("" or "ai.onnx" for the default domain); 0 when absent.
  int64_t OpsetVersion(std::string_view domain) const;
};

/// The version `imports` (a model's or a function's opset_imports) gives `domain`; "" and
/// "ai.onnx" both name the default domain. 0 when `domain` is not imported.
int64_t ImportedOpsetVersion(std::span<const OpsetId> imports, std::string_view domain);

/// Reads a model file. The file is memory-mapped and initializers view the mapping; external
/// data is read relative to the file's folder. Throws Error(kInvalidArgument) naming the field
/// and byte offset for malformed input, Error(kNotFound) for a missing file.
std::shared_ptr<const Model> LoadModel(const std::filesystem::path& path);

/// Reads a model from bytes that `owner` keeps alive; initializers view those bytes.
/// `base_directory` resolves external data (empty: external data is an error).
std::shared_ptr<const Model> LoadModelFromBuffer(std::shared_ptr<const void> owner,
                                                 std::span<const std::byte> bytes,
                                                 const std::filesystem::path& base_directory = {});

/// Reads a model from a string of bytes, which the model takes over.
std::shared_ptr<const Model> LoadModelFromBytes(std::string bytes,
                                                const std::filesystem::path& base_directory = {});

/// Returns `model_bytes` with GraphProto field 1001 declarations appended for each
/// {input_name, output_name} pair (existing declarations are kept). The result is a valid ONNX
/// model for every standard reader, which ignores the field.
std::string WithPersistentBindings(std::string_view model_bytes,
                                   std::span<const PersistentBinding> bindings);

}  // namespace onnx_light::runtime
