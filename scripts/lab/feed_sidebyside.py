"""The input pipelines of two trees side by side in one process: the previous implementation (a copy
of main's tree) and this one, each model's two measurements one after the other at the same workload.

    python scripts/lab/feed_sidebyside.py OUT --base .lab/base --data /tmp/feed_data resnet ssd ncf gnmt
    python scripts/lab/feed_sidebyside.py OUT --data /tmp/feed_data --prepare ncf gnmt   # their data only
    python scripts/lab/feed_sidebyside.py OUT --base /tmp/base --data /tmp/d --smoke ncf gnmt  # CPU check

Each measurement is scripts/lab/pipeline_bench.py's (that tree's own copy, called in this process):
the loader alone, training on the files, and the same steps replayed on the window's batches held on
the device (synthetic), after warm-up, inside epochs. One process for all of them, so torch, CUDA and
nvImageCodec start once: between two measurements the project's modules (harness, reference_models,
scripts, and Hydra, whose config store is a singleton) are dropped from sys.modules and the other
tree is put first on sys.path. Models run in the order given, base then this tree; a model is
skipped whole (both trees) when fewer seconds remain before --deadline than it needs, so what comes
back always compares like with like. After every measurement OUT/feed_sidebyside.md and .json are
rewritten: a call cut short still returns what it measured.

The datasets come from scripts/lab/pipeline_datasets.py (ImageNet- and COCO-size images, written by
feed_sidebyside.sh before this starts) and, for NCF and GNMT, from their models' own generators
(--prepare, run beside the image writers).
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROJECT = ("harness", "reference_models", "scripts", "hydra")


def workloads(data: Path, smoke: bool) -> dict[str, tuple[list[str], list[str], float]]:
    """name -> (harness overrides, pipeline_bench options, seconds both measurements need on an H200)."""
    if smoke:  # the CPU: the debug presets, a few steps; checks the mechanics, measures nothing
        return {
            "resnet": (["model=resnet", "+debug=resnet", f"data_root={data}", "model.workers=1"],
                       ["--warmup", "1", "--steps", "2", "--skip", "1"], 1.0),
            "ncf": (["model=ncf", "+debug=ncf", f"data_root={data}"], ["--warmup", "1", "--steps", "2", "--skip", "1"],
                    1.0),
            "gnmt": (["model=gnmt", "+debug=gnmt", f"data_root={data}"], ["--warmup", "1", "--steps", "2", "--skip",
                                                                            "1"], 1.0),
            "ssd": (["model=ssd", "+debug=ssd", f"data_root={data}", "model.workers=1"],
                    ["--warmup", "1", "--steps", "2", "--skip", "1"], 1.0),
        }
    return {
        # ResNet-50 at batch 256, the hardware decoder (what auto picks on an H200), no compile: its
        # minute of compiling does not fit the call; 1,800 JPEGs of 500x375: 7 batches an epoch
        "resnet": (["model=resnet", "dataset=imagenet", f"dataset.path={data}/inet500", "model.num_classes=1000",
                    "precision=amp", "model.channels_last=true", "model.compile=false", "model.batch_size=256",
                    "model.workers=12", "model.decode=nvimgcodec"],
                   ["--warmup", "3", "--steps", "12", "--skip", "1", "--target", "0.95"], 13.0),
        # SSD300 at batch 128 on the workers' decode (auto's choice for SSD), 384 COCO-size images:
        # 3 batches an epoch (each image takes the generator 0.15 s of a core: more do not fit the call)
        "ssd": (["model=ssd", "dataset=ssd_coco2017", f"dataset.path={data}/coco640", "precision=amp",
                 "model.channels_last=true", "model.batch_size=128", "model.workers=15", "model.decode=cpu"],
                ["--warmup", "2", "--steps", "4", "--skip", "1", "--target", "0.9"], 10.0),
        # NCF at batch 2^18 on an ml-20m-format file of 3,000 users (about 9 steps an epoch; its generation fits the call)
        "ncf": (["model=ncf", "dataset=ml20m_generated", f"dataset.path={data}/ncf", "dataset.generator.users=3000",
                 "model.batch_size=262144", "precision=amp", "master_weights=true"],
                ["--warmup", "2", "--steps", "6", "--skip", "1", "--target", "0.97"], 6.0),
        # GNMT at hidden 1024, batch 512 on the embedded corpus (about 35 steps an epoch)
        "gnmt": (["model=gnmt", "dataset=gnmt_embedded", f"data_root={data}", "model.hidden_size=1024",
                  "model.batch_size=512", "precision=amp"],
                 ["--warmup", "3", "--steps", "12", "--skip", "2", "--target", "0.97"], 9.0),
    }


def use_tree(tree: Path) -> Any:
    """This tree's pipeline_bench module, the other tree's project modules forgotten."""
    for name in list(sys.modules):
        if name.split(".")[0] in PROJECT or name.startswith("_feed_bench"):
            del sys.modules[name]
    roots = {str(REPO), str(REPO / "scripts" / "lab"), "", "."}
    sys.path[:] = [p for p in sys.path if str(Path(p).resolve()) not in roots and p not in roots]
    sys.path.insert(0, str(tree))
    spec = importlib.util.spec_from_file_location(f"_feed_bench_{abs(hash(str(tree)))}",
                                                  tree / "scripts" / "lab" / "pipeline_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # inserts its own tree at sys.path[0] too
    return module


def prepare(names: list[str], data: Path, smoke: bool) -> None:
    """NCF's and GNMT's generated data (and NCF's preprocessed cache), as their first build would make them."""
    use_tree(REPO)
    from omegaconf import OmegaConf

    from harness import registry
    from harness.config import compose

    for name in names:
        if name not in ("ncf", "gnmt"):
            continue
        overrides = workloads(data, smoke)[name][0]
        cfg = compose(["mode=train", "seed=1", *overrides])
        OmegaConf.resolve(cfg)
        spec = registry.get(name)
        assert spec.task is not None
        path = spec.task.prepare(cfg)
        if name == "ncf":
            from reference_models.ncf import data as ncf_data

            ncf_data.load(path)  # writes the cache beside ratings.csv
        print(f"{name}: {path}")


def row(model: str, tree: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"| {model} | {tree} | {r['error']} | | | | |"
    unit = r["unit"]
    return (f"| {model} | {tree} | {r['loader']:,.0f} {unit}/s | {r['real']:,.0f} | {r['synthetic']:,.0f} | "
            f"**{r['real_over_synthetic']:.3f}** | {r['data_wait_share']:.1%} |")


def write(out: Path, results: list[dict[str, Any]], started: str, argv: list[str]) -> None:
    lines = [f"# Input pipelines, main (.lab/base) against this tree, {started}", "",
             "    python " + " ".join(["scripts/lab/feed_sidebyside.py", *argv]), "",
             "| model | tree | loader alone | training on files | synthetic step | real / synthetic | data wait |",
             "|---|---|---|---|---|---|---|"]
    lines += [row(r["name"], r["tree"], r) for r in results]
    for r in results:
        if r.get("skipped"):
            lines.append(f"\n{r['name']}: {r['skipped']}")
    settings: dict[str, list[str]] = {r["name"]: list(r["overrides"]) for r in results if r.get("overrides")}
    lines += ["", "Settings:", *[f"- {k}: `{' '.join(v)}`" for k, v in settings.items()]]
    (out / "feed_sidebyside.md").write_text("\n".join(lines) + "\n")
    (out / "feed_sidebyside.json").write_text(json.dumps(results, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("models", nargs="+", choices=("resnet", "ssd", "ncf", "gnmt"))
    parser.add_argument("--base", default=str(REPO / ".lab" / "base"), help="the previous implementation's tree")
    parser.add_argument("--data", default="/tmp/feed_data")
    parser.add_argument("--deadline", type=float, default=1e9, help="seconds (from --t0) after which nothing starts")
    parser.add_argument("--t0", type=float, default=None, help="the call's start, time.time() (default: now)")
    parser.add_argument("--prepare", action="store_true", help="generate NCF's and GNMT's data and stop")
    parser.add_argument("--smoke", action="store_true", help="the debug presets on the CPU: the mechanics only")
    parser.add_argument("--wait-for", nargs="*", default=[], help="files whose appearance says a dataset is "
                        "written (torch and CUDA start meanwhile); a model whose file has not appeared by its turn "
                        "is skipped")
    args = parser.parse_args()
    data, out = Path(args.data), Path(args.out)
    if args.prepare:
        prepare(args.models, data, args.smoke)
        return
    out.mkdir(parents=True, exist_ok=True)
    t0 = args.t0 if args.t0 is not None else time.time()
    import torch  # started while the datasets are written

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")  # the CUDA context, once for every measurement
    trees = {"main": Path(args.base).resolve(), "this tree": REPO}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results: list[dict[str, Any]] = []
    table = workloads(data, args.smoke)
    for name in args.models:
        overrides, options, needs = table[name]
        marker = {"resnet": "inet500", "ssd": "coco640", "ncf": "ncf", "gnmt": "gnmt"}[name]
        waiting = [Path(f) for f in args.wait_for if marker in f]
        while any(not f.exists() for f in waiting) and args.deadline - (time.time() - t0) > needs:
            time.sleep(0.1)
        left = args.deadline - (time.time() - t0)
        missing = [str(f) for f in waiting if not f.exists()]
        if missing or left < needs:
            why = (f"its data was not written in time ({', '.join(missing)} missing)" if missing else
                   f"{left:.0f} s left of the call's {args.deadline:.0f}, it needs about {needs:.0f}")
            results.append({"name": name, "tree": "-", "error": "not run", "skipped": f"not run: {why}"})
            write(out, results, started, sys.argv[1:])
            continue
        for tree_name, tree in trees.items():
            began = time.time()
            try:
                bench = use_tree(tree)
                result = bench.main([*overrides, *options, "--label", f"{name} ({tree_name})"], script="feed_sidebyside")
            except BaseException as err:  # noqa: BLE001 - one failed measurement is a row, not the end of the call
                if isinstance(err, KeyboardInterrupt):
                    raise
                result = {"error": f"failed: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"}
            imported = getattr(sys.modules.get("reference_models"), "__file__", None) or ""
            if Path(imported).resolve() != tree / "reference_models" / "__init__.py":  # the other tree's modules came through
                result = {"error": f"measured {imported}, not {tree}"}
            result.update(name=name, tree=tree_name, overrides=overrides, seconds=time.time() - began,
                          modules=imported)
            results.append(result)
            write(out, results, started, sys.argv[1:])
            gc.collect()  # the run's loader workers and device memory go before the next one starts
            if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
                sys.modules["torch"].cuda.empty_cache()
    print((out / "feed_sidebyside.md").read_text())


if __name__ == "__main__":
    main()
