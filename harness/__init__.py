"""Time-to-accuracy harness: MLPerf reference models to their quality targets, with MLPerf logs.

    python -m harness.train model=ncf seed=1     train one run (conf/config.yaml lists the options)
    python -m harness.report outputs/            time-to-train, epochs and MLPerf scores
    python -m harness.check outputs/             the official MLPerf compliance checker
"""
__version__ = "0.1.0"

import sys as _sys

if _sys.argv[:1] == ["-m"]:  # python -m harness.<command>, while Python finds the command's module
    from harness.errors import ConfigError
    from harness.signals import command_start

    # a Ctrl-C, a SIGTERM or a ConfigError (HARNESS_MODELS' module cannot be imported, ...) that the command
    # does not handle itself: one line, no traceback
    command_start(usage_errors=(ConfigError,))
