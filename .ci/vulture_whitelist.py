"""Names vulture (the dead-code check in .ci/run) takes for unused that are used where it cannot see.

Each is grouped by why; a name listed here is whitelisted wherever it occurs, so list only names that
are used. Run the check: vulture (paths and confidence in pyproject.toml's [tool.vulture])."""
from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# dataclass fields written to JSON whole (asdict: result.json, the report's JSON), never read by name
_.started_at
_.mlperf_log
_.check_reason
_.stopped_by
_.a_key
_.b_key
_.schema  # result.json's schema version
_.peak_tflops  # result.json: the GPU peak MFU is measured against, and its source
_.peak_source
_.warm_up_s  # result.json: the seconds of init_time_s the warm-up before run_start took
# option and config fields read by name from the composed Hydra config, and enum members chosen by name
_.throughput_window_s
_.onprem
_.cloud
_.preview
_.bf16
_.lars
_.pretrain128
_.pretrain512
_.basic
# a model's Benchmark class, named by its SPEC as a string (lazy("reference_models.<m>.benchmark:<M>Benchmark"))
# and imported by the first build; the conformance test resolves each (tests/test_conformance.py)
_.BertBenchmark
_.DLRMBenchmark
_.GNMTBenchmark
_.MaskRCNNBenchmark
_.NCFBenchmark
_.ResNetBenchmark
_.RetinaNetBenchmark
_.SSDBenchmark
_.Tacotron2Benchmark
_.TransformerBenchmark
_.TXLBenchmark
_.WaveGlowBenchmark
# switches set on torch and torchvision (torch.backends, torch._dynamo.config) and a module's layers,
# read by the library
_.allow_tf32
_.suppress_errors
_.mod_tracker  # FlopCounterMode's, replaced by the total-only count (harness/run/flops.py)
_._norm_layer
_.base_width
_.dilation
_.avgpool
_.compute_loss  # torchvision's RegionProposalNetwork calls it
_.get_lr  # an LRScheduler's rates, which its step calls (the DLRM reference's scheduler, ported in a test)
# a Hydra plugin, which Hydra finds by its base class and calls
_.ModelPresets
_.manipulate_search_path
# protocol signatures: submitit's checkpoint, a DataLoader's worker_init_fn, __exit__'s arguments
_.checkpoint
_.worker_id
_.exc
# tests: pytest's module marks, and fakes of NVML and of the GradScaler read by the code under test
_.pytestmark
_.sensor
_.nvmlDeviceGetClockInfo
_.nvmlDeviceGetCurrentClocksEventReasons
_.nvmlDeviceGetMemoryInfo
_.nvmlDeviceGetPowerUsage
_.nvmlDeviceGetTemperature
_.nvmlDeviceGetTotalEnergyConsumption
_.nvmlDeviceGetUtilizationRates
_.found_inf
_.grad_scale
_.submission_runs
_.tolerance

# pytest fixtures used by name (autouse: never named)
_._published_registry
_._no_run_outlives_its_test
_._fresh_rows
# pytest hooks, called by pytest by their names
_.pytest_collection_modifyitems
