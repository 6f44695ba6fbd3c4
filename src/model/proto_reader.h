#pragma once
// A bounds-checked reader for the protobuf wire format. It never reads past the bytes it was
// given and never allocates more than the bytes it has already checked. Every error is
// Error(kInvalidArgument) naming the message type, the field and the absolute byte offset.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnx_light::runtime::model_internal {

static_assert(std::endian::native == std::endian::little,
              "the wire reader copies little-endian fixed-width values as they are");

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

/// Bytes of a length-delimited field and their absolute offset in the model.
struct Slice {
  std::span<const std::byte> bytes;
  uint64_t offset = 0;
};

/// Reads the fields of one message. `Next()` advances to a field; then exactly one Read*,
/// ForEach* or `Skip()` call consumes its value.
class ProtoReader {
 public:
  /// `bytes` start at absolute `offset` of the model; `message_name` is the protobuf type.
  ProtoReader(Slice bytes, std::string_view message_name)
      : bytes_(bytes.bytes), base_offset_(bytes.offset), message_name_(message_name) {}

  /// Reads the next tag; false at the end of the message.
  bool Next();

  uint32_t field() const noexcept { return field_; }
  WireType wire_type() const noexcept { return wire_type_; }
  std::string_view message_name() const noexcept { return message_name_; }
  /// Absolute offset of the current field's tag.
  uint64_t field_offset() const noexcept { return field_offset_; }
  /// Absolute offset of the next unread byte.
  uint64_t offset() const noexcept { return base_offset_ + pos_; }
  /// The whole message this reader walks.
  Slice message() const noexcept { return {bytes_, base_offset_}; }

  uint64_t ReadVarint(std::string_view field_name);
  int64_t ReadInt64(std::string_view field_name);
  /// A protobuf int32 (negative values arrive sign-extended to 64 bits); range-checked.
  int32_t ReadInt32(std::string_view field_name);
  float ReadFloat(std::string_view field_name);
  double ReadDouble(std::string_view field_name);
  /// A length-delimited value viewed in place.
  Slice ReadBytes(std::string_view field_name);
  std::string ReadString(std::string_view field_name);
  /// A reader for an embedded message of type `type_name`.
  ProtoReader ReadMessage(std::string_view field_name, std::string_view type_name);
  /// Skips the current field of any wire type; groups are rejected.
  void Skip();

  /// Repeated scalars, packed or one value per field occurrence. `fn` gets each value.
  template <typename Fn>
  void ForEachVarint(std::string_view field_name, Fn&& fn);
  template <typename Fn>
  void ForEachFixed32(std::string_view field_name, Fn&& fn);
  template <typename Fn>
  void ForEachFixed64(std::string_view field_name, Fn&& fn);

  void ReadRepeatedInt64(std::string_view field_name, std::vector<int64_t>& out);
  void ReadRepeatedFloat(std::string_view field_name, std::vector<float>& out);

  /// Throws Error(kInvalidArgument) "<message>.<field> at byte <offset>: <what>".
  [[noreturn]] void Fail(std::string_view field_name, uint64_t offset, std::string_view what) const;

 private:
  void ExpectWireType(std::string_view field_name, WireType expected) const;
  // Reads a varint from `bytes` at `pos` (relative), advancing `pos`.
  uint64_t DecodeVarint(std::span<const std::byte> bytes, uint64_t base, size_t& pos,
                        std::string_view field_name) const;
  // The payload of a packed repeated field whose element width is `width` (0: varints).
  Slice ReadPacked(std::string_view field_name, size_t width, std::string_view scalar_kind);
  template <typename T>
  T ReadFixed(std::string_view field_name, WireType expected);

  std::span<const std::byte> bytes_;
  uint64_t base_offset_ = 0;
  std::string_view message_name_;
  size_t pos_ = 0;
  uint32_t field_ = 0;
  WireType wire_type_ = WireType::kVarint;
  uint64_t field_offset_ = 0;
};

template <typename Fn>
void ProtoReader::ForEachVarint(std::string_view field_name, Fn&& fn) {
  if (wire_type_ == WireType::kVarint) {
    fn(ReadVarint(field_name));
    return;
  }
  const Slice packed = ReadPacked(field_name, 0, "varint");
  size_t pos = 0;
  while (pos < packed.bytes.size()) fn(DecodeVarint(packed.bytes, packed.offset, pos, field_name));
}

template <typename Fn>
void ProtoReader::ForEachFixed32(std::string_view field_name, Fn&& fn) {
  if (wire_type_ == WireType::kFixed32) {
    fn(ReadFixed<uint32_t>(field_name, WireType::kFixed32));
    return;
  }
  const Slice packed = ReadPacked(field_name, 4, "fixed32");
  for (size_t pos = 0; pos < packed.bytes.size(); pos += 4) {
    uint32_t value;
    std::memcpy(&value, packed.bytes.data() + pos, 4);
    fn(value);
  }
}

template <typename Fn>
void ProtoReader::ForEachFixed64(std::string_view field_name, Fn&& fn) {
  if (wire_type_ == WireType::kFixed64) {
    fn(ReadFixed<uint64_t>(field_name, WireType::kFixed64));
    return;
  }
  const Slice packed = ReadPacked(field_name, 8, "fixed64");
  for (size_t pos = 0; pos < packed.bytes.size(); pos += 8) {
    uint64_t value;
    std::memcpy(&value, packed.bytes.data() + pos, 8);
    fn(value);
  }
}

template <typename T>
T ProtoReader::ReadFixed(std::string_view field_name, WireType expected) {
  ExpectWireType(field_name, expected);
  if (bytes_.size() - pos_ < sizeof(T)) {
    Fail(field_name, offset(), "value runs past the end of the message");
  }
  T value;
  std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
  pos_ += sizeof(T);
  return value;
}

/// Appends the varint encoding of `value` to `out`.
void AppendVarint(std::string& out, uint64_t value);

/// A StringStringEntryProto (external_data, metadata_props) as (key, value).
std::pair<std::string, std::string> ReadStringEntry(ProtoReader reader);

}  // namespace onnx_light::runtime::model_internal
