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
elif __import__("os").environ.get("HARNESS_RANK_STARTING") == "1":
    # A rank the elastic launcher spawns imports the harness first, for a while (torch, the model): a terminal's
    # Ctrl-C reaches it too, and raised inside those imports printed a traceback per rank before the run's one
    # line. The launcher stops its ranks itself; the rank takes Ctrl-C again once it runs (launch._rank_main).
    import signal as _signal

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
