// A stand-in for a compiled TileLang program, for the CPU tests of the launch paths: a tvm_ffi function
// that records the data pointer of each argument of each call, and fills every argument past the first
// `stub_inputs` with its position, so a test sees which buffers the program was handed and wrote.
#include <stdint.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

#define STUB_CALLS 64
#define STUB_ARGS 16

int32_t stub_inputs = 0;
int64_t stub_launches = 0;
int32_t stub_counts[STUB_CALLS];
void* stub_data[STUB_CALLS][STUB_ARGS];

int __tvm_ffi_stub(void* self, const TVMFFIAny* args, int32_t count, TVMFFIAny* result) {
  const int64_t call = stub_launches++ % STUB_CALLS;
  stub_counts[call] = count;
  for (int32_t i = 0; i < count && i < STUB_ARGS; ++i) {
    const DLTensor* tensor;  // handed as a DLTensor* (the C++ launch path) or a tvm_ffi Tensor (from Python)
    if (args[i].type_index == kTVMFFIDLTensorPtr) {
      tensor = (const DLTensor*)args[i].v_ptr;
    } else if (args[i].type_index == kTVMFFITensor) {
      tensor = (const DLTensor*)((const char*)args[i].v_obj + sizeof(TVMFFIObject));
    } else {
      stub_data[call][i] = NULL;
      continue;
    }
    stub_data[call][i] = tensor->data;
    if (i >= stub_inputs && tensor->ndim > 0 && tensor->shape[0] > 0) {
      int64_t last = 0;  // the furthest element from the first: every byte a strided tensor spans
      for (int32_t d = 0; d < tensor->ndim; ++d) {
        last += (tensor->shape[d] - 1) * tensor->strides[d];
      }
      memset(tensor->data, i, (size_t)(last + 1) * tensor->dtype.bits / 8);
    }
  }
  result->type_index = kTVMFFINone;
  return 0;
}

// A stand-in for a program's kernel function, called with the arguments its host code would pack
// (fusegen/native/kernel_call.py): records each data pointer, and each integer as if it were one.
int __tvm_ffi_stub_kernel(void* self, const TVMFFIAny* args, int32_t count, TVMFFIAny* result) {
  const int64_t call = stub_launches++ % STUB_CALLS;
  stub_counts[call] = count;
  for (int32_t i = 0; i < count && i < STUB_ARGS; ++i) {
    stub_data[call][i] = args[i].type_index == kTVMFFIInt ? (void*)(intptr_t)args[i].v_int64 : args[i].v_ptr;
  }
  result->type_index = kTVMFFINone;
  return 0;
}
