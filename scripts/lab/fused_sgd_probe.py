"""ResNet-50 at amp, eight steps of its synthetic batch under three optimizers: PyTorch's fused SGD as
it starts (momentum buffers made with empty_like on the first step, which the GradScaler skips), the
optimizer as reference_models/resnet/optim.py builds it (zeroed buffers), and foreach SGD. One H200:

    source scripts/lab/device_env.sh && python3 scripts/lab/fused_sgd_probe.py

docs/benchmarks/h200_2026-12-01/verify/fused_sgd_probe.txt holds its output (2026-12-01).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.run.build import build_run, context_for  # noqa: E402
from harness.run.loop import train_step  # noqa: E402

def variant(name, extra):
    cfg = compose(["model=resnet", "dataset=imagenet", "mode=throughput", "precision=amp", "model.channels_last=true",
                   "seed=1", *extra])
    run = build_run(cfg, context_for(cfg))
    opt = run.bench.optimizer
    if name == "foreach":
        new = torch.optim.SGD(opt.param_groups, lr=opt.defaults["lr"], momentum=opt.defaults["momentum"], foreach=True)
        run.bench.optimizer = new
        run.bench.lr_scheduler.optimizer = new
    if name == "fused, buffers made by PyTorch":
        opt.state.clear()  # as torch.optim.SGD(fused=True) starts
    batch = run.synthetic_batch()
    out = []
    for i in range(8):
        loss, _, _ = train_step(run, batch)
        scale = run.precision.scaler.get_scale()
        bad_p = sum(1 for p in run.module.parameters() if not torch.isfinite(p).all())
        bufs = [s.get("momentum_buffer") for s in run.bench.optimizer.state.values()]
        bad_b = sum(1 for b in bufs if b is not None and not torch.isfinite(b).all())
        out.append(f"step {i+1}: loss {float(loss):.4f} scale {scale:g} lr {run.bench.optimizer.param_groups[0]['lr']:.4g} "
                   f"nonfinite params {bad_p} buffers {bad_b}")
    print(f"== {name} {extra}")
    print("\n".join(out), flush=True)
    del run
    torch.cuda.empty_cache()

print(torch.__version__, torch.cuda.get_device_name())
for name, extra in [("fused, buffers made by PyTorch", []), ("as built (zeroed buffers)", []), ("foreach", [])]:
    try:
        variant(name, extra)
    except Exception as err:
        print("== failed", name, extra, type(err).__name__, err)
