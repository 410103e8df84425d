import sys, torch
sys.argv = ["x", "/dev/null"]
sys.path.insert(0, "examples")
import hf_llama_decoder as ex
from torch._dynamo.utils import counters
layer, rotary, fused = ex.build()
with torch.no_grad():
    for label, model in (("unpatched", ex.unpatched(layer)), ("fused", fused)):
        torch._dynamo.reset(); counters.clear()
        f = torch.compile(model, fullgraph=True, dynamic=True, mode="reduce-overhead")
        hidden, arguments = ex.layer_inputs(rotary, 8)
        for _ in range(5):
            f(hidden, **arguments)
        print(label, "ms", ex.ms_per_call(lambda: f(hidden, **arguments)), dict(counters["inductor"]), flush=True)
