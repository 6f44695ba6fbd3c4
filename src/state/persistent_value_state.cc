#include "onnx_light/runtime/persistent_value_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/runtime_context_internals.h"
#include "onnx_light/runtime/error.h"
#include "state/binding_validation.h"
#include "state/persistent_buffer.h"

namespace onnx_light::runtime {

// Marks the state busy for one call; a second caller fails instead of racing.
class PersistentValueState::BusyGuard {
 public:
  BusyGuard(std::atomic<bool>& busy, const char* what) : busy_(busy) {
    if (busy_.exchange(true)) {
      throw Error(ErrorCode::kFailedPrecondition,
                  fmt::format("PersistentValueState.{}: another call is in progress on this state", what));
    }
  }
  ~BusyGuard() { busy_.store(false); }

 private:
  std::atomic<bool>& busy_;
};

// The append sink of one call. Reservations stay tentative until the state publishes the call's
// results; a failed call simply drops them.
class PersistentValueState::CallSink final : public PersistentAppendSink {
 public:
  struct Pending {
    size_t slot;
    std::shared_ptr<PersistentBuffer> buffer;
    int64_t rows;
    Tensor full;
    bool committed = false;
  };

  CallSink(const std::vector<Slot>& slots, const RuntimeSessionOptions& options)
      : slots_(slots),
        initial_capacity_(options.persistent_tensor_initial_capacity),
        reserved_rows_(options.persistent_tensor_reserved_rows) {}

