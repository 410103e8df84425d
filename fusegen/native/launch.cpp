// fusegen's launch path in C++: allocate a kernel's outputs and call its compiled TileLang program in one
// dispatcher call. From Python each output's torch.empty_strided costs 2-3 us on the H200 host and the
// program's tvm_ffi entry converts every torch tensor it is handed, which put kernel(...) at 2-3x one
// torch.add; here an output costs one at::empty_strided and each argument a DLTensor on the stack.
//
// Only calls whose signature the Python launcher has already checked in full reach these ops (runtime.py,
// Launcher): nothing here validates a user's tensors, as in TileLang's own generated host code.
#include <ATen/DLConvertor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace {

// The row dimension of a column-major output is padded to this many bytes: model.TMA_ALIGNMENT_BYTES.
constexpr int64_t kTmaAlignmentBytes = 16;

// One output of a program, sized per call from the token count m.
struct Output {
  c10::ScalarType dtype;
  int64_t width;  // columns of an (m, width) output; -1 for an (m,) one
  bool column;    // (m, width) column-major, m padded to kTmaAlignmentBytes: runtime.column_strides
};

struct Program {
  TVMFFIObjectHandle function;  // the program's tvm_ffi entry; a reference held for the process
  std::vector<Output> outputs;
};

std::mutex registry_mutex;
std::deque<Program> registry;  // a deque: a Program's address survives later registrations

const Program& program_at(int64_t id) {
  std::lock_guard<std::mutex> guard(registry_mutex);
  TORCH_CHECK(id >= 0 && id < static_cast<int64_t>(registry.size()), "fusegen_native: no program ", id);
  return registry[id];
}

// Registers a program and the outputs it writes; returns the id `run` and `run_out` take. `outputs` are
// tensors of each output's dtype, shaped (0,) for an (m,) output and (0, width) for an (m, width) one.
int64_t register_program(int64_t function, const std::vector<at::Tensor>& outputs, c10::IntArrayRef columns) {
  TORCH_CHECK(outputs.size() == columns.size(), "fusegen_native: one layout per output");
  Program program{reinterpret_cast<TVMFFIObjectHandle>(function), {}};
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& like = outputs[i];
    TORCH_CHECK(like.dim() == 1 || like.dim() == 2, "fusegen_native: an output is (m,) or (m, width)");
    program.outputs.push_back({like.scalar_type(), like.dim() == 2 ? like.size(1) : -1, columns[i] != 0});
  }
  TVMFFIObjectIncRef(program.function);
  std::lock_guard<std::mutex> guard(registry_mutex);
  registry.push_back(std::move(program));
  return static_cast<int64_t>(registry.size()) - 1;
}

at::Tensor allocate(const Output& output, int64_t tokens, const at::TensorOptions& options) {
  if (output.width < 0) {
    return at::empty_strided({tokens}, {1}, options.dtype(output.dtype));
  }
  if (!output.column) {
    return at::empty_strided({tokens, output.width}, {output.width, 1}, options.dtype(output.dtype));
  }
  const int64_t unit = kTmaAlignmentBytes / static_cast<int64_t>(c10::elementSize(output.dtype));
  const int64_t padded = (tokens + unit - 1) / unit * unit;
  return at::empty_strided({tokens, output.width}, {1, padded}, options.dtype(output.dtype));
}

[[noreturn]] void raise_ffi_error() {
  TVMFFIObjectHandle error = nullptr;
  TVMFFIErrorMoveFromRaised(&error);
  std::string message = "the compiled program failed";
  if (error != nullptr) {
    const TVMFFIErrorCell* cell = TVMFFIErrorGetCellPtr(error);
    message = std::string(cell->kind.data, cell->kind.size) + ": " + std::string(cell->message.data, cell->message.size);
    TVMFFIObjectDecRef(error);
  }
  TORCH_CHECK(false, "fusegen_native: ", message);
}

// Calls the program on `tensors` (inputs, then outputs) on the current stream of their device. TileLang's
// host code reads its stream from tvm_ffi's environment and selects the tensors' device without putting
// the caller's back, so both are set around the call and the device restored after it.
void call(const Program& program, c10::ArrayRef<at::Tensor> tensors) {
  const size_t count = tensors.size();
  const c10::Device device = tensors[0].device();
  const DLDevice dl_device{device.is_cuda() ? kDLCUDA : kDLCPU, device.has_index() ? device.index() : 0};
  c10::SmallVector<DLTensor, 12> views(count);
  c10::SmallVector<TVMFFIAny, 12> args(count);
  for (size_t i = 0; i < count; ++i) {
    const at::Tensor& tensor = tensors[i];
    views[i] = DLTensor{tensor.data_ptr(),
                        dl_device,
                        static_cast<int32_t>(tensor.dim()),
                        at::getDLDataType(tensor),
                        const_cast<int64_t*>(tensor.sizes().data()),
                        const_cast<int64_t*>(tensor.strides().data()),
                        0};
    args[i].type_index = kTVMFFIDLTensorPtr;
    args[i].zero_padding = 0;
    args[i].v_ptr = &views[i];
  }
  TVMFFIAny result{};
  result.type_index = kTVMFFINone;
  int status = 0;
  if (device.is_cuda()) {
    const c10::impl::DeviceGuardImplInterface* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    const c10::Device previous = guard->getDevice();
    TVMFFIStreamHandle original = nullptr;
    TVMFFIEnvSetStream(kDLCUDA, dl_device.device_id, guard->getStream(device).native_handle(), &original);
    status = TVMFFIFunctionGetCellPtr(program.function)->safe_call(program.function, args.data(), static_cast<int32_t>(count), &result);
    TVMFFIEnvSetStream(kDLCUDA, dl_device.device_id, original, nullptr);
    if (guard->getDevice() != previous) {
      guard->setDevice(previous);
    }
  } else {
    status = TVMFFIFunctionGetCellPtr(program.function)->safe_call(program.function, args.data(), static_cast<int32_t>(count), &result);
  }
  if (status != 0) {
    raise_ffi_error();
  }
  if (result.type_index >= kTVMFFIStaticObjectBegin) {
    TVMFFIObjectDecRef(result.v_obj);
  }
}

// The functional launch: allocates the outputs on the inputs' device and returns them.
std::vector<at::Tensor> run(int64_t id, const std::vector<at::Tensor>& inputs) {
  const Program& program = program_at(id);
  const int64_t tokens = inputs[0].size(0);
  const at::TensorOptions options = at::TensorOptions().device(inputs[0].device());
  std::vector<at::Tensor> tensors(inputs);
  tensors.reserve(inputs.size() + program.outputs.size());
  for (const Output& output : program.outputs) {
    tensors.push_back(allocate(output, tokens, options));
  }
  call(program, tensors);
  return std::vector<at::Tensor>(tensors.begin() + static_cast<std::ptrdiff_t>(inputs.size()), tensors.end());
}

// The out variant: inputs, then the caller's outputs.
void run_out(int64_t id, const std::vector<at::Tensor>& tensors) {
  call(program_at(id), tensors);
}

}  // namespace

TORCH_LIBRARY(fusegen_native, library) {
  library.def("register_program(int function, Tensor[] outputs, int[] columns) -> int", &register_program);
  library.def("run(int program, Tensor[] inputs) -> Tensor[]", &run);
  library.def("run_out(int program, Tensor(a!)[] tensors) -> ()", &run_out);
}
