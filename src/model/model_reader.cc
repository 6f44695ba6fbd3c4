// ModelProto reader and the public LoadModel* entry points.

#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "model/graph_reader.h"
#include "model/load_context.h"
#include "model/mapped_file.h"
#include "model/open_file.h"
#include "model/proto_reader.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

namespace {

using model_internal::LoadContext;
using model_internal::ProtoReader;

[[noreturn]] void FailModel(uint64_t offset, std::string_view problem) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("malformed model: ModelProto at byte {}: {}", offset, problem));
}

void ReadModelFields(ProtoReader reader, LoadContext& context, Model& model) {
  bool has_graph = false;
  bool has_ir_version = false;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1:
        model.ir_version = reader.ReadInt64("ir_version");
        has_ir_version = true;
        break;
      case 2: model.producer_name = reader.ReadString("producer_name"); break;
      case 3: model.producer_version = reader.ReadString("producer_version"); break;
      case 4: model.domain = reader.ReadString("domain"); break;
      case 5: model.model_version = reader.ReadInt64("model_version"); break;
      case 6: model.doc_string = reader.ReadString("doc_string"); break;
      case 7:
        // Protobuf would merge repeated occurrences; no writer produces them, so refuse.
        if (has_graph) reader.Fail("graph", reader.field_offset(), "the graph appears twice");
        model.graph = model_internal::ReadGraph(reader.ReadMessage("graph", "GraphProto"), context);
        has_graph = true;
        break;
      case 8:
        model.opset_imports.push_back(
            model_internal::ReadOpsetId(reader.ReadMessage("opset_import", "OperatorSetIdProto")));
        break;
      case 14:
        model.metadata_props.push_back(model_internal::ReadStringEntry(
            reader.ReadMessage("metadata_props", "StringStringEntryProto")));
        break;
      case 25:
        model.functions.push_back(model_internal::ReadFunction(
            reader.ReadMessage("functions", "FunctionProto"), context));
        break;
      default: reader.Skip();
    }
  }
  const uint64_t end = reader.offset();
  if (!has_ir_version) FailModel(end, "ir_version is not set");
  if (!has_graph) FailModel(end, "graph is not set");
  if (model.opset_imports.empty()) FailModel(end, "opset_import is empty");
}

int64_t WallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

LoadContext MakeContext(const ModelLoadOptions& options) {
  LoadContext context;
  context.start_ns = WallClockNs();
  context.mode = options.mode;
  context.allocator = options.allocator ? options.allocator : MakeCpuAllocator();
  return context;
}

std::shared_ptr<const Model> ReadModel(LoadContext& context, std::shared_ptr<const void> backing,
                                       std::span<const std::byte> bytes,
                                       const std::filesystem::path& base_directory) {
  context.backing = backing;
  context.base_directory = base_directory;

  auto model = std::make_shared<Model>();
  ReadModelFields(ProtoReader({bytes, 0}, "ModelProto"), context, *model);
  model->base_directory = base_directory;
  model->backing = std::move(backing);
  model->load_mode = context.mode;
  model->initializer_bytes_copied = context.initializer_bytes_copied;
  model->initializer_bytes_fixed_in_place = context.initializer_bytes_fixed_in_place;
  model->file_bytes_read = context.file_bytes_read;
  model->load_start_ns = context.start_ns;
  model->load_duration_ns = WallClockNs() - context.start_ns;
  return model;
}

}  // namespace

std::shared_ptr<const Model> LoadModel(const std::filesystem::path& path,
                                       const ModelLoadOptions& options) {
  LoadContext context = MakeContext(options);
  model_internal::ModelFileHandles handles = model_internal::OpenModelFile(path);
  const uint64_t size = handles.file.size;
  std::shared_ptr<const void> backing;
  std::span<const std::byte> bytes;
  if (options.mode == LoadMode::kMap) {
    auto file = model_internal::MappedFile::Map(handles.file.fd.get(), size, path);
    bytes = file->bytes();
    backing = std::shared_ptr<const void>(std::move(file), bytes.data());
  } else {
    std::shared_ptr<void> buffer = AllocateBuffer(context.allocator, static_cast<size_t>(size));
    const std::span<std::byte> destination(static_cast<std::byte*>(buffer.get()),
                                           static_cast<size_t>(size));
    model_internal::ReadFileRange(handles.file.fd.get(), 0, destination, path);
    context.file_bytes_read += size;
    context.owned_bytes = destination;
    bytes = destination;
    backing = std::move(buffer);
  }
  handles.file.fd = model_internal::FileDescriptor();
  // External data is resolved beneath the folder handle the model file was opened from.
  context.folder = std::move(handles.folder);
  return ReadModel(context, std::move(backing), bytes, handles.folder_path);
}

std::shared_ptr<const Model> LoadModelFromBuffer(std::shared_ptr<const void> owner,
                                                 std::span<const std::byte> bytes,
                                                 const std::filesystem::path& base_directory,
                                                 const ModelLoadOptions& options) {
  LoadContext context = MakeContext(options);
  return ReadModel(context, std::move(owner), bytes, base_directory);
}

std::shared_ptr<const Model> LoadModelFromBytes(std::string bytes,
                                                const std::filesystem::path& base_directory,
                                                const ModelLoadOptions& options) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(owned->data()),
                                        owned->size());
  LoadContext context = MakeContext(options);
  return ReadModel(context, std::move(owned), view, base_directory);
}

}  // namespace onnx_light::runtime
