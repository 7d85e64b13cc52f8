"""hydra/launcher=slurm (conf/hydra/launcher/slurm.yaml): hydra-submitit-launcher's SLURM launcher
with the harness's rules (harness/run/slurm.py). Hydra accepts launchers from the hydra_plugins
namespace only, and imports every module there at start: this one stays small, and quiet where
hydra-submitit-launcher is not installed (pip install -e '.[slurm]').

    python -m harness.train -m hydra/launcher=slurm model=ncf device=cpu gpus=2 'seed=1,2'
"""
# First, before anything of the task's pickle loads torch: a submitit task's thread policy.
from harness.run import slurm

from typing import Any, Sequence  # noqa: E402

from hydra.core.utils import JobReturn  # noqa: E402

try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurm
except ImportError:  # without the [slurm] extra there is no hydra/launcher=slurm either
    _SubmititSlurm = None

if _SubmititSlurm is not None:

    class SlurmLauncher(_SubmititSlurm):
        def setup(self, **kwargs: Any) -> None:
            """In the submitting process: the request fitted to the partition, or a one-line error."""
            super().setup(**kwargs)
            slurm.fit_request(self.config, self.params)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            """In each task: SLURM's stopping signals end the run as Ctrl-C does, its record kept."""
            slurm.stop_on_slurm_signals()
            try:
                return super().__call__(*args, **kwargs)
            except KeyboardInterrupt as err:
                return slurm.stopped(err)

        def checkpoint(self, *args: Any, **kwargs: Any) -> None:
            """Never requeued after pre-emption or a time limit: the run would start its clock again."""
            return None

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            return slurm.run_array(self, job_overrides, initial_job_idx)
