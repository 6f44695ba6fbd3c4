#include "model/tensor_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/packed_bits.h"
#include "model/external_data.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

namespace {

// TensorProto field numbers.
constexpr uint32_t kDims = 1;
constexpr uint32_t kDataType = 2;
constexpr uint32_t kSegment = 3;
constexpr uint32_t kFloatData = 4;
constexpr uint32_t kInt32Data = 5;
constexpr uint32_t kStringData = 6;
constexpr uint32_t kInt64Data = 7;
constexpr uint32_t kName = 8;
constexpr uint32_t kRawData = 9;
constexpr uint32_t kDoubleData = 10;
constexpr uint32_t kUInt64Data = 11;
constexpr uint32_t kDocString = 12;
constexpr uint32_t kExternalData = 13;
constexpr uint32_t kDataLocation = 14;

constexpr int32_t kLocationDefault = 0;
constexpr int32_t kLocationExternal = 1;

std::string_view TypedFieldName(uint32_t field) {
  switch (field) {
    case kFloatData: return "float_data";
    case kInt32Data: return "int32_data";
    case kStringData: return "string_data";
    case kInt64Data: return "int64_data";
    case kDoubleData: return "double_data";
    case kUInt64Data: return "uint64_data";
    default: return "?";
  }
}

// The typed field that holds values of `type` when raw_data is not used (ONNX's rules).
uint32_t TypedFieldFor(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kComplex64: return kFloatData;
    case DataType::kInt32:
    case DataType::kInt16:
    case DataType::kInt8:
    case DataType::kUInt16:
    case DataType::kUInt8:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUInt2:
    case DataType::kInt2:
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2: return kInt32Data;
    case DataType::kString: return kStringData;
    case DataType::kInt64: return kInt64Data;
    case DataType::kDouble:
    case DataType::kComplex128: return kDoubleData;
    case DataType::kUInt32:
    case DataType::kUInt64: return kUInt64Data;
    case DataType::kUndefined: break;
  }
  return 0;
}

bool IsComplex(DataType type) {
  return type == DataType::kComplex64 || type == DataType::kComplex128;
}

// How a sub-byte type packs, for size errors.
std::string_view PackingNote(DataType type) {
  switch (ElementBits(type)) {
    case 4: return " (packed two per byte)";
    case 2: return " (packed four per byte)";
    case 6: return " (packed four per three bytes)";
    default: return "";
  }
}

// Raw bytes are viewed in place only at an address where the element type may live (any
// address for the packed sub-byte types).
size_t RequiredAlignment(DataType type) {
  if (IsSubByte(type)) return 1;
  return IsComplex(type) ? ElementSize(type) / 2 : ElementSize(type);
}

// int32_data entries a tensor of `count` elements needs: one per element, except that each entry
// of a 4-bit type holds one packed byte (two elements) and each entry of a 2-bit type one packed
// byte (four elements). float6 keeps one element per entry. Complex types use float_data/
// double_data with two values per element.
uint64_t TypedValueCount(DataType type, uint64_t count) {
  if (IsComplex(type)) return count > std::numeric_limits<uint64_t>::max() / 2 ? std::numeric_limits<uint64_t>::max() : 2 * count;
  const int bits = ElementBits(type);
  if (bits == 4 || bits == 2) return StorageBytes(type, static_cast<int64_t>(count));
  return count;
}

// What the first pass over a TensorProto learns; the values are decoded in a second pass.
struct TensorHeader {
  uint64_t offset = 0;
  std::string name;
  Shape dims;
  int32_t data_type = 0;
  bool has_raw = false;
  Slice raw;
  uint32_t typed_field = 0;
  uint64_t typed_count = 0;
  uint64_t typed_offset = 0;
  int32_t data_location = kLocationDefault;
  std::vector<std::pair<std::string, std::string>> external_data;
};

[[noreturn]] void FailTensor(ErrorCode code, const TensorHeader& header, uint64_t offset,
                             std::string_view what) {
  throw Error(code, fmt::format("{}TensorProto '{}' at byte {}: {}",
                                code == ErrorCode::kInvalidArgument ? "malformed model: " : "",
                                header.name, offset, what));
}

