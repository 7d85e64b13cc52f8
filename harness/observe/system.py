"""system.json: the machine a run ran on, in the field names of MLPerf's system description.

Written by rank 0 at the start of every run. Every field that MLPerf's system_desc_checker requires
is present (it checks presence); what the harness cannot see from inside the run (cooling, storage,
networking topology) is left empty for the submitter to fill. Fields MLPerf has no name for
(driver and CUDA versions, host, library versions, the host's load at the start) sit beside them with a `harness_` prefix.
The log's submission_platform comes from here: "<ranks>x<accelerator_model_name>", e.g.
"1xNVIDIA H200", unless mlperf.platform is set.

    python -m mlperf_logging.system_desc_checker RUN_DIR/system.json training 0.7.0
"""
from __future__ import annotations

import json
import os
import platform
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    import torch

# config's mlperf.status -> the availability words of MLPerf's system descriptions
AVAILABILITY = {"onprem": "Available on-premise", "cloud": "Available cloud",
                "preview": "Preview", "research": "Research, Development, or Internal (RDI)"}


def describe(*, org: str, division: str, status: str, nodes: int, ranks_per_node: int,
             device: torch.device, versions: dict[str, Optional[str]],
             host_load: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    import torch  # here, not at the top: harness.bench reads cpu_model() and torch_files() without starting torch

    cuda = device.type == "cuda"
    gpu_name = torch.cuda.get_device_name(device) if cuda else "CPU"
    gpu_mem = torch.cuda.get_device_properties(device).total_memory if cuda else None
    driver = nvml_driver() if cuda else None
    cores, memory = os.cpu_count(), host_memory_bytes()
    mlperf_fields = {
        "submitter": org,
        "division": division,
        "status": AVAILABILITY.get(status, status),
        "system_name": f"{nodes * ranks_per_node}x{gpu_name}",
        "number_of_nodes": nodes,
        "host_processors_per_node": "",
        "host_processor_model_name": cpu_model(),
        "host_processor_core_count": "",
        "host_processor_vcpu_count": cores,
        "host_processor_frequency": "",
        "host_processor_caches": "",
        "host_processor_interconnect": "",
        "host_memory_capacity": f"{memory / 2**30:.0f} GiB" if memory else "",
        "host_storage_type": "",
        "host_storage_capacity": "",
        "host_networking": "",
        "host_networking_topology": "",
        "host_memory_configuration": "",
        "accelerators_per_node": ranks_per_node if cuda else 0,
        "accelerator_model_name": gpu_name,
        "accelerator_host_interconnect": "",
        "accelerator_frequency": "",
        "accelerator_on-chip_memories": "",
        "accelerator_memory_configuration": "",
        "accelerator_memory_capacity": f"{gpu_mem / 2**30:.0f} GiB" if gpu_mem else "",
        "accelerator_interconnect": "",
        "accelerator_interconnect_topology": "",
        "cooling": "",
        "hw_notes": "",
        "framework": f"PyTorch {torch.__version__}",
        "other_software_stack": ", ".join(f"{k} {v}" for k, v in versions.items() if v and k != "torch"),
        "operating_system": platform.platform(),
        "sw_notes": "",
    }
    return {
        # MLPerf's system descriptions hold text throughout ("number_of_nodes": "1"), as its checker expects
        **{k: "" if v is None else str(v) for k, v in mlperf_fields.items()},
        "harness_host": socket.gethostname(),
        "harness_ranks_per_node": ranks_per_node,
        "harness_cuda_version": torch.version.cuda if cuda else None,
        "harness_cudnn_version": torch.backends.cudnn.version() if cuda else None,
        "harness_driver_version": driver,
        "harness_python": platform.python_version(),
        "harness_versions": versions,
        # how busy the machine was as the run started (harness/observe/host_load.py)
        "harness_host_load": host_load,
    }


def platform_name(description: dict[str, Any], world_size: int) -> str:
    return f"{world_size}x{description['accelerator_model_name']}"


def write(description: dict[str, Any], path: Path) -> None:
    from harness.files import write_atomic

    write_atomic(path, json.dumps(description, indent=2) + "\n")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_memory_bytes() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def nvml_driver() -> Optional[str]:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML here: the driver stays unknown
        return None


def torch_files() -> Optional[dict[str, Optional[str]]]:
    """{"torch": torch.__version__, "cuda": torch.version.cuda} read from torch's files, where torch could
    see no GPU (a build without CUDA or ROCm, or no CUDA driver on this host: torch.cuda.is_available() is
    False either way); None where it might, and torch has to be asked. Starting torch to learn this costs
    harness.bench 1.5 s of CPU on a CPU-only host."""
    import ast
    import ctypes
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    try:
        tree = ast.parse((Path(spec.origin).parent / "version.py").read_text())
    except (OSError, SyntaxError):
        return None
    found: dict[str, Any] = {}
    for node in tree.body:  # `__version__ = '2.14.1+cu130'`, `cuda: Optional[str] = '13.0'`, ...
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            found[target.id] = value.value
    if not isinstance(found.get("__version__"), str) or found.get("hip") is not None:
        return None
    if found.get("cuda") is not None:
        try:
            ctypes.CDLL("libcuda.so.1")  # the driver's library: torch might see a GPU
            return None
        except OSError:
            pass
    return {"torch": found["__version__"], "cuda": found.get("cuda")}
