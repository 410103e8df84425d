// fusegen's launch path in C++: a Python extension whose `launch` takes a kernel's tensors straight from
// Python, allocates the outputs where asked and launches the kernel's compiled TileLang program, in one C
// call: through the program's CUDA kernel function with the arguments its host code would pack, where
// fusegen/native/kernel_call.py reads them (0.4-1.5 us a call less on the H200 host), else through the
// program's host function.
// Measured on the H200 host (perf/proto/native_cost.py), three outputs allocated from Python cost 1.5-2x a
// whole torch.add, and three at::empty_strided from C++ still 0.4-1.2x: the caching allocator, not Python, is
// most of it. So where the caller allows it (kernel(...) called directly: a torch op's outputs must not alias
// each other), outputs small enough that the host cost matters share one allocation, cut into tensors here.
// An extension function rather than a torch op: a dispatcher call from Python parses its arguments against
// the schema and costs more than the rest of the launch (session 12: 5.1 us for a launch of a no-op program,
// where the dispatcher's own no-op op costs 1.3).
//
// Only calls whose signature the Python launcher has already checked in full reach `launch` (runtime.py,
// Launcher), as in TileLang's own generated host code; what depends on the addresses (alignment) is
// checked per call, and a call that fails it launches nothing and returns None, for the launcher's checks
// to explain.
#include <Python.h>

#include <ATen/DLConvertor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace {

// The row dimension of a column-major output is padded to this many bytes: model.TMA_ALIGNMENT_BYTES.
constexpr int64_t kTmaAlignmentBytes = 16;
// Every tensor a kernel touches starts on this boundary (16-byte vectors): runtime.ALIGNMENT.
constexpr int64_t kAlignmentBytes = 16;
// Outputs of at most this many bytes in all share one allocation: a tensor kept alive keeps its siblings'
// bytes too, so only where that costs little memory and the kernel is short enough for the host to matter.
constexpr int64_t kSharedAllocationBytes = 1 << 20;
// Where each output starts within the shared allocation: the caching allocator's own block rounding.
constexpr int64_t kSharedOffsetBytes = 512;

// One output of a program, sized per call from the token count m.
struct Output {
  c10::ScalarType dtype;
  int64_t width;  // columns of an (m, width) output; -1 for an (m,) one
  bool column;    // (m, width) column-major, m padded to kTmaAlignmentBytes: runtime.column_strides
};

// The kernel launch of a program's host code (fusegen/native/kernel_call.py): the kernel function of its
// CUDA module and what the host code passes it, slot by slot.
struct KernelCall {
  TVMFFIObjectHandle kernel;                // nullptr: the program is called through its host function
  std::vector<int64_t> tensors;             // per slot: the tensor whose data pointer it takes, or -1
  std::vector<std::vector<int64_t>> codes;  // per integer slot: its value from the token count (kernel_call.py)
};

struct Program {
  TVMFFIObjectHandle function;  // the program's tvm_ffi entry; a reference held for the process
  std::vector<Output> outputs;
  KernelCall call;
};

// The stack program of kernel_call.compile_expression at `tokens`; kernel_call.evaluate is its twin.
int64_t evaluate(const std::vector<int64_t>& codes, int64_t tokens) {
  enum : int64_t { kPush, kTokens, kAdd, kSub, kMul, kDiv, kMod, kShr, kShl, kMin, kMax, kNeg, kLt, kLe, kGt, kGe, kEq, kNe, kSelect };
  c10::SmallVector<int64_t, 8> stack;
  for (size_t i = 0; i < codes.size(); ++i) {
    const int64_t code = codes[i];
    if (code == kPush) {
      stack.push_back(codes[++i]);
      continue;
    }
    if (code == kTokens) {
      stack.push_back(tokens);
      continue;
    }
    if (code == kNeg) {
      stack.back() = -stack.back();
      continue;
    }
    if (code == kSelect) {  // condition ? chosen : otherwise
      const int64_t otherwise = stack.pop_back_val();
      const int64_t chosen = stack.pop_back_val();
      stack.back() = stack.back() != 0 ? chosen : otherwise;
      continue;
    }
    const int64_t right = stack.pop_back_val();
    int64_t& left = stack.back();
    switch (code) {
      case kAdd: left += right; break;
      case kSub: left -= right; break;
      case kMul: left *= right; break;
      case kDiv: left /= right; break;
      case kMod: left %= right; break;
      case kShr: left >>= right; break;
      case kShl: left <<= right; break;
      case kMin: left = std::min(left, right); break;
      case kMax: left = std::max(left, right); break;
      case kLt: left = left < right; break;
      case kLe: left = left <= right; break;
      case kGt: left = left > right; break;
      case kGe: left = left >= right; break;
      case kEq: left = left == right; break;
      case kNe: left = left != right; break;
      default: TORCH_CHECK(false, "fusegen_native: opcode ", code);
    }
  }
  return stack.back();
}