void CountTyped(ProtoReader& reader, TensorHeader& header) {
  const uint32_t field = reader.field();
  const std::string_view field_name = TypedFieldName(field);
  if (header.typed_field != 0 && header.typed_field != field) {
    reader.Fail(field_name, reader.field_offset(),
                fmt::format("a tensor may not hold both {} and {}",
                            TypedFieldName(header.typed_field), field_name));
  }
  if (header.typed_field == 0) header.typed_offset = reader.field_offset();
  header.typed_field = field;
  uint64_t& count = header.typed_count;
  const auto add = [&count](auto) { ++count; };
  switch (field) {
    case kFloatData: reader.ForEachFixed32(field_name, add); break;
    case kDoubleData: reader.ForEachFixed64(field_name, add); break;
    case kStringData:
      reader.ReadBytes(field_name);
      ++count;
      break;
    default: reader.ForEachVarint(field_name, add); break;
  }
}

TensorHeader ReadHeader(ProtoReader reader) {
  TensorHeader header;
  header.offset = reader.message().offset;
  while (reader.Next()) {
    switch (reader.field()) {
      case kDims:
        reader.ForEachVarint("dims",
                             [&](uint64_t d) { header.dims.push_back(static_cast<int64_t>(d)); });
        break;
      case kDataType: header.data_type = reader.ReadInt32("data_type"); break;
      case kSegment:
        throw Error(
            ErrorCode::kUnimplemented,
            fmt::format("TensorProto.segment at byte {}: segmented tensors are not supported",
                        reader.field_offset()));
      case kFloatData:
      case kInt32Data:
      case kStringData:
      case kInt64Data:
      case kDoubleData:
      case kUInt64Data: CountTyped(reader, header); break;
      case kName: header.name = reader.ReadString("name"); break;
      case kRawData:
        header.raw = reader.ReadBytes("raw_data");
        header.has_raw = true;
        break;
      case kDocString: reader.ReadBytes("doc_string"); break;
      case kExternalData:
        header.external_data.push_back(
            ReadStringEntry(reader.ReadMessage("external_data", "StringStringEntryProto")));
        break;
      case kDataLocation: header.data_location = reader.ReadInt32("data_location"); break;
      default: reader.Skip();
    }
  }
  return header;
}

DataType CheckedDataType(const TensorHeader& header) {
  const int32_t code = header.data_type;
  if (code == 0)
    FailTensor(ErrorCode::kInvalidArgument, header, header.offset, "data_type is not set");
  if (IsSupportedDataType(code)) return static_cast<DataType>(code);
  if (code < 0) {
    FailTensor(ErrorCode::kInvalidArgument, header, header.offset,
               fmt::format("invalid data_type {}", code));
  }
  FailTensor(ErrorCode::kUnimplemented, header, header.offset,
             fmt::format("data type {} is not supported (this runtime knows codes 1 to {})", code,
                         kMaxDataTypeCode));
}

// Element count of the dims; rejects negative dimensions and counts that overflow int64.
uint64_t CheckedElementCount(const TensorHeader& header) {
  uint64_t count = 1;
  for (int64_t d : header.dims) {
    if (d < 0) {
      FailTensor(ErrorCode::kInvalidArgument, header, header.offset,
                 fmt::format("dims {} has a negative dimension", ShapeToString(header.dims)));
    }
    const auto dim = static_cast<uint64_t>(d);
    if (dim != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
      FailTensor(ErrorCode::kInvalidArgument, header, header.offset,
                 fmt::format("dims {} have more elements than int64 can count",
                             ShapeToString(header.dims)));
    }
    count *= dim;
  }
  return count;
}

// Bytes of `count` elements of `type` stored as ONNX stores them (packed for sub-byte types);
// max when that does not fit.
uint64_t ByteCount(DataType type, uint64_t count) {
  const size_t bytes = StorageBytes(type, static_cast<int64_t>(count));
  return bytes == std::numeric_limits<size_t>::max() ? std::numeric_limits<uint64_t>::max() : bytes;
}

