"""GNMT's compiled attention and loss in mode=train (model.compile_shapes, reference_models/gnmt/scores.py
`compiled`): with symbolic batch and sentence lengths one graph a kernel serves every bucket's lengths and the
beam search, compiled in the warm-up on `warmup_batches()` before run_start; mode=throughput keeps one static
graph a shape; the compiled path stays opt-in. On a CPU torch.compile runs with a backend that counts the
graphs Dynamo hands it and runs them as traced, or with aot_eager (AOTAutograd, without code generation); the
CUDA test at the end compiles with Inductor."""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from functools import partial
from typing import Iterator

import pytest
import torch
from omegaconf import OmegaConf

from harness import registry
from harness.config import compose
from harness.errors import ConfigError
from harness.fastpath import label, resolve
from harness.interface import RunContext
from harness.run.build import build_run, context_for
from harness.run.warmup import warm_up
from reference_models.gnmt import loss as gnmt_loss
from reference_models.gnmt import scores
from reference_models.gnmt.options import CompileShapes, GNMTOptions
from reference_models.gnmt.tokenizer import PAD_ID

# Dynamo reads .grad of its inputs while it traces; the loss's logits and the saved q and k are no leaves, and
# torch hides the warning that read raises by a display filter, which the suite's "error" filter runs before
pytestmark = pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")


class Counting:
    """A torch.compile backend that records, for each graph it is given, its tensor inputs' sizes as traced:
    "s" for a size traced as a symbol, else the number."""

    def __init__(self) -> None:
        self.graphs: list[list[tuple[str, ...]]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[object]):
        values = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
        self.graphs.append(sorted(tuple("s" if isinstance(d, torch.SymInt) else str(d) for d in v.shape)
                                  for v in values if isinstance(v, torch.Tensor)))
        return gm.forward

    def symbolic(self) -> list[bool]:
        """For each graph, whether any of its sizes is a symbol."""
        return [any("s" in shape for shape in graph) for graph in self.graphs]


@contextmanager
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()  # Dynamo caches graphs on the kernels' code, across compile calls
    try:
        yield
    finally:
        torch._dynamo.reset()


def _debug(tmp_path, *extra: str):
    cfg = compose(["model=gnmt", "+debug=gnmt", "seed=1", "device=cpu", f"output_root={tmp_path / 'out'}",
                   f"data_root={tmp_path / 'data'}", *extra])
    OmegaConf.resolve(cfg)
    return cfg


def _fields(batch) -> dict[str, object]:
    return {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}


def test_warmup_batches_are_seeded_training_batches_at_the_longest_the_first_bucket_s_and_one_query(tmp_path):
    cfg = _debug(tmp_path)
    spec = registry.get("gnmt")
    assert spec.task is not None
    folder = spec.task.prepare(cfg)

    def bench(rank: int, world: int):
        return spec.build(RunContext(cfg=cfg, data_dir=folder, device=torch.device("cpu"), rank=rank,
                                     world_size=world, seed=10 + rank, shared_seed=7))

    first, other_rank = bench(0, 2), bench(1, 2)
    state, kept = torch.get_rng_state(), dict(vars(first))
    batches = first.warmup_batches()
    assert torch.equal(torch.get_rng_state(), state)  # drawn from a generator of their own
    assert vars(first).keys() == kept.keys() and all(vars(first)[k] is v for k, v in kept.items())
    shapes = [(b.src.shape[0], b.tgt_in.shape[0]) for b in batches]
    assert shapes == [(75, 74), (15, 14), (15, 1)]  # max_length 75, five buckets of 15
    for again in (first.warmup_batches(), other_rank.warmup_batches()):  # each call, every rank: the same
        for a, b in zip(batches, again, strict=True):
            assert all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
                       for x, y in zip(_fields(a).values(), _fields(b).values()))
    real = next(iter(first.train_batches(1)))
    for batch in batches:
        for (name, got), want in zip(_fields(batch).items(), _fields(real).values()):
            assert type(got) is type(want), name
            if isinstance(got, torch.Tensor):
                assert (got.dtype, got.device, got.dim()) == (want.dtype, want.device, want.dim()), name
        for b in (batch, real):  # what a collated batch holds: lengths, shifted targets, the tokens counted
            assert torch.equal((b.src != PAD_ID).sum(0), b.src_len)
            assert torch.equal(b.tgt_in[1:], b.tgt_out[:-1])
            assert b.tokens == int(b.src_len.sum()) + int((b.tgt_out != PAD_ID).sum())
        assert batch.src.shape[1] == real.src.shape[1] == cfg.model.batch_size


