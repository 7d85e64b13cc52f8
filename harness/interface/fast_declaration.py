"""The fastest path a model has been measured to train correctly on a GPU, declared next to the model.

On a fast GPU an eager step of a small-kernel model is bound by Python and kernel launches, and a
table of such steps measures the host (amp "slower" than tf32). Each model names, in its ModelSpec,
the path that measured fastest on an H200 while its losses followed the eager step's: its own options
that turn torch.compile on (and its mode), and whether mode=throughput's forward and backward are
captured once in a CUDA graph and replayed (harness/run/graph.py). On CUDA the harness takes it by
default (harness/fastpath.py), falls back to the eager step in one line when it cannot, and names the
path that ran in every record ("amp+graph", "amp+compile(reduce-overhead)", "amp+master+graph"); `eager=true` gives the
plain eager step that published eager tables measure.

    python -c "from harness import registry; print([(s.name, s.fast) for s in registry.models()])"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class FastPath:
    """A model's measured fast path on CUDA; the default FastPath() is the eager step."""

    # "key=value" of the model's own options (model.<key>), e.g. "compile=true"; one that the model's
    # relations refuse beside the command line's options is left out of that run (harness/fastpath.py)
    options: tuple[str, ...] = ()
    # mode=train's options, written as `options`: None, the same as mode=throughput's (a step of static
    # shapes); a tuple, those alone, for a model whose training batches come in many shapes, where a
    # compiled step recompiles and a graph cannot replay (() keeps the eager step as written)
    train_options: Optional[tuple[str, ...]] = None
    cuda_graph: bool = False  # mode=throughput, one GPU: forward and backward replayed from a CUDA graph
    # mode=train, one GPU: each training batch copied into the inputs of a graph captured on an early one and
    # replayed (harness/run/graph.py's GraphedTraining), for a model whose batches keep one shape
    train_graph: bool = False
    # mode=throughput with amp or bf16: the weights themselves in the autocast dtype, fp32 copies in the
    # optimizer (harness/run/master_weights.py), as MLPerf's fp16 references kept them; mode=train keeps
    # the fp32 weights its embedded presets were calibrated with
    master_weights: bool = False
    measured: str = ""  # where the side-by-side measurement that chose it is written down

    def __post_init__(self) -> None:
        for item in (*self.options, *(self.train_options or ())):
            key, sep, value = item.partition("=")
            if not sep or not key or not value or "." in key:
                raise ValueError(f"FastPath.options item {item!r}: write it as key=value of one of the model's "
                                 "own options (compile=true)")

    @property
    def eager(self) -> bool:
        """The model declares no fast path: its step runs as written."""
        return (not self.options and not self.train_options and not self.cuda_graph and not self.train_graph
                and not self.master_weights)

    def settings(self, train: bool = False) -> dict[str, str]:
        """The options of mode=throughput, or of mode=train (`train`), as {key: value text}."""
        items = self.options if not train or self.train_options is None else self.train_options
        return dict(item.split("=", 1) for item in items)  # type: ignore[misc]
