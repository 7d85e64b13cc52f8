"""What cuDNN's fused convolution-batch-norm kernels would save in ResNet-50's step, layer by layer.

    CUDNN_FRONTEND=1.16.0 scripts/lab/device_wheels.sh  # here: the carried wheels, cuDNN's frontend among them
    source scripts/lab/device_env.sh && python3 scripts/tools/conv_bn_fusion_probe.py --batch 256 \
        --step-ms 36.7 --out probe.json                # on the GPU machine
    python3 scripts/tools/conv_bn_fusion_probe.py --list  # ResNet-50's convolutions, on any machine

The compiled ResNet-50 step runs each convolution in cuDNN and each batch norm and ReLU around it in
Inductor's kernels, which read and write the convolution's output and input in memory more than once: the
statistics of the output (one read), the previous layer's scale, bias and ReLU (one read, one write), the
ReLU's mask and the batch norm's two sums in the backward pass (two reads more). MLPerf's ResNet submissions
fold those into the convolutions (cuDNN's runtime fusion: the previous layer's scale-bias-ReLU as the
convolution's prologue, the statistics as its epilogue, and the same in its weight and data gradients).
Before building that path as autograd functions, this probe measures it on ResNet-50's own convolutions
(taken from the model by forward hooks, at --batch and 224x224) through cuDNN's graph API
(`nvidia-cudnn-frontend`, its Python binding, carried as a wheel: no other library offers these fusions
with a backward pass to torch), one cell beside the compiled equivalent of what runs today:

- fwd: [scale, bias, ReLU ->] convolution -> the output's sum and sum of squares
- wgrad (prologue layers): the weight gradient from the ReLU's output saved (today) against one kernel that
  recomputes it from the batch norm's input (the fused path never writes it)
- dgrad (prologue layers): the data gradient, the ReLU's mask and the two sums the batch norm's backward
  needs, against cuDNN's data gradient with the mask and sums in its epilogue

Each cuDNN cell's outputs are checked against the compiled cell's (a graph cuDNN refuses is reported so); the
savings summed over the 53 convolutions against --step-ms say what the whole path could give.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from harness.usage import module_doc  # noqa: E402
from reference_models.resnet.model import RESNET50_LAYERS, build  # noqa: E402


@dataclass(frozen=True)
class Conv:
    """One convolution of the network at batch n: input c x h x w, k filters of r x r, whether the previous
    batch norm and ReLU feed it directly (a prologue the fused path can take)."""
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    stride: int
    padding: int
    prologue: bool


def resnet50_convs(batch: int, image: int = 224) -> list[Conv]:
    """ResNet-50's convolutions in forward order, read from the model on the meta device by forward hooks.
    A Bottleneck's conv2 and conv3 take their input straight from bn1/bn2 and a ReLU; the stem, conv1 and
    the downsample convolution take a tensor that is materialised anyway (the image, the block's input)."""
    model = build(RESNET50_LAYERS, 64, 1000).to("meta")
    convs: list[Conv] = []

    def hook_for(name: str) -> Callable[..., None]:
        def hook(module: torch.nn.Conv2d, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
            n, c, h, w = inputs[0].shape
            convs.append(Conv(n, c, h, w, module.out_channels, module.kernel_size[0], module.stride[0],
                              int(module.padding[0]), name.endswith((".conv2", ".conv3"))))
        return hook

    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(hook_for(name))
    with torch.no_grad():
        model(torch.empty(batch, 3, image, image, device="meta"))
    return convs


def median_ms(fn: Callable[[], Any], *, warmup: int = 3, iters: int = 20, windows: int = 3) -> float:
    """The median over `windows` of one call's mean time, each window between two CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(windows):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()  # sync point: the window's end event
        times.append(start.elapsed_time(end) / iters)
    return sorted(times)[len(times) // 2]


def _stats(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    yf = y.float()
    return yf.sum((0, 2, 3)), (yf * yf).sum((0, 2, 3))


def _fwd(x: torch.Tensor, s: torch.Tensor, b: torch.Tensor, w: torch.Tensor, stride: int, padding: int,
         prologue: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a = torch.relu(x * s + b) if prologue else x
    y = F.conv2d(a, w, stride=stride, padding=padding)
    return (y, *_stats(y))


def _drelu_sums(da: torch.Tensor, x: torch.Tensor, s: torch.Tensor, b: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dpre = torch.where(x * s + b > 0, da, torch.zeros_like(da))
    return dpre, dpre.float().sum((0, 2, 3)), (dpre.float() * x.float()).sum((0, 2, 3))


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float) -> bool:
    scale = want.float().abs().max().clamp_min(1e-6)
    return bool(((got.float() - want.float()).abs().max() / scale) <= rtol)


class CudnnGraphs:
    """The three fused graphs through cuDNN's Python frontend, built per shape."""

    def __init__(self) -> None:
        import cudnn  # the device's wheel (scripts/lab/device_wheels.sh with CUDNN_FRONTEND); after torch
        self.cudnn = cudnn
        self.handle = cudnn.create_handle()
        cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)

    def _graph(self) -> Any:
        dt = self.cudnn.data_type
        return self.cudnn.pygraph(io_data_type=dt.HALF, intermediate_data_type=dt.FLOAT, compute_data_type=dt.FLOAT,
                                  handle=self.handle)

    def _plan(self, graph: Any, feeds: dict[Any, torch.Tensor]) -> Callable[[], None]:
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([self.cudnn.heur_mode.A, self.cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans()
        workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
        return lambda: graph.execute(feeds, workspace, handle=self.handle)

    @staticmethod
    def _input(g: Any, t: dict[str, torch.Tensor], name: str) -> Any:
        return g.tensor(name=name, dim=list(t[name].shape), stride=list(t[name].stride()), data_type=t[name].dtype)

    def _prologue(self, g: Any, t: dict[str, torch.Tensor]) -> tuple[Any, Any, Any, Any]:
        """The graph's x, s, b and x * s + b (the previous batch norm applied, before its ReLU)."""
        X, S, B = (self._input(g, t, n) for n in ("x", "s", "b"))
        return X, S, B, g.bias(name="bias", input=g.scale(name="scale", input=X, scale=S), bias=B)

    def fwd(self, conv: Conv, t: dict[str, torch.Tensor], out: dict[str, torch.Tensor]) -> Callable[[], None]:
        g = self._graph()
        feeds: dict[Any, torch.Tensor] = {}
        if conv.prologue:
            X, S, B, pre = self._prologue(g, t)
            feeds.update({S: t["s"], B: t["b"]})
            image = g.relu(name="relu", input=pre)
        else:
            X = image = self._input(g, t, "x")
        W = self._input(g, t, "w")
        Y = g.conv_fprop(image=image, weight=W, padding=[conv.padding] * 2, stride=[conv.stride] * 2,
                         dilation=[1, 1])
        Y.set_output(True).set_dim(list(out["y"].shape)).set_stride(list(out["y"].stride()))
        SUM, SQ = g.genstats(name="genstats", input=Y)
        SUM.set_output(True).set_data_type(self.cudnn.data_type.FLOAT)
        SQ.set_output(True).set_data_type(self.cudnn.data_type.FLOAT)
        feeds.update({X: t["x"], W: t["w"], Y: out["y"], SUM: out["sum"], SQ: out["sq"]})
        return self._plan(g, feeds)

    def wgrad(self, conv: Conv, t: dict[str, torch.Tensor], out: dict[str, torch.Tensor]) -> Callable[[], None]:
        g = self._graph()
        X, S, B, pre = self._prologue(g, t)
        DY = self._input(g, t, "dy")
        DW = g.conv_wgrad(name="wgrad", image=g.relu(name="relu", input=pre), loss=DY,
                          padding=[conv.padding] * 2, stride=[conv.stride] * 2, dilation=[1, 1])
        DW.set_output(True).set_dim(list(out["dw"].shape)).set_stride(list(out["dw"].stride()))
        return self._plan(g, {X: t["x"], S: t["s"], B: t["b"], DY: t["dy"], DW: out["dw"]})

    def dgrad(self, conv: Conv, t: dict[str, torch.Tensor], out: dict[str, torch.Tensor]) -> Callable[[], None]:
        g = self._graph()
        dt = self.cudnn.data_type
        X, S, B, pre = self._prologue(g, t)
        W, DY = self._input(g, t, "w"), self._input(g, t, "dy")
        DA = g.conv_dgrad(name="dgrad", loss=DY, filter=W, padding=[conv.padding] * 2,
                          stride=[conv.stride] * 2, dilation=[1, 1])
        DA.set_dim(list(t["x"].shape)).set_stride(list(t["x"].stride()))
        DPRE = g.relu_backward(name="drelu", loss=DA, input=pre)
        DPRE.set_output(True).set_data_type(dt.HALF)
        SUM = g.reduction(name="sum", input=DPRE, mode=self.cudnn.reduction_mode.ADD, compute_data_type=dt.FLOAT)
        SUM.set_output(True).set_dim([1, conv.c, 1, 1]).set_data_type(dt.FLOAT)
        SUMX = g.reduction(name="sumx", input=g.mul(name="mul", a=DPRE, b=X),
                           mode=self.cudnn.reduction_mode.ADD, compute_data_type=dt.FLOAT)
        SUMX.set_output(True).set_dim([1, conv.c, 1, 1]).set_data_type(dt.FLOAT)
        return self._plan(g, {X: t["x"], S: t["s"], B: t["b"], W: t["w"], DY: t["dy"], DPRE: out["dpre"],
                              SUM: out["sum"], SUMX: out["sumx"]})


def probe(conv: Conv, graphs: CudnnGraphs) -> dict[str, Any]:
    """One convolution's cells: each kind's compiled and cuDNN milliseconds, and whether they agree."""
    cl = torch.channels_last
    gen = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, device="cuda", generator=gen) * scale).half().to(memory_format=cl)

    ho = (conv.h + 2 * conv.padding - conv.r) // conv.stride + 1  # the output's height and width
    t = {"x": randn(conv.n, conv.c, conv.h, conv.w), "s": randn(1, conv.c, 1, 1, scale=0.5).abs() + 0.5,
         "b": randn(1, conv.c, 1, 1, scale=0.1), "w": randn(conv.k, conv.c, conv.r, conv.r, scale=0.05),
         "dy": randn(conv.n, conv.k, ho, ho, scale=0.01)}
    args = (conv.stride, conv.padding, conv.prologue)
    fwd = torch.compile(_fwd, fullgraph=True, dynamic=False)
    want = fwd(t["x"], t["s"], t["b"], t["w"], *args)
    row: dict[str, Any] = {"fwd_compiled_ms": median_ms(lambda: fwd(t["x"], t["s"], t["b"], t["w"], *args))}
    cells: list[tuple[str, Callable[[], tuple[Callable[[], None], bool]]]] = []

    def fused_fwd() -> tuple[Callable[[], None], bool]:
        out = {"y": torch.empty_like(want[0]), "sum": torch.empty(1, conv.k, 1, 1, device="cuda"),
               "sq": torch.empty(1, conv.k, 1, 1, device="cuda")}
        run = graphs.fwd(conv, t, out)
        run()
        ok = (_close(out["y"], want[0], 1e-2) and _close(out["sum"].flatten(), want[1], 2e-2)
              and _close(out["sq"].flatten(), want[2], 2e-2))
        return run, ok
    cells.append(("fwd", fused_fwd))
    if conv.prologue:
        a = torch.relu(t["x"] * t["s"] + t["b"]).contiguous(memory_format=cl)
        w_shape = list(t["w"].shape)

        def saved_wgrad() -> torch.Tensor:
            return torch.ops.aten.convolution_backward(t["dy"], a, t["w"], None, [conv.stride] * 2, [conv.padding] * 2,
                                                       [1, 1], False, [0, 0], 1, [False, True, False])[1]

        def saved_dgrad() -> tuple[torch.Tensor, ...]:
            da = torch.ops.aten.convolution_backward(t["dy"], a, t["w"], None, [conv.stride] * 2, [conv.padding] * 2,
                                                     [1, 1], False, [0, 0], 1, [True, False, False])[0]
            return drelu(da, t["x"], t["s"], t["b"])

        drelu = torch.compile(_drelu_sums, fullgraph=True, dynamic=False)
        want_dw, want_d = saved_wgrad(), saved_dgrad()
        row["wgrad_compiled_ms"] = median_ms(saved_wgrad)
        row["dgrad_compiled_ms"] = median_ms(saved_dgrad)

        def fused_wgrad() -> tuple[Callable[[], None], bool]:
            out = {"dw": torch.empty(w_shape, device="cuda", dtype=torch.half).to(memory_format=cl)}
            run = graphs.wgrad(conv, t, out)
            run()
            return run, _close(out["dw"], want_dw, 2e-2)

        def fused_dgrad() -> tuple[Callable[[], None], bool]:
            out = {"dpre": torch.empty_like(t["x"]), "sum": torch.empty(1, conv.c, 1, 1, device="cuda"),
                   "sumx": torch.empty(1, conv.c, 1, 1, device="cuda")}
            run = graphs.dgrad(conv, t, out)
            run()
            return run, (_close(out["dpre"], want_d[0], 2e-2) and _close(out["sum"].flatten(), want_d[1], 2e-2)
                         and _close(out["sumx"].flatten(), want_d[2], 2e-2))
        cells += [("wgrad", fused_wgrad), ("dgrad", fused_dgrad)]
    for kind, build_cell in cells:
        try:
            run, ok = build_cell()
        except Exception as err:  # noqa: BLE001 - a graph cuDNN refuses is this cell's result, not the probe's end
            row[f"{kind}_cudnn"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
            continue
        row[f"{kind}_cudnn_ms"] = median_ms(run)
        row[f"{kind}_agrees"] = ok
    return row


def summary(rows: list[dict[str, Any]], step_ms: float | None) -> dict[str, Any]:
    """Milliseconds a step the fused cells save, over every convolution (a shape counted as often as it
    occurs), where the cuDNN cell ran and agreed; and the step and images/s that would leave."""
    saved: dict[str, float] = {}
    for row in rows:
        for kind in ("fwd", "wgrad", "dgrad"):
            if row.get(f"{kind}_agrees"):
                saved[kind] = saved.get(kind, 0.0) + row["count"] * (row[f"{kind}_compiled_ms"] - row[f"{kind}_cudnn_ms"])
    total = sum(saved.values())
    out: dict[str, Any] = {"saved_ms_a_step": {**saved, "total": total}}
    if step_ms:
        out.update(step_ms=step_ms, step_ms_left=step_ms - total, speedup=step_ms / (step_ms - total))
    return out


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a batch: give a whole number, 1 or more")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("--batch", type=_positive, default=256, help="images a step (ResNet-50's MLPerf batch: 256)")
    parser.add_argument("--step-ms", type=float, default=None, help="the compiled step's time, for the projection")
    parser.add_argument("--budget-s", type=float, default=400.0, help="stop starting new shapes after this long")
    parser.add_argument("--out", type=Path, default=None, help="write the rows and the summary as JSON")
    parser.add_argument("--list", action="store_true", help="print ResNet-50's convolutions and stop")
    args = parser.parse_args(argv)
    counts = Counter(resnet50_convs(args.batch))
    if args.list:
        print("\n".join(f"{count} x {asdict(conv)}" for conv, count in counts.items()))
        print(f"{sum(counts.values())} convolutions, {len(counts)} shapes")
        return 0
    if not torch.cuda.is_available():
        print("error: the probe times CUDA kernels: run it where there is a GPU (--list runs anywhere)", file=sys.stderr)
        return 2
    graphs, rows, t0 = CudnnGraphs(), [], time.monotonic()
    # one compilation a shape: past Dynamo's default limit of 8 the later shapes would run eager
    with torch._dynamo.config.patch(recompile_limit=256, accumulated_recompile_limit=1024):
        for conv, count in counts.items():
            if time.monotonic() - t0 > args.budget_s:
                print(f"budget of {args.budget_s:.0f} s spent: {len(counts) - len(rows)} shapes not probed")
                break
            rows.append({**asdict(conv), "count": count, **probe(conv, graphs)})
            print(json.dumps(rows[-1]), flush=True)
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cudnn": graphs.cudnn.backend_version_string(), "batch": args.batch, "rows": rows,
              "complete": len(rows) == len(counts), **summary(rows, args.step_ms)}
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