def _score_steps(kernels: scores.Kernels, lengths) -> None:
    g = torch.Generator().manual_seed(0)
    for t_q, t_k in lengths:
        q, k = torch.randn(3, t_q, 8, generator=g, dtype=torch.float64), torch.randn(3, t_k, 8, generator=g,
                                                                                   dtype=torch.float64)
        bias, v = torch.randn(8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)
        inputs = [x.requires_grad_() for x in (q, k, bias, v)]
        grad = torch.randn(3, t_q, t_k, generator=g, dtype=torch.float64)
        got = scores.FusedScores.apply(*inputs, kernels)
        got.backward(grad)
        grads = [x.grad for x in inputs]
        for x in inputs:
            x.grad = None
        want = scores.additive_scores(*inputs)
        want.backward(grad)
        torch.testing.assert_close(got, want)
        for a, b in zip(grads, inputs):
            torch.testing.assert_close(a, b.grad)


def _loss_steps(kernels: gnmt_loss.Kernels, lengths) -> None:
    g = torch.Generator().manual_seed(1)
    for t_q, _ in lengths:
        logits = torch.randn(t_q, 3, 11, generator=g)
        target = torch.randint(PAD_ID + 1, 11, (t_q, 3), generator=g)
        target[-1, 0] = PAD_ID
        a, b = logits.clone().requires_grad_(), logits.clone().requires_grad_()
        got = gnmt_loss.fused_smoothed_loss(a, target, 0.1, kernels)
        want = gnmt_loss.smoothed_loss(b, target, 0.1)
        got.backward()
        want.backward()
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(a.grad, b.grad)


LENGTHS = [(5, 7), (9, 12)]  # two (queries, keys) lengths, as two buckets bring them


@pytest.mark.parametrize("dynamic", [True, False])
def test_dynamic_kernels_compile_once_for_two_lengths_and_static_ones_once_a_length(dynamic):
    """Each of the five kernels (scores, its two gradient reductions, the loss forward and backward) gives
    autograd's values at both lengths; dynamic: one graph with symbolic sizes for both, static (mode=throughput,
    as measured): a graph of fixed sizes for each."""
    score_backend, loss_backend = Counting(), Counting()
    with fresh_dynamo():
        _score_steps(scores.compiled_kernels(dynamic, backend=score_backend), LENGTHS)
        _loss_steps(gnmt_loss.compiled_kernels(dynamic, backend=loss_backend), LENGTHS)
    per_length = 1 if dynamic else len(LENGTHS)
    assert len(score_backend.graphs) == 3 * per_length
    assert len(loss_backend.graphs) == 2 * per_length
    assert set(score_backend.symbolic() + loss_backend.symbolic()) == {dynamic}


def test_through_aot_autograd_the_dynamic_kernels_keep_autograd_s_values_and_their_five_graphs():
    """aot_eager: the dynamic graphs traced on through AOTAutograd, as Inductor takes them before it generates
    code: the second length runs on the first's five graphs, with autograd's values and gradients."""
    from torch._dynamo.utils import counters

    with fresh_dynamo():
        counters.clear()
        _score_steps(scores.compiled_kernels(True, backend="aot_eager"), LENGTHS)
        _loss_steps(gnmt_loss.compiled_kernels(True, backend="aot_eager"), LENGTHS)
        assert counters["stats"]["unique_graphs"] == 5


def test_the_symbols_are_the_batch_and_the_lengths_and_the_units_and_classes_stay_fixed():
    score_backend, loss_backend = Counting(), Counting()
    with fresh_dynamo():
        _score_steps(scores.compiled_kernels(True, backend=score_backend), LENGTHS[:1])
        _loss_steps(gnmt_loss.compiled_kernels(True, backend=loss_backend), LENGTHS[:1])
    q_and_k = [("8",), ("8",), ("s", "s", "8"), ("s", "s", "8")]  # bias and v (the units), q and k
    with_grad = sorted(q_and_k + [("s", "s", "s")])  # and the incoming gradient (batch, queries, keys)
    assert score_backend.graphs == [q_and_k, with_grad, with_grad]  # the scores, then their two reductions
    # logits (rows, classes), targets, then the backward's incoming scalar and row sums
    assert loss_backend.graphs == [[("s",), ("s", "11")], [(), ("s",), ("s",), ("s", "11")]]