  PersistentAppendReservation Reserve(RuntimeContext& rt, std::string_view output_name,
                                      const Tensor& past, int64_t axis, int64_t append_rows) override {
    if (axis < 0) axis += past.rank();
    if (axis < 0 || axis >= past.rank() || append_rows < 0) return {};
    const size_t slot = FindSlot(past);
    if (slot == slots_.size()) return {};
    if (Reserved(slot)) return {};  // one append or replacement per value and call
    const int64_t past_rows = past.shape()[axis];
    const int64_t rows = past_rows + append_rows;
    // The appended rows of a sub-byte value must start on a byte to be a view; otherwise there
    // is no reservation and the node writes a fresh output.
    int64_t row_elements = 1;
    for (int64_t d = axis + 1; d < past.rank(); ++d) row_elements *= past.shape()[d];
    if (!IsByteAligned(past.dtype(), past_rows * row_elements)) return {};
    const std::shared_ptr<PersistentBuffer>& current = slots_[slot].buffer;
    std::shared_ptr<PersistentBuffer> buffer;
    const bool extends_current = current && current->axis() == axis && current->IsPrefixView(past) &&
                                 current->committed_rows() == past_rows;
    const bool reuse = extends_current && rows <= current->capacity();
    if (reuse) {
      buffer = current;
    } else {
      buffer = NewBuffer(rt, past, axis, rows, extends_current ? current->capacity() : 0);
      Tensor prefix = buffer->Rows(0, past_rows);
      CopyIntoView(past, prefix);
    }
    if (rt.events_enabled()) {
      rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                      .kind = TensorKind::kOutput,
                      .name = std::string(output_name),
                      .data_type = static_cast<int32_t>(past.dtype()),
                      .shape = buffer->Rows(0, rows).shape(),
                      .storage_allocations = reuse ? 0u : 1u,
                      .storage_allocated_bytes = reuse ? 0u : buffer->allocated_bytes(),
                      .storage_prefix_copied_bytes = reuse ? 0u : past.nbytes(),
                      .storage_reuse_count = reuse ? 1u : 0u});
    }
    // Published rows are shared with every holder of an earlier result: read-only from here on.
    PersistentAppendReservation reservation{.full = buffer->Rows(0, rows).AsReadOnly(),
                                            .append = buffer->Rows(past_rows, rows),
                                            .axis = axis,
                                            .token = pending_.size() + 1,
                                            .output_name = std::string(output_name)};
    pending_.push_back({slot, std::move(buffer), rows, reservation.full});
    return reservation;
  }

  void Commit(RuntimeContext& rt, const PersistentAppendReservation& reservation) override {
    if (reservation.token == 0 || reservation.token > pending_.size()) {
      throw Error(ErrorCode::kFailedPrecondition,
                  fmt::format("{}: unknown persistent append reservation", rt.DescribeNode()));
    }
    Pending& p = pending_[reservation.token - 1];
    p.committed = true;
    if (!rt.events_enabled()) return;
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                    .kind = TensorKind::kOutput,
                    .name = reservation.output_name,
                    .data_type = static_cast<int32_t>(reservation.append.dtype()),
                    .shape = reservation.append.shape(),
                    .storage_append_copied_bytes = reservation.append.nbytes()});
  }

  PersistentReplaceReservation ReserveReplace(RuntimeContext& rt, std::string_view output_name, const Tensor& past,
                                              PersistentReplaceStart start) override {
    const size_t slot = FindSlot(past);
    if (slot == slots_.size() || Reserved(slot) || past.dtype() == DataType::kString || past.nbytes() == 0) {
      return {};
    }
    const Slot& current = slots_[slot];
    const size_t bytes = past.nbytes();
    // The spare is written only when nobody else holds it (a result kept from two calls ago).
    const bool reuse = current.spare && current.spare.use_count() == 1 && current.spare_bytes == bytes;
    std::shared_ptr<void> storage = reuse ? current.spare : AllocateBuffer(rt.allocator(), bytes);
    Tensor value(past.dtype(), past.shape(), storage, storage.get());
    size_t copied = 0;
    if (start == PersistentReplaceStart::kPast) {
      if (reuse && current.spare_lag && past.is_contiguous()) {
        const auto* from = static_cast<const std::byte*>(past.raw_data());
        auto* to = static_cast<std::byte*>(storage.get());
        for (const PersistentByteRange& r : *current.spare_lag) {
          std::memcpy(to + r.offset, from + r.offset, r.bytes);
          copied += r.bytes;
        }
      } else {
        CopyIntoView(past, value);
        copied = bytes;
      }
    }
    if (reuse) spare_touched_.push_back(slot);
    if (rt.events_enabled()) {
      rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                      .kind = TensorKind::kOutput,
                      .name = std::string(output_name),
                      .data_type = static_cast<int32_t>(past.dtype()),
                      .shape = past.shape(),
                      .storage_allocations = reuse ? 0u : 1u,
                      .storage_allocated_bytes = reuse ? 0u : bytes,
                      .storage_prefix_copied_bytes = copied,
                      .storage_reuse_count = reuse ? 1u : 0u});
    }
    PersistentReplaceReservation reservation{
        .value = value, .token = replacements_.size() + 1, .output_name = std::string(output_name)};
    replacements_.push_back({slot, std::move(storage), value, bytes});
    return reservation;
  }

  void CommitReplace(RuntimeContext& rt, const PersistentReplaceReservation& reservation,
                     const std::vector<PersistentByteRange>* written) override {
    if (reservation.token == 0 || reservation.token > replacements_.size()) {
      throw Error(ErrorCode::kFailedPrecondition,
                  fmt::format("{}: unknown persistent replace reservation", rt.DescribeNode()));
    }
    Replacement& p = replacements_[reservation.token - 1];
    size_t written_bytes = 0;
    if (written != nullptr) {
      for (const PersistentByteRange& r : *written) {
        if (r.offset > p.bytes || r.bytes > p.bytes - r.offset) {
          throw Error(ErrorCode::kInternal, fmt::format("{}: written range [{}, +{}) lies outside the {}-byte value",
                                                        rt.DescribeNode(), r.offset, r.bytes, p.bytes));
        }
        written_bytes += r.bytes;
      }
      p.written = *written;
    }
    p.committed = true;
    if (!rt.events_enabled() || written_bytes == 0) return;
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                    .kind = TensorKind::kOutput,
                    .name = reservation.output_name,
                    .data_type = static_cast<int32_t>(reservation.value.dtype()),
                    .shape = reservation.value.shape(),
                    .storage_append_copied_bytes = written_bytes});
  }

  struct Replacement {
    size_t slot;
    std::shared_ptr<void> storage;
    Tensor value;
    size_t bytes;
    std::optional<std::vector<PersistentByteRange>> written;  // empty optional: everything
    bool committed = false;
  };

  /// The committed replacement that became the slot's output, if any.
  const Replacement* CommittedReplacementFor(size_t slot, const Tensor& output) const {
    for (const Replacement& p : replacements_) {
      if (p.slot == slot && p.committed && output.raw_data() == p.value.raw_data() &&
          output.shape() == p.value.shape() && output.strides() == p.value.strides()) {
        return &p;
      }
    }
    return nullptr;
  }

  /// Slots whose spare buffer this call wrote: after a failed call its content is unknown.
  const std::vector<size_t>& spare_touched() const noexcept { return spare_touched_; }

  /// The committed reservation whose view became the slot's output, if any.
  const Pending* CommittedFor(size_t slot, const Tensor& output) const {
    for (const Pending& p : pending_) {
      if (p.slot == slot && p.committed && output.raw_data() == p.full.raw_data() &&
          output.shape() == p.full.shape() && output.strides() == p.full.strides()) {
        return &p;
      }
    }
    return nullptr;
  }

 private:
  bool Reserved(size_t slot) const {
    return std::any_of(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.slot == slot; }) ||
           std::any_of(replacements_.begin(), replacements_.end(),
                       [&](const Replacement& p) { return p.slot == slot; });
  }

  // Room for `rows` rows and more. Growth is geometric; where the system lends lazily backed
  // address space, the buffer is laid out for at least `reserved_rows_` rows, so a decode loop of
  // that length never copies its prefix again and uses memory only for the rows written.
  std::shared_ptr<PersistentBuffer> NewBuffer(RuntimeContext& rt, const Tensor& past, int64_t axis, int64_t rows,
                                              int64_t previous_capacity) const {
    if (initial_capacity_ == 0) return std::make_shared<PersistentBuffer>(rt.allocator(), past, axis, rows);
    const int64_t capacity = std::max({rows, initial_capacity_, 2 * previous_capacity});
    if (reserved_rows_ > 0) {
      if (auto reserved = PersistentBuffer::ReserveLazily(past, axis, std::max(capacity, reserved_rows_))) {
        return reserved;
      }
    }
    return std::make_shared<PersistentBuffer>(rt.allocator(), past, axis, capacity);
  }

  size_t FindSlot(const Tensor& past) const {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Tensor& v = slots_[i].value;
      if (v.raw_data() == past.raw_data() && v.dtype() == past.dtype() && v.shape() == past.shape() &&
          v.strides() == past.strides()) {
        return i;
      }
    }
    return slots_.size();
  }

  const std::vector<Slot>& slots_;
  int64_t initial_capacity_;
  int64_t reserved_rows_;
  std::vector<Pending> pending_;
  std::vector<Replacement> replacements_;
  std::vector<size_t> spare_touched_;
};

