// Pad (constant, reflect, edge, wrap; negative pads crop) and Tile. Both map each output
// coordinate to an input coordinate per axis and copy rows through those maps (MapCopy), which
// moves contiguous stretches with memcpy.
#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "core/packed_bits.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

class PadKernel final : public KernelBase {
 public:
  explicit PadKernel(const KernelBuildInfo& info) : opset_(info.opset_version()) {
    const std::string mode = opset_ >= 19
                                 ? info.GetEnum("mode", "constant", {"constant", "reflect", "edge", "wrap"})
                                 : info.GetEnum("mode", "constant", {"constant", "reflect", "edge"});
    mode_ = mode == "reflect" ? PadMode::kReflect
            : mode == "edge"  ? PadMode::kEdge
            : mode == "wrap"  ? PadMode::kWrap
                              : PadMode::kConstant;
    usage_ = fmt::format("Pad/any/{}", mode);
    if (opset_ < 11) {
      pads_attr_ = info.GetInts(opset_ < 2 ? "paddings" : "pads");
      value_attr_ = info.GetFloat("value", 0.0f);
    }
  }

  void Run(RuntimeContext& rt) const override {
    RequireMovableType(rt, 0, rt.Input(0).dtype());
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const int64_t rank = x.rank();
    const std::vector<int64_t> pads = opset_ < 11 ? pads_attr_ : ReadInt64s(rt, 1);
    std::vector<int64_t> axes;
    if (opset_ >= 18 && rt.OptionalInput(3) != nullptr) {
      axes = NormalizeAxes(rt, ReadInt64s(rt, 3), rank);
    } else {
      axes.resize(static_cast<size_t>(rank));
      for (int64_t d = 0; d < rank; ++d) axes[d] = d;
    }
    if (pads.size() != 2 * axes.size()) {
      ThrowInvalid(rt, "pads {} must have 2 * {} entries for input shape {}", ShapeToString(pads),
                   axes.size(), ShapeToString(x.shape()));
    }
    std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      begin[axes[i]] = pads[i];
      end[axes[i]] = pads[i + axes.size()];
    }
    Shape out_shape(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = x.dim(d);
      out_shape[d] = CheckedAdd(CheckedAdd(n, begin[d], "Pad output dimension"), end[d],
                                "Pad output dimension");
      if (out_shape[d] < 0) {
        ThrowInvalid(rt, "pads {} crop axis {} of input shape {} below zero", ShapeToString(pads), d,
                     ShapeToString(x.shape()));
      }
      if (n == 0 && mode_ != PadMode::kConstant && out_shape[d] > 0) {
        ThrowInvalid(rt, "cannot pad the empty axis {} of input shape {} in a non-constant mode", d,
                     ShapeToString(x.shape()));
      }
    }
    // Allocating first refuses an output too large to exist before the index maps are built.
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    if (y.size() == 0) {
      rt.RecordKernelUsage(usage_);
      return;
    }
    std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = x.dim(d);
      std::vector<int64_t>& m = maps[d];
      m.resize(static_cast<size_t>(out_shape[d]));
      for (int64_t o = 0; o < out_shape[d]; ++o) {
        int64_t i = o - begin[d];
        if (i < 0 || i >= n) {
          switch (mode_) {
            case PadMode::kConstant:
              i = -1;
              break;
            case PadMode::kEdge:
              i = std::clamp<int64_t>(i, 0, n - 1);
              break;
            case PadMode::kWrap:
              i = ((i % n) + n) % n;
              break;
            case PadMode::kReflect: {
              if (n == 1) {
                i = 0;
              } else {
                const int64_t period = 2 * (n - 1);
                i = ((i % period) + period) % period;
                if (i >= n) i = period - i;
              }
              break;
            }
          }
        }
        m[o] = i;
      }
    }
    if (x.dtype() == DataType::kString) {
      std::string fill;
      if (mode_ == PadMode::kConstant && opset_ >= 11 && rt.OptionalInput(2) != nullptr)
        fill = FillString(rt);
      MapCopy(x.dtype(), x.raw_data(), x.shape(), maps, &fill, y.raw_data());
    } else {
      alignas(16) std::byte fill[16] = {};
      if (mode_ == PadMode::kConstant) FillBytes(rt, x.dtype(), fill);
      MapCopy(x.dtype(), x.raw_data(), x.shape(), maps, fill, y.raw_data());
    }
    rt.RecordKernelUsage(usage_);
  }

 private:
  std::string FillString(const RuntimeContext& rt) const {
    const Tensor& v = rt.Input(2);
    if (v.dtype() != DataType::kString || v.size() != 1) {
      ThrowInvalid(rt, "constant_value must be one string like input 0, got {} of shape {}",
                   DataTypeName(v.dtype()), ShapeToString(v.shape()));
    }
    return *v.data<std::string>();
  }

  // The pad value as raw bytes of the element type.
  void FillBytes(const RuntimeContext& rt, DataType type, std::byte* fill) const {
    if (opset_ >= 11) {
      const Tensor* v = rt.OptionalInput(2);
      if (v == nullptr) return;
      if (v->dtype() != type || v->size() != 1) {
        ThrowInvalid(rt, "constant_value must be one element of type {} like input 0, got {} of shape {}",
                     DataTypeName(type), DataTypeName(v->dtype()), ShapeToString(v->shape()));
      }
      if (IsSubByte(type)) {
        fill[0] = std::byte{ReadPackedCode(v->raw_data(), 0, ElementBits(type))};
      } else {
        std::memcpy(fill, v->raw_data(), ElementSize(type));
      }
      return;
    }
    DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES, bool>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      T value;
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        value = T(value_attr_);
      } else {
        value = static_cast<T>(value_attr_);
      }
      std::memcpy(fill, &value, sizeof(T));
    });
  }

  int64_t opset_;
  PadMode mode_ = PadMode::kConstant;
  std::string usage_;
  std::vector<int64_t> pads_attr_;
  float value_attr_ = 0.0f;
};