def test_after_the_warm_up_neither_training_nor_the_beam_search_compiles(tmp_path):
    """The debug preset through the harness's warm-up, with every kernel compiled dynamic: its three synthetic
    batches make every graph; then batches of lengths they never had train, and the evaluation decodes one
    query at a time over another batch size, on those graphs."""
    cfg = _debug(tmp_path)
    spec = registry.get("gnmt")
    assert spec.task is not None
    run = build_run(cfg, context_for(cfg, data_dir=spec.task.prepare(cfg)))
    bench = run.task
    counted = Counting()
    seen = set()
    with fresh_dynamo():
        bench.model.decoder.attention.kernels = scores.compiled_kernels(True, backend=counted)
        bench._smoothed_loss = partial(gnmt_loss.fused_smoothed_loss, smoothing=0.1,
                                       kernels=gnmt_loss.compiled_kernels(True, backend=counted))
        warm_up(run)
        warmed = len(counted.graphs)
        for i, batch in enumerate(bench.train_batches(1)):
            seen.add((batch.src.shape[0], batch.tgt_in.shape[0]))
            loss, _ = bench.loss(run.trained, batch)
            loss.backward()
            if i == 5:
                break
        bench.model.eval()
        with torch.no_grad():
            bench.evaluate(bench.model, 1)
    # the scores and their two gradients at several queries and at one; one loss forward and backward
    assert warmed == 3 * 2 + 2 and sum(counted.symbolic()) == warmed
    assert len(seen - {(75, 74), (15, 14)}) >= 2  # lengths the warm-up never had
    assert len(counted.graphs) == warmed


def test_auto_is_dynamic_in_training_and_static_in_throughput():
    auto, static, dynamic_ = CompileShapes.auto, CompileShapes.static, CompileShapes.dynamic
    for shapes, training, dynamic in [(auto, True, True), (auto, False, False), (static, True, False),
                                      (dynamic_, False, True)]:
        options = GNMTOptions(name="gnmt", batch_size=4, compile_shapes=shapes)
        assert options.dynamic_shapes(training) is dynamic, (shapes, training)


def test_the_compiled_path_is_opt_in_for_training_and_warms_up_when_taken():
    default = compose(["model=gnmt"])
    resolve(default, cuda=True)
    assert (default.model.compile_attention, default.model.compile_loss, default.warm_up) == (False, False, False)
    assert default.model.compile_shapes == "auto"
    argv = ["model=gnmt", "model.compile_attention=true", "model.compile_loss=true"]
    opted = compose(argv)
    resolve(opted, cuda=True, given=argv)
    assert opted.warm_up is True and label(opted) == "amp+compile-attention+compile-loss"
    with pytest.raises(ConfigError, match="compile_shapes"):
        compose(["model=gnmt", "model.compile_shapes=symbolic"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GNMT compiles its kernels for a CUDA device")
def test_on_cuda_the_compiled_training_step_follows_the_eager_one_and_compiles_only_in_the_warm_up(tmp_path):
    """Inductor's kernels with symbolic lengths: in fp32 without dropout the losses of the first epoch's
    batches (many lengths) follow the eager step's within 1e-3, and after the warm-up neither those steps nor
    the evaluation compiles anything."""
    from torch._dynamo.utils import counters

    from harness.run.step import train_step

    def losses(*extra: str) -> tuple[list[float], int]:
        argv = ["model=gnmt", "+debug=gnmt", "seed=1", "device=cuda", "precision=fp32", "model.dropout=0",
                f"output_root={tmp_path / 'out'}", f"data_root={tmp_path / 'data'}", *extra]
        cfg = compose(argv)
        resolve(cfg, cuda=True, given=argv)
        OmegaConf.resolve(cfg)
        spec = registry.get("gnmt")
        assert spec.task is not None
        run = build_run(cfg, context_for(cfg, data_dir=spec.task.prepare(cfg)))
        if cfg.warm_up:
            warm_up(run)
        before = counters["stats"]["unique_graphs"]
        got = [float(train_step(run, batch)[0]) for batch, _ in run.feed.batches(run.task.train_batches(1), 8)]
        run.module.eval()
        with torch.no_grad():
            run.task.evaluate(run.module, 1)
        return got, counters["stats"]["unique_graphs"] - before

    torch._dynamo.reset()
    eager, _ = losses()
    fast, compiled_after_warm_up = losses("model.compile_attention=true", "model.compile_loss=true")
    torch._dynamo.reset()
    one_pass, compiled_after_warm_up_one_pass = losses("model.compile_attention=true", "model.compile_loss=true",
                                                       "model.attention_grads=one_pass")  # the Triton backward
    torch._dynamo.reset()
    assert fast == pytest.approx(eager, rel=1e-3)
    assert one_pass == pytest.approx(eager, rel=1e-3)
    assert (compiled_after_warm_up, compiled_after_warm_up_one_pass) == (0, 0)
