#include "model/proto_reader.h"

#include <fmt/format.h>

#include <limits>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

namespace {

constexpr size_t kMaxVarintBytes = 10;
constexpr uint32_t kMaxFieldNumber = (1u << 29) - 1;

std::string_view WireTypeName(WireType type) {
  switch (type) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLengthDelimited: return "length-delimited";
    case WireType::kStartGroup: return "start-group";
    case WireType::kEndGroup: return "end-group";
    case WireType::kFixed32: return "fixed32";
  }
  return "invalid";
}

}  // namespace

void ProtoReader::Fail(std::string_view field_name, uint64_t at, std::string_view what) const {
  const std::string where = field_name.empty() ? fmt::format("{} field {}", message_name_, field_)
                                               : fmt::format("{}.{}", message_name_, field_name);
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("malformed model: {} at byte {}: {}", where, at, what));
}

uint64_t ProtoReader::DecodeVarint(std::span<const std::byte> bytes, uint64_t base, size_t& pos,
                                   std::string_view field_name) const {
  const size_t start = pos;
  uint64_t value = 0;
  for (size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (pos >= bytes.size()) Fail(field_name, base + start, "varint runs past the end");
    const auto byte = static_cast<uint8_t>(bytes[pos++]);
    if (i == kMaxVarintBytes - 1) {
      if ((byte & 0x80) != 0) Fail(field_name, base + start, "varint is longer than 10 bytes");
      // The tenth byte holds only bit 63.
      if (byte > 1) Fail(field_name, base + start, "varint overflows 64 bits");
    }
    value |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return value;
  }
  Fail(field_name, base + start, "varint is longer than 10 bytes");  // not reached
}

bool ProtoReader::Next() {
  if (pos_ >= bytes_.size()) return false;
  field_offset_ = offset();
  field_ = 0;
  const uint64_t tag = DecodeVarint(bytes_, base_offset_, pos_, "tag");
  const uint64_t field = tag >> 3;
  const auto wire = static_cast<uint8_t>(tag & 7);
  if (field == 0 || field > kMaxFieldNumber) {
    Fail("tag", field_offset_, fmt::format("invalid field number {}", field));
  }
  field_ = static_cast<uint32_t>(field);
  if (wire > 5) Fail("", field_offset_, fmt::format("invalid wire type {}", wire));
  wire_type_ = static_cast<WireType>(wire);
  return true;
}

void ProtoReader::ExpectWireType(std::string_view field_name, WireType expected) const {
  if (wire_type_ != expected) {
    Fail(field_name, field_offset_,
         fmt::format("wire type {} ({}), expected {} ({})", static_cast<int>(wire_type_),
                     WireTypeName(wire_type_), static_cast<int>(expected), WireTypeName(expected)));
  }
}

uint64_t ProtoReader::ReadVarint(std::string_view field_name) {
  ExpectWireType(field_name, WireType::kVarint);
  return DecodeVarint(bytes_, base_offset_, pos_, field_name);
}

int64_t ProtoReader::ReadInt64(std::string_view field_name) {
  return static_cast<int64_t>(ReadVarint(field_name));
}

int32_t ProtoReader::ReadInt32(std::string_view field_name) {
  const uint64_t at = offset();
  const auto value = static_cast<int64_t>(ReadVarint(field_name));
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    Fail(field_name, at, fmt::format("value {} does not fit int32", value));
  }
  return static_cast<int32_t>(value);
}

float ProtoReader::ReadFloat(std::string_view field_name) {
  return std::bit_cast<float>(ReadFixed<uint32_t>(field_name, WireType::kFixed32));
}

double ProtoReader::ReadDouble(std::string_view field_name) {
  return std::bit_cast<double>(ReadFixed<uint64_t>(field_name, WireType::kFixed64));
}

Slice ProtoReader::ReadBytes(std::string_view field_name) {
  ExpectWireType(field_name, WireType::kLengthDelimited);
  const uint64_t length_offset = offset();
  const uint64_t length = DecodeVarint(bytes_, base_offset_, pos_, field_name);
  const size_t remaining = bytes_.size() - pos_;
  if (length > remaining) {
    Fail(field_name, length_offset,
         fmt::format("length {} runs past the end of the message ({} bytes left)", length,
                     remaining));
  }
  const Slice slice{bytes_.subspan(pos_, static_cast<size_t>(length)), offset()};
  pos_ += static_cast<size_t>(length);
  return slice;
}

std::string ProtoReader::ReadString(std::string_view field_name) {
  const Slice slice = ReadBytes(field_name);
  return std::string(reinterpret_cast<const char*>(slice.bytes.data()), slice.bytes.size());
}

ProtoReader ProtoReader::ReadMessage(std::string_view field_name, std::string_view type_name) {
  return ProtoReader(ReadBytes(field_name), type_name);
}

void ProtoReader::Skip() {
  switch (wire_type_) {
    case WireType::kVarint: DecodeVarint(bytes_, base_offset_, pos_, ""); return;
    case WireType::kFixed64: ReadFixed<uint64_t>("", WireType::kFixed64); return;
    case WireType::kFixed32: ReadFixed<uint32_t>("", WireType::kFixed32); return;
    case WireType::kLengthDelimited: ReadBytes(""); return;
    case WireType::kStartGroup:
    case WireType::kEndGroup: Fail("", field_offset_, "groups are not supported");
  }
  Fail("", field_offset_, "invalid wire type");
}

Slice ProtoReader::ReadPacked(std::string_view field_name, size_t width,
                              std::string_view scalar_kind) {
  if (wire_type_ != WireType::kLengthDelimited) {
    Fail(field_name, field_offset_,
         fmt::format("wire type {} ({}), expected {} or packed (length-delimited)",
                     static_cast<int>(wire_type_), WireTypeName(wire_type_), scalar_kind));
  }
  const Slice packed = ReadBytes(field_name);
  if (width != 0 && packed.bytes.size() % width != 0) {
    Fail(field_name, packed.offset,
         fmt::format("packed {} length {} is not a multiple of {}", scalar_kind,
                     packed.bytes.size(), width));
  }
  return packed;
}

void ProtoReader::ReadRepeatedInt64(std::string_view field_name, std::vector<int64_t>& out) {
  ForEachVarint(field_name, [&](uint64_t v) { out.push_back(static_cast<int64_t>(v)); });
}

void ProtoReader::ReadRepeatedFloat(std::string_view field_name, std::vector<float>& out) {
  ForEachFixed32(field_name, [&](uint32_t v) { out.push_back(std::bit_cast<float>(v)); });
}

void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

std::pair<std::string, std::string> ReadStringEntry(ProtoReader reader) {
  std::pair<std::string, std::string> entry;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: entry.first = reader.ReadString("key"); break;
      case 2: entry.second = reader.ReadString("value"); break;
      default: reader.Skip();
    }
  }
  return entry;
}

}  // namespace onnx_light::runtime::model_internal