// Bool elements are bytes that must be 0 or 1: kernels compute with them as integers (Not of 2
// would be 3). Any other byte means true.
bool HasNonCanonicalBool(std::span<const std::byte> bytes) {
  return std::ranges::any_of(bytes, [](std::byte b) { return std::to_integer<uint8_t>(b) > 1; });
}

void NormalizeBools(std::span<std::byte> bytes) {
  for (std::byte& b : bytes) b = std::byte{b != std::byte{0}};
}

// A view of `bytes` sharing `keeper`'s ownership.
Tensor ViewBytes(std::span<const std::byte> bytes, const std::shared_ptr<const void>& keeper,
            DataType type, Shape dims) {
  std::shared_ptr<void> owner(std::const_pointer_cast<void>(keeper),
                              const_cast<std::byte*>(bytes.data()));
  void* data = owner.get();
  return Tensor(type, std::move(dims), std::move(owner), data);
}

// Where the load owns the model bytes, raw data that needs fixing is moved down to an aligned
// address over bytes of its own TensorProto that were already parsed (its tag, length, name,
// dims), and normalised there. Returns the fixed bytes, or an empty span when there is no room.
std::span<const std::byte> FixInPlace(std::span<const std::byte> bytes,
                                      const std::byte* message_start, DataType type,
                                      bool normalize_bools, LoadContext& context) {
  const std::span<std::byte> owned = context.owned_bytes;
  if (owned.empty() || message_start == nullptr || message_start < owned.data() ||
      bytes.data() + bytes.size() > owned.data() + owned.size()) {
    return {};
  }
  const size_t shift = reinterpret_cast<uintptr_t>(bytes.data()) % RequiredAlignment(type);
  if (static_cast<size_t>(bytes.data() - message_start) < shift) return {};
  std::byte* source = owned.data() + (bytes.data() - owned.data());
  std::byte* target = source - shift;
  if (shift != 0) std::memmove(target, source, bytes.size());
  const std::span<std::byte> fixed(target, bytes.size());
  if (normalize_bools) NormalizeBools(fixed);
  return fixed;
}

// `bytes` as a tensor: viewed where they lie when aligned for `type` (and, for bool, holding
// only 0 and 1); otherwise fixed in place (see FixInPlace) or copied to a new aligned block.
// `message_start` is the first byte of the TensorProto holding `bytes` when it lies in the
// model bytes, null otherwise.
Tensor ViewOrCopy(std::span<const std::byte> bytes, const std::shared_ptr<const void>& keeper,
                  DataType type, Shape dims, LoadContext& context,
                  const std::byte* message_start = nullptr) {
  const auto address = reinterpret_cast<uintptr_t>(bytes.data());
  const bool bool_needs_fix = type == DataType::kBool && HasNonCanonicalBool(bytes);
  if (bytes.empty() || (address % RequiredAlignment(type) == 0 && !bool_needs_fix)) {
    if (!bytes.empty()) return ViewBytes(bytes, keeper, type, std::move(dims));
    return Tensor::Allocate(type, std::move(dims), context.allocator);
  }
  const std::span<const std::byte> fixed =
      FixInPlace(bytes, message_start, type, bool_needs_fix, context);
  if (!fixed.empty()) {
    context.initializer_bytes_fixed_in_place += bytes.size();
    return ViewBytes(fixed, keeper, type, std::move(dims));
  }
  Tensor tensor = Tensor::Allocate(type, std::move(dims), context.allocator);
  std::memcpy(tensor.raw_data(), bytes.data(), bytes.size());
  if (bool_needs_fix) {
    NormalizeBools({static_cast<std::byte*>(tensor.raw_data()), bytes.size()});
  }
  context.initializer_bytes_copied += bytes.size();
  return tensor;
}

template <typename T>
T* CheckedSlot(Tensor& tensor, uint64_t index, uint64_t capacity) {
  if (index >= capacity) throw Error(ErrorCode::kInternal, "tensor decoder ran past its count");
  return tensor.data<T>() + index;
}

