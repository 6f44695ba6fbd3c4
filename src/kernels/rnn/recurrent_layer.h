#pragma once
// What RNN, GRU and LSTM share: their attributes, the checks of their inputs, the layout of
// X/Y/Y_h for `layout` 0 and 1, and the driver that projects the whole input sequence with one
// GEMM and then steps each direction (directions in parallel on the session's pool).

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/rnn/rnn_activation.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime::rnn {

enum class CellKind { kRnn, kGru, kLstm };

/// Attributes of one recurrent node, read and checked when the kernel is built.
struct RecurrentAttributes {
  CellKind cell = CellKind::kRnn;
  std::string op_type;
  int64_t num_directions = 1;
  bool reverse = false;           // direction == "reverse" (single direction)
  int64_t hidden_size = -1;       // -1 when the attribute is absent (taken from R)
  std::vector<Activation> activations;  // per direction: f (RNN); f, g (GRU); f, g, h (LSTM)
  bool has_clip = false;
  float clip = 0.0f;
  int64_t layout = 0;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM

  int64_t gates() const { return cell == CellKind::kRnn ? 1 : cell == CellKind::kGru ? 3 : 4; }
  int64_t functions_per_direction() const {
    return cell == CellKind::kRnn ? 1 : cell == CellKind::kGru ? 2 : 3;
  }
};

RecurrentAttributes ReadRecurrentAttributes(const KernelBuildInfo& info, CellKind cell);

/// Runs one RNN/GRU/LSTM node on float32 or float64 inputs (half types come through
/// WithHalfPrecision). Stateless across runs; safe to call from several threads at once.
void RunRecurrent(RuntimeContext& rt, const RecurrentAttributes& attrs);

}  // namespace onnx_light::runtime::rnn
