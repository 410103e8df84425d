"""An independent float64 formulation of design.md's numerics, written from the formulas with explicit
index arithmetic rather than the generated reference's tensor idioms."""
from __future__ import annotations

import math

import torch

FP8_MAX = {"e4m3fn": 448.0, "e5m2": 57344.0}


def rmsnorm(v, op, inputs):
    n = v.shape[1]
    r = 1.0 / torch.sqrt((v * v).sum(dim=1, keepdim=True) / n + op["eps"])
    w = inputs["weight"].double() if op["weight"] else 1.0
    return v * r * w, {"rstd": r[:, 0]}


def layernorm(v, op, inputs):
    n = v.shape[1]
    mean = v.sum(dim=1, keepdim=True) / n
    var = ((v - mean) ** 2).sum(dim=1, keepdim=True) / n
    rstd = 1.0 / torch.sqrt(var + op["eps"])
    out = (v - mean) * rstd
    if op["weight"]:
        out = out * inputs["weight"].double()
    if op["bias"]:
        out = out + inputs["bias"].double()
    return out, {"mean": mean[:, 0], "rstd": rstd[:, 0]}


def rope(v, op, inputs):
    d, n = op["rope_dim"], v.shape[1]
    start = n - d if op["span"] == "tail" else 0
    cos, sin = inputs["cos"].double(), inputs["sin"].double()
    out = v.clone()
    for p in range(d // 2):
        a, b = (start + p, start + p + d // 2) if op["style"] == "neox" else (start + 2 * p, start + 2 * p + 1)
        out[:, a] = v[:, a] * cos[:, p] - v[:, b] * sin[:, p]
        out[:, b] = v[:, b] * cos[:, p] + v[:, a] * sin[:, p]
    return out, {}


def quant_fp8(v, op, inputs):
    m, n = v.shape
    g = n if op["group_size"] == "token" else op["group_size"]
    fp8_max = FP8_MAX[op["fp8"]]
    scales = torch.empty(m, n // g, dtype=torch.float64)
    for k in range(n // g):
        amax = v[:, k * g : (k + 1) * g].abs().amax(dim=1).clamp_min(op["amax_floor"])
        scale = amax / fp8_max
        if op["scale"] == "ue8m0":
            scale = torch.tensor([2.0 ** math.ceil(math.log2(s)) for s in scale.tolist()], dtype=torch.float64)
        scales[:, k] = scale
    # The documented quotient: the scale and its reciprocal rounded to fp32, their product with the fp32
    # value rounded to fp32 (exact in float64: 24 + 24 bits), then the fp8 code nearest to that.
    scale32 = scales.float().double()
    inverse = (1.0 / scale32).float().double().repeat_interleave(g, dim=1)
    unrounded = (v.float().double() * inverse).float().double().clamp(-fp8_max, fp8_max)
    return v, {"scale": scales, "q_unrounded": unrounded}


def run_chain(spec: dict, inputs: dict) -> dict:
    v = inputs["x"].double()
    outputs = {}
    steps = {"rmsnorm": rmsnorm, "layernorm": layernorm, "rope": rope, "quant_fp8": quant_fp8}
    for op in spec["op"]:
        if op["kind"] == "quant_fp8":
            outputs["y"] = v
        v, extra = steps[op["kind"]](v, op, inputs)
        outputs.update(extra)
    outputs.setdefault("y", v)
    return outputs
