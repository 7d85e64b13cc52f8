import signal

import pytest

from harness.run.interrupts import Stopped, shielded, signal_name, signal_number, stop_on_sigterm


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


def test_sigterm_stops_a_run_as_ctrl_c_does_and_says_which_it_was():
    saved = signal.getsignal(signal.SIGTERM)
    try:
        stop_on_sigterm()
        with pytest.raises(KeyboardInterrupt) as caught:  # every Ctrl-C path handles it
            signal.raise_signal(signal.SIGTERM)
        assert isinstance(caught.value, Stopped)
        assert signal_name(caught.value) == "SIGTERM" and signal_number(caught.value) == signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, saved)
    assert signal_name(KeyboardInterrupt()) == "SIGINT" and signal_number(KeyboardInterrupt()) == 2
    assert signal_name(ValueError()) is None
