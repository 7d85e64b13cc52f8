import signal

import pytest

from harness.run.interrupts import shielded


def test_a_signal_inside_the_block_waits_until_the_block_is_done():
    written = []
    with pytest.raises(KeyboardInterrupt):
        with shielded():
            signal.raise_signal(signal.SIGINT)
            written.append("run_stop")  # still reached: the closing line gets written
    assert written == ["run_stop"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_during_unwinding_does_not_replace_the_error_on_its_way_out():
    with pytest.raises(ValueError):
        with shielded():
            signal.raise_signal(signal.SIGINT)
            raise ValueError("the run's own error")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