class TileKernel final : public KernelBase {
 public:
  explicit TileKernel(const KernelBuildInfo& info) : opset_(info.opset_version()) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const int64_t rank = x.rank();
    std::vector<int64_t> repeats;
    if (opset_ < 6) {  // Tile-1: scalar `tiles` copies along scalar `axis`, of the input's type
      if (rt.Input(1).size() != 1 || rt.Input(2).size() != 1) ThrowInvalid(rt, "tiles and axis must be scalars");
      const double tiles = ReadScalar(rt, 1);
      const double axis = ReadScalar(rt, 2);
      repeats.assign(static_cast<size_t>(rank), 1);
      repeats[NormalizeAxis(rt, CheckedFloatToInt64(axis, "Tile axis"), rank)] =
          CheckedFloatToInt64(tiles, "Tile tiles");
    } else {
      repeats = ReadInt64s(rt, 1);
    }
    if (static_cast<int64_t>(repeats.size()) != rank) {
      ThrowInvalid(rt, "repeats {} must have one entry per dimension of input shape {}",
                   ShapeToString(repeats), ShapeToString(x.shape()));
    }
    Shape out_shape(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (repeats[d] < 0) ThrowInvalid(rt, "repeats {} has a negative entry", ShapeToString(repeats));
      out_shape[d] = CheckedMul(x.dim(d), repeats[d], "Tile output dimension");
    }
    // Allocating first refuses an output too large to exist before the index maps are built.
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    if (y.size() == 0) {
      rt.RecordKernelUsage("Tile/any/runs");
      return;
    }
    std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = x.dim(d);
      maps[d].resize(static_cast<size_t>(out_shape[d]));
      for (int64_t o = 0; o < out_shape[d]; ++o) maps[d][o] = o % n;
    }
    MapCopy(x.dtype(), x.raw_data(), x.shape(), maps, nullptr, y.raw_data());
    rt.RecordKernelUsage("Tile/any/runs");
  }

 private:
  int64_t opset_;
};

}  // namespace

void RegisterPadTileKernels(KernelRegistry& registry) {
  // Both kernels check the opset themselves (attributes before Pad-11, tiles/axis in Tile-1).
  // Pad-24/25 only add element types; types without a byte size are refused per node.
  registry.Register("", "Pad", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<PadKernel>(info); });
  registry.Register("", "Tile", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<TileKernel>(info); });
}

}  // namespace onnx_light::runtime