PersistentValueState::PersistentValueState(std::shared_ptr<const Model> model,
                                           std::unordered_map<std::string, Tensor> initial,
                                           RuntimeSessionOptions options) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "PersistentValueState needs a model");
  bindings_ = ValidatedBindings(*model);
  session_ = std::make_shared<const RuntimeSession>(std::move(model), options);
  slots_.resize(bindings_.size());
  TakeValues(std::move(initial), "initial");
}

PersistentValueState::PersistentValueState(std::shared_ptr<const RuntimeSession> session,
                                           std::unordered_map<std::string, Tensor> initial)
    : session_(std::move(session)) {
  if (!session_) throw Error(ErrorCode::kInvalidArgument, "PersistentValueState needs a session");
  bindings_ = ValidatedBindings(session_->model());
  slots_.resize(bindings_.size());
  TakeValues(std::move(initial), "initial");
}

PersistentValueState::~PersistentValueState() = default;

void PersistentValueState::TakeValues(std::unordered_map<std::string, Tensor> values, const char* what) {
  ValidateBoundValues(session_->model(), bindings_, values, what);
  std::vector<Slot> slots(bindings_.size());
  for (size_t i = 0; i < bindings_.size(); ++i) slots[i].value = values.at(bindings_[i].input_name);
  std::lock_guard lock(values_mutex_);
  slots_ = std::move(slots);
}

