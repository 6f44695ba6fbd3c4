// Runs a model file from C++ and reads the event log after the run.
//   cpp_host MODEL.onnx
// Every float input is filled with 0.5 (symbolic dimensions become 1).
#include <onnx_light/runtime/runtime.h>

#include <cstdio>
#include <exception>
#include <map>

namespace olr = onnx_light::runtime;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
    return 2;
  }
  try {
    olr::RuntimeSession session{std::filesystem::path(argv[1])};
    olr::RuntimeContext rt(olr::KernelContext(olr::DefaultOpset(23)), {.events_enabled = true});
    rt.set_kernel_usage_enabled(true);
    for (const olr::ValueInfo& input : session.inputs()) {
      olr::Shape shape;
      for (int64_t d : input.type.shape.value_or(std::vector<int64_t>{})) shape.push_back(d < 0 ? 1 : d);
      olr::Tensor t = olr::Tensor::Allocate(olr::DataType::kFloat, shape, rt.allocator());
      for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = 0.5f;
      rt.PutTensor(input.name, t, olr::TensorKind::kInput);
    }
    session.Run(rt);

    std::map<std::string, std::pair<int, int64_t>> per_op;  // op -> (count, total ns)
    for (const olr::RuntimeEvent& e : rt.events()) {
      if (e.action != olr::RuntimeEventAction::kRunNode) continue;
      auto& [count, total] = per_op[e.op_type];
      ++count;
      total += e.duration_ns;
    }
    std::printf("%zu events\n", rt.events().size());
    for (const auto& [op, stats] : per_op) {
      std::printf("  %-12s x%d  %8.1f us\n", op.c_str(), stats.first, stats.second / 1e3);
    }
    for (const olr::ValueInfo& output : session.outputs()) {
      const olr::Tensor& y = rt.GetTensor(output.name);
      double sum = 0;  // a checksum to compare with another runtime
      if (y.dtype() == olr::DataType::kFloat) {
        for (int64_t i = 0; i < y.size(); ++i) sum += y.data<float>()[i];
      }
      std::printf("output %s: %s %s sum=%.6g\n", output.name.c_str(),
                  std::string(olr::DataTypeName(y.dtype())).c_str(), olr::ShapeToString(y.shape()).c_str(), sum);
    }
    std::printf("kernels used:");
    for (const std::string& name : rt.GetKernelUsage()) std::printf(" %s", name.c_str());
    std::printf("\npeak bytes: %lld\n", static_cast<long long>(rt.allocator()->peak_bytes()));
    return 0;
  } catch (const olr::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