// Writes an int32_data value into an element of `type` (ONNX stores narrow integers, bool and
// 16-bit float bit patterns in int32_data).
void StoreInt32Data(Tensor& tensor, DataType type, uint64_t index, uint64_t capacity,
                    uint64_t wire) {
  const auto value = static_cast<int64_t>(wire);
  switch (type) {
    case DataType::kInt32:
      *CheckedSlot<int32_t>(tensor, index, capacity) = static_cast<int32_t>(value);
      break;
    case DataType::kInt16:
      *CheckedSlot<int16_t>(tensor, index, capacity) = static_cast<int16_t>(value);
      break;
    case DataType::kInt8:
      *CheckedSlot<int8_t>(tensor, index, capacity) = static_cast<int8_t>(value);
      break;
    case DataType::kUInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      *CheckedSlot<uint16_t>(tensor, index, capacity) = static_cast<uint16_t>(value);
      break;
    case DataType::kUInt8:
      *CheckedSlot<uint8_t>(tensor, index, capacity) = static_cast<uint8_t>(value);
      break;
    case DataType::kBool:
      *CheckedSlot<uint8_t>(tensor, index, capacity) = value != 0 ? 1 : 0;
      break;
    // One byte per entry: the element's bits (float8) or one packed byte (4- and 2-bit types).
    // Like onnx.numpy_helper.to_array, higher bits of the entry are dropped.
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUInt2:
    case DataType::kInt2:
      *CheckedSlot<uint8_t>(tensor, index, capacity) = static_cast<uint8_t>(value);
      break;
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2:  // one element per entry, in bits 0-5 (to_array masks the rest)
      if (index >= capacity) throw Error(ErrorCode::kInternal, "tensor decoder ran past its count");
      WritePackedCode(tensor.raw_data(), static_cast<int64_t>(index), 6, static_cast<uint8_t>(value & 0x3F));
      break;
    default: throw Error(ErrorCode::kInternal, "int32_data decoded into a wrong type");
  }
}

void DecodeTyped(ProtoReader reader, const TensorHeader& header, Tensor& tensor) {
  const DataType type = tensor.dtype();
  const uint32_t field = header.typed_field;
  const std::string_view name = TypedFieldName(field);
  const uint64_t capacity = header.typed_count;
  uint64_t index = 0;
  while (reader.Next()) {
    if (reader.field() != field) {
      reader.Skip();
      continue;
    }
    switch (field) {
      case kFloatData:
        reader.ForEachFixed32(name, [&](uint32_t v) {
          *CheckedSlot<float>(tensor, index++, capacity) = std::bit_cast<float>(v);
        });
        break;
      case kDoubleData:
        reader.ForEachFixed64(name, [&](uint64_t v) {
          *CheckedSlot<double>(tensor, index++, capacity) = std::bit_cast<double>(v);
        });
        break;
      case kInt64Data:
        reader.ForEachVarint(name, [&](uint64_t v) {
          *CheckedSlot<int64_t>(tensor, index++, capacity) = static_cast<int64_t>(v);
        });
        break;
      case kUInt64Data:
        reader.ForEachVarint(name, [&](uint64_t v) {
          if (type == DataType::kUInt32) {
            *CheckedSlot<uint32_t>(tensor, index++, capacity) = static_cast<uint32_t>(v);
          } else {
            *CheckedSlot<uint64_t>(tensor, index++, capacity) = v;
          }
        });
        break;
      case kInt32Data:
        reader.ForEachVarint(
            name, [&](uint64_t v) { StoreInt32Data(tensor, type, index++, capacity, v); });
        break;
      case kStringData:
        *CheckedSlot<std::string>(tensor, index++, capacity) = reader.ReadString(name);
        break;
      default: throw Error(ErrorCode::kInternal, "unknown typed tensor field");
    }
  }
}