PersistentValueState::Values PersistentValueState::Run(RuntimeContext& rt, const Values& feeds) {
  BusyGuard busy(busy_, "run");
  // The call runs in a child of `rt`, but it reads `rt` to make that child and shares its stop
  // state: hold `rt` like any run does.
  const RuntimeContext::RunGuard context_guard(rt);
  if (closed_) throw Error(ErrorCode::kFailedPrecondition, "PersistentValueState.run: the state is closed");

  const std::vector<ValueInfo>& inputs = session_->inputs();
  for (const auto& [name, value] : feeds) {
    for (const PersistentBinding& b : bindings_) {
      if (b.input_name == name) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("input '{}' is bound to output '{}' and comes from the state; do not "
                                "feed it",
                                name, b.output_name));
      }
    }
    if (std::none_of(inputs.begin(), inputs.end(), [&](const ValueInfo& v) { return v.name == name; })) {
      throw Error(ErrorCode::kNotFound, fmt::format("feed '{}' is not a graph input", name));
    }
  }

  RuntimeContext call = rt.CreateChild(ChildContextKind::kFeedback);
  std::vector<std::string> retained;
  for (size_t i = 0; i < bindings_.size(); ++i) {
    call.PutTensor(bindings_[i].input_name, slots_[i].value, TensorKind::kInput);
    retained.push_back(bindings_[i].output_name);
  }
  for (const auto& [name, value] : feeds) call.PutValue(name, value, TensorKind::kInput);
  call.set_retained_outputs(std::move(retained));
  CallSink sink(slots_, session_->options());
  RuntimeContextInternals::SetPersistentAppendSink(call, &sink);

  // A failed call leaves the values as they were; a spare buffer it wrote no longer matches the
  // record of how it differs from the value, so that record is dropped.
  struct ForgetTouchedSpares {
    PersistentValueState& state;
    const CallSink& sink;
    bool published = false;
    ~ForgetTouchedSpares() {
      if (published || sink.spare_touched().empty()) return;
      std::lock_guard lock(state.values_mutex_);
      for (size_t slot : sink.spare_touched()) state.slots_[slot].spare_lag.reset();
    }
  } forget{*this, sink};

  session_->Run(call);

  // Everything below only reads the call's results until the single publication at the end.
  // Bound outputs are the state's next values, so callers get them read-only.
  Values results;
  for (const ValueInfo& output : session_->outputs()) {
    if (const Tensor* t = call.FindTensor(output.name)) {
      const bool bound = std::any_of(bindings_.begin(), bindings_.end(), [&](const PersistentBinding& b) {
        return b.output_name == output.name;
      });
      results.emplace(output.name, bound ? t->AsReadOnly() : *t);
    } else if (const RuntimeValue* v = call.FindValue(output.name)) {
      results.emplace(output.name, *v);
    }
  }
  std::vector<Slot> next(bindings_.size());
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const Tensor* out = call.FindTensor(bindings_[i].output_name);
    const Tensor& previous = slots_[i].value;
    if (out == nullptr || out->dtype() != previous.dtype() || out->rank() != previous.rank()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("bound output '{}' produced {}, but input '{}' holds tensor({}){}",
                              bindings_[i].output_name,
                              out ? fmt::format("tensor({}){}", DataTypeName(out->dtype()), ShapeToString(out->shape()))
                                  : std::string("no tensor"),
                              bindings_[i].input_name, DataTypeName(previous.dtype()),
                              ShapeToString(previous.shape())));
    }
    next[i].value = out->AsReadOnly();
    if (const CallSink::Pending* p = sink.CommittedFor(i, *out)) next[i].buffer = p->buffer;
    if (const CallSink::Replacement* p = sink.CommittedReplacementFor(i, *out)) {
      // The previous value's storage becomes the spare when it is one of the pair.
      next[i].replaced = true;
      if (slots_[i].replaced && slots_[i].value.owner() != p->storage) {
        next[i].spare = slots_[i].value.owner();
        next[i].spare_bytes = slots_[i].value.nbytes();
        next[i].spare_lag = p->written;
      }
    }
  }
  for (Slot& slot : next) {
    if (slot.buffer) slot.buffer->set_committed_rows(slot.value.shape()[slot.buffer->axis()]);
  }
  std::lock_guard lock(values_mutex_);
  slots_ = std::move(next);
  forget.published = true;
  return results;
}

void PersistentValueState::Reset(std::unordered_map<std::string, Tensor> values) {
  BusyGuard busy(busy_, "reset");
  if (closed_) throw Error(ErrorCode::kFailedPrecondition, "PersistentValueState.reset: the state is closed");
  TakeValues(std::move(values), "reset");
}

void PersistentValueState::Close() {
  BusyGuard busy(busy_, "close");
  closed_ = true;
  std::lock_guard lock(values_mutex_);
  slots_.clear();
}

std::unordered_map<std::string, Tensor> PersistentValueState::values() const {
  std::lock_guard lock(values_mutex_);
  std::unordered_map<std::string, Tensor> out;
  for (size_t i = 0; i < slots_.size(); ++i) out.emplace(bindings_[i].input_name, slots_[i].value);
  return out;
}

}  // namespace onnx_light::runtime