std::mutex registry_mutex;
std::deque<Program> registry;  // a deque: a Program's address survives later registrations

const Program& program_at(int64_t id) {
  std::lock_guard<std::mutex> guard(registry_mutex);
  TORCH_CHECK(id >= 0 && id < static_cast<int64_t>(registry.size()), "fusegen_native: no program ", id);
  return registry[id];
}

// Registers a program and the outputs it writes; returns the id `launch` takes. `outputs` are tensors of
// each output's dtype, shaped (0,) for an (m,) output and (0, width) for an (m, width) one; `columns` says of
// each whether it is column-major.
int64_t register_program(int64_t function, c10::ArrayRef<at::Tensor> outputs, c10::ArrayRef<int64_t> columns, KernelCall call) {
  TORCH_CHECK(outputs.size() == columns.size(), "fusegen_native: one layout per output");
  TORCH_CHECK(call.tensors.size() == call.codes.size(), "fusegen_native: one code per kernel argument");
  Program program{reinterpret_cast<TVMFFIObjectHandle>(function), {}, std::move(call)};
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& like = outputs[i];
    TORCH_CHECK(like.dim() == 1 || like.dim() == 2, "fusegen_native: an output is (m,) or (m, width)");
    program.outputs.push_back({like.scalar_type(), like.dim() == 2 ? like.size(1) : -1, columns[i] != 0});
  }
  TVMFFIObjectIncRef(program.function);
  if (program.call.kernel != nullptr) {
    TVMFFIObjectIncRef(program.call.kernel);
  }
  std::lock_guard<std::mutex> guard(registry_mutex);
  registry.push_back(std::move(program));
  return static_cast<int64_t>(registry.size()) - 1;
}

struct Layout {
  c10::SmallVector<int64_t, 2> sizes;
  c10::SmallVector<int64_t, 2> strides;
  int64_t bytes;  // from the first element to past the last
};

Layout layout_of(const Output& output, int64_t tokens) {
  const int64_t element = static_cast<int64_t>(c10::elementSize(output.dtype));
  if (output.width < 0) {
    return {{tokens}, {1}, tokens * element};
  }
  if (!output.column) {
    return {{tokens, output.width}, {output.width, 1}, tokens * output.width * element};
  }
  const int64_t unit = kTmaAlignmentBytes / element;
  const int64_t padded = (tokens + unit - 1) / unit * unit;
  return {{tokens, output.width}, {1, padded}, ((output.width - 1) * padded + tokens) * element};
}

// The outputs of one call on `device`: separate allocations, or views of one where `share` allows it and
// they are small.
std::vector<at::Tensor> allocate(const Program& program, int64_t tokens, c10::Device device, bool share) {
  c10::SmallVector<Layout, 6> layouts;
  int64_t total = 0;
  for (const Output& output : program.outputs) {
    layouts.push_back(layout_of(output, tokens));
    total += (layouts.back().bytes + kSharedOffsetBytes - 1) / kSharedOffsetBytes * kSharedOffsetBytes;
  }
  std::vector<at::Tensor> tensors;
  tensors.reserve(program.outputs.size());
  if (!share || total > kSharedAllocationBytes) {
    for (size_t i = 0; i < layouts.size(); ++i) {
      tensors.push_back(at::empty_strided(layouts[i].sizes, layouts[i].strides, at::TensorOptions().dtype(program.outputs[i].dtype).device(device)));
    }
    return tensors;
  }
  const at::Tensor block = at::empty({total}, at::TensorOptions().dtype(at::kByte).device(device));
  int64_t offset = 0;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const c10::ScalarType dtype = program.outputs[i].dtype;
    at::Tensor tensor = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(block.storage()), block.key_set(), c10::scalarTypeToTypeMeta(dtype));
    tensor.unsafeGetTensorImpl()->set_sizes_and_strides(layouts[i].sizes, layouts[i].strides, offset / static_cast<int64_t>(c10::elementSize(dtype)));
    tensors.push_back(std::move(tensor));
    offset += (layouts[i].bytes + kSharedOffsetBytes - 1) / kSharedOffsetBytes * kSharedOffsetBytes;
  }
  return tensors;
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