Tensor ReadExternal(const TensorHeader& header, DataType type, uint64_t count,
                    LoadContext& context) {
  if (header.has_raw || header.typed_field != 0) {
    FailTensor(ErrorCode::kInvalidArgument, header, header.offset,
               "an external tensor may not also hold raw_data or typed values");
  }
  if (type == DataType::kString) {
    FailTensor(ErrorCode::kInvalidArgument, header, header.offset,
               "string tensors cannot be stored as external data");
  }
  const uint64_t bytes = ByteCount(type, count);
  const ExternalRange range =
      LocateExternalData(header.external_data, bytes, header.name, header.offset, context);
  if (context.mode == LoadMode::kMap) {
    const ExternalBytes external = MapExternalRange(range);
    return ViewOrCopy(external.bytes, external.keeper, type, header.dims, context);
  }
  // Copy mode: straight from the file into the tensor's own aligned block, whatever the offset.
  Tensor tensor = Tensor::Allocate(type, header.dims, context.allocator);
  const std::span<std::byte> destination(static_cast<std::byte*>(tensor.raw_data()),
                                         tensor.nbytes());
  ReadExternalRange(range, destination, context);
  if (type == DataType::kBool) NormalizeBools(destination);
  return tensor;
}

}  // namespace

static Tensor ReadTensorData(ProtoReader reader, LoadContext& context, std::string& name) {
  const TensorHeader header = ReadHeader(reader);
  name = header.name;
  const DataType type = CheckedDataType(header);
  const uint64_t count = CheckedElementCount(header);

  if (header.data_location == kLocationExternal) return ReadExternal(header, type, count, context);
  if (header.data_location != kLocationDefault) {
    FailTensor(ErrorCode::kInvalidArgument, header, header.offset,
               fmt::format("invalid data_location {}", header.data_location));
  }

  if (header.has_raw) {
    if (header.typed_field != 0) {
      FailTensor(ErrorCode::kInvalidArgument, header, header.typed_offset,
                 fmt::format("a tensor may not hold both raw_data and {}",
                             TypedFieldName(header.typed_field)));
    }
    if (type == DataType::kString) {
      FailTensor(ErrorCode::kInvalidArgument, header, header.raw.offset,
                 "string tensors must use string_data, not raw_data");
    }
    const uint64_t expected = ByteCount(type, count);
    if (expected != header.raw.bytes.size()) {
      FailTensor(
          ErrorCode::kInvalidArgument, header, header.raw.offset,
          fmt::format("dims {} need {} bytes of {}{}, raw_data holds {}", ShapeToString(header.dims),
                      expected, DataTypeName(type), PackingNote(type), header.raw.bytes.size()));
    }
    return ViewOrCopy(header.raw.bytes, context.backing, type, header.dims, context,
                      reader.message().bytes.data());
  }

  const uint32_t expected_field = TypedFieldFor(type);
  if (header.typed_field != 0 && header.typed_field != expected_field) {
    FailTensor(ErrorCode::kInvalidArgument, header, header.typed_offset,
               fmt::format("a {} tensor keeps its values in {}, not {}", DataTypeName(type),
                           TypedFieldName(expected_field), TypedFieldName(header.typed_field)));
  }
  const uint64_t expected_values = TypedValueCount(type, count);
  if (header.typed_count != expected_values) {
    FailTensor(ErrorCode::kInvalidArgument, header,
               header.typed_field != 0 ? header.typed_offset : header.offset,
               fmt::format("dims {} need {} values in {}{}, found {}", ShapeToString(header.dims),
                           expected_values, TypedFieldName(expected_field), PackingNote(type),
                           header.typed_count));
  }
  Tensor tensor = Tensor::Allocate(type, header.dims, context.allocator);
  if (header.typed_count != 0) DecodeTyped(reader, header, tensor);
  // Packed bytes from the file may carry junk in the padding after the last element.
  if (IsSubByte(type)) ZeroPackedTail(tensor.raw_data(), ElementBits(type), tensor.size());
  return tensor;
}

// Model constants are shared by every run (and may live in a read-only file mapping), so they
// are marked read-only; kernels and the bindings never hand them out as writable.
Tensor ReadTensor(ProtoReader reader, LoadContext& context, std::string& name) {
  return ReadTensorData(reader, context, name).AsReadOnly();
}

}  // namespace onnx_light::runtime::model_internal
