# Source on an H200 machine of the device tool, in the repository root, with .whl/ carried along
# (scripts/lab/device_wheels.sh fills it): installs the carried wheels into /tmp/site and sets the
# environment every command there needs.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
# NVLink multicast stays off: a program using it can take the host's shared GPUs out of service
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