// The arguments the program's host code would pass its kernel function (Program::call) for `tensors`.
c10::SmallVector<TVMFFIAny, 16> kernel_arguments(const KernelCall& call, c10::ArrayRef<at::Tensor> tensors) {
  const int64_t tokens = tensors[0].size(0);
  c10::SmallVector<TVMFFIAny, 16> args(call.tensors.size());
  for (size_t i = 0; i < args.size(); ++i) {
    args[i].zero_padding = 0;
    if (call.tensors[i] >= 0) {
      void* data = tensors[call.tensors[i]].data_ptr();
      args[i].type_index = data != nullptr ? kTVMFFIOpaquePtr : kTVMFFINone;  // as the host code passes it
      args[i].v_ptr = data;
    } else {
      args[i].type_index = kTVMFFIInt;
      args[i].v_int64 = evaluate(call.codes[i], tokens);
    }
  }
  return args;
}

// Calls the program on `tensors` (inputs, then outputs) on the current stream of their device: its kernel
// function with the arguments its host code would pack, where Program::call has them, else its host function
// with the tensors. Both read their stream from tvm_ffi's environment, so it is set around the call; the
// host function also selects the tensors' device (and never puts the caller's back), the kernel function
// launches on the current one: the device is set for the call where it differs, and restored after.
void call(const Program& program, c10::ArrayRef<at::Tensor> tensors) {
  const size_t count = tensors.size();
  const c10::Device device = tensors[0].device();
  const DLDevice dl_device{device.is_cuda() ? kDLCUDA : kDLCPU, device.has_index() ? device.index() : 0};
  c10::SmallVector<DLTensor, 12> views;
  c10::SmallVector<TVMFFIAny, 16> args;
  TVMFFIObjectHandle function = program.call.kernel;
  if (function != nullptr) {
    args = kernel_arguments(program.call, tensors);
  } else {
    function = program.function;
    views.resize(count);
    args.resize(count);
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
  }
  TVMFFIAny result{};
  result.type_index = kTVMFFINone;
  const int32_t arity = static_cast<int32_t>(args.size());
  int status = 0;
  if (device.is_cuda()) {
    const c10::impl::DeviceGuardImplInterface* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    const c10::Device previous = guard->getDevice();
    if (previous != device) {
      guard->setDevice(device);
    }
    TVMFFIStreamHandle original = nullptr;
    TVMFFIEnvSetStream(kDLCUDA, dl_device.device_id, guard->getStream(device).native_handle(), &original);
    status = TVMFFIFunctionGetCellPtr(function)->safe_call(function, args.data(), arity, &result);
    TVMFFIEnvSetStream(kDLCUDA, dl_device.device_id, original, nullptr);
    if (guard->getDevice() != previous) {
      guard->setDevice(previous);
    }
  } else {
    status = TVMFFIFunctionGetCellPtr(function)->safe_call(function, args.data(), arity, &result);
  }
  if (status != 0) {
    raise_ffi_error();
  }
  if (result.type_index >= kTVMFFIStaticObjectBegin) {
    TVMFFIObjectDecRef(result.v_obj);
  }
}

// What `launch` does with its tensors (fusegen.native.SEPARATE, SHARED, INTO).
enum Mode : long { kSeparate = 0, kShared = 1, kInto = 2 };

