"""A stand-in whose declared fast path cannot work: it asks for its step to be captured in a CUDA graph,
and its loss reads a value on the host, which a capture refuses. Its run and its bench cell must fall
back to the eager step in one line and succeed.

    HARNESS_MODELS=tests.models.syncing python -m harness.bench --models syncing --precisions fp32 --gpus 1
"""
from __future__ import annotations

from harness.interface import FastPath, ModelSpec, SuiteEntry
from tests.models.tputonly import TputOnly, TputOptions


class Syncing(TputOnly):
    def loss(self, model, batch):
        loss, n = super().loss(model, batch)
        if loss.item() < 0:  # a host read inside the step: a sync no CUDA graph can hold
            raise AssertionError("a mean of squares is never negative")
        return loss, n


SPEC = ModelSpec(name="syncing", options=TputOptions, sample_unit="samples", build=Syncing,
                 summary="test stand-in: a fast path (CUDA graph) its step cannot take",
                 suite=SuiteEntry(step_s=(0.01, 0.01)), fast=FastPath(cuda_graph=True))