const at::Tensor& tensor_argument(PyObject* argument) {
  TORCH_CHECK_TYPE(THPVariable_Check(argument), "fusegen_native.launch: expected a tensor, got ", Py_TYPE(argument)->tp_name);
  return THPVariable_Unpack(argument);
}

int64_t integer_argument(PyObject* argument) {
  const int64_t value = PyLong_AsLongLong(argument);
  if (value == -1 && PyErr_Occurred()) {
    throw python_error();
  }
  return value;
}

// The items of a Python sequence, each converted by `item`.
template <typename Item>
std::vector<Item> sequence_argument(PyObject* sequence, Item (*item)(PyObject*)) {
  PyObject* items = PySequence_Fast(sequence, "fusegen_native.register_program: expected a sequence");
  if (items == nullptr) {
    throw python_error();
  }
  std::vector<Item> values;
  try {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); ++i) {
      values.push_back(item(PySequence_Fast_GET_ITEM(items, i)));
    }
  } catch (...) {
    Py_DECREF(items);
    throw;
  }
  Py_DECREF(items);
  return values;
}

at::Tensor tensor_item(PyObject* item) {
  return tensor_argument(item);
}

std::vector<int64_t> integers_item(PyObject* item) {
  return sequence_argument(item, integer_argument);
}

// register_program(function: int, outputs: sequence of tensors, columns: sequence of int, kernel: int,
// kernel_tensors: sequence of int, kernel_codes: sequence of sequences of int) -> int; kernel 0 for none.
PyObject* py_register_program(PyObject*, PyObject* const* args, Py_ssize_t count) {
  HANDLE_TH_ERRORS
  TORCH_CHECK(count == 6, "fusegen_native.register_program takes (function, outputs, columns, kernel, kernel_tensors, kernel_codes)");
  KernelCall call{reinterpret_cast<TVMFFIObjectHandle>(integer_argument(args[3])),
                  sequence_argument(args[4], integer_argument),
                  sequence_argument(args[5], integers_item)};
  const int64_t id = register_program(
      integer_argument(args[0]), sequence_argument(args[1], tensor_item), sequence_argument(args[2], integer_argument), std::move(call));
  return PyLong_FromLongLong(id);
  END_HANDLE_TH_ERRORS
}

// launch(program: int, mode: int, *tensors): kSeparate and kShared take the inputs, allocate the outputs
// (sharing one allocation with kShared where they are small), launch and return the outputs as a tuple;
// kInto takes the inputs and then the outputs, launches and returns True. Returns None, launching nothing,
// where a tensor does not start on a kAlignmentBytes boundary.
PyObject* py_launch(PyObject*, PyObject* const* args, Py_ssize_t count) {
  HANDLE_TH_ERRORS
  TORCH_CHECK(count >= 3, "fusegen_native.launch takes (program, mode, *tensors)");
  const Program& program = program_at(integer_argument(args[0]));
  const int64_t mode = integer_argument(args[1]);
  c10::SmallVector<at::Tensor, 12> tensors;
  for (Py_ssize_t i = 2; i < count; ++i) {
    const at::Tensor& tensor = tensor_argument(args[i]);
    if (reinterpret_cast<uintptr_t>(tensor.data_ptr()) % kAlignmentBytes != 0 && tensor.numel() != 0) {
      Py_RETURN_NONE;
    }
    tensors.push_back(tensor);
  }
  if (mode == kInto) {
    call(program, tensors);
    Py_RETURN_TRUE;
  }
  std::vector<at::Tensor> outputs = allocate(program, tensors[0].size(0), tensors[0].device(), mode == kShared);
  tensors.append(outputs.begin(), outputs.end());
  call(program, tensors);
  PyObject* result = PyTuple_New(static_cast<Py_ssize_t>(outputs.size()));
  if (result == nullptr) {
    throw python_error();
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    PyTuple_SET_ITEM(result, static_cast<Py_ssize_t>(i), THPVariable_Wrap(std::move(outputs[i])));
  }
  return result;
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"register_program", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_register_program)), METH_FASTCALL, nullptr},
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_launch)), METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_definition = {PyModuleDef_HEAD_INIT, "fusegen_native", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit_fusegen_native() {
  return PyModule_Create(&module_definition);
}
