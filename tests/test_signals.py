import signal
import subprocess
import sys

import pytest

from harness.signals import Stopped, shielded, signal_name, signal_number, stop_on_sigterm
from tests.helpers import REPO, child_env


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
    saved, hook = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    try:
        stop_on_sigterm()
        with pytest.raises(KeyboardInterrupt) as caught:  # every Ctrl-C path handles it
            signal.raise_signal(signal.SIGTERM)
        assert isinstance(caught.value, Stopped)
        assert signal_name(caught.value) == "SIGTERM" and signal_number(caught.value) == signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, saved)
        sys.unraisablehook = hook
    assert signal_name(KeyboardInterrupt()) == "SIGINT" and signal_number(KeyboardInterrupt()) == 2
    assert signal_name(ValueError()) is None


def test_the_launcher_s_sigterm_after_a_ctrl_c_leaves_the_ctrl_c_to_end_the_run():
    # a terminal's Ctrl-C reaches every rank, and the elastic agent (or torchrun) answers it with SIGTERM a
    # moment later: landing in a finally on the way out, it replaced the KeyboardInterrupt, and the rank's
    # run_stop said SIGTERM where result.json said SIGINT
    saved, hook = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    try:
        stop_on_sigterm()
        with pytest.raises(KeyboardInterrupt) as caught:
            try:
                raise KeyboardInterrupt
            finally:
                signal.raise_signal(signal.SIGTERM)  # handled here, while the Ctrl-C unwinds
        assert not isinstance(caught.value, Stopped) and signal_name(caught.value) == "SIGINT"
        with pytest.raises(Stopped):  # with nothing unwinding, SIGTERM stops the run as before
            signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, saved)
        sys.unraisablehook = hook


# A signal's exception that Python cannot raise where it lands (inside a weakref callback, as importlib's
# module-lock callback is while a module is imported) is printed as "Exception ignored" and dropped.
SWALLOWED = """
import sys, time, weakref
from harness.signals import Stopped, stop_on_sigterm
stop_on_sigterm()
class Obj: pass
def callback(_):
    raise {error}
obj = Obj(); ref = weakref.ref(obj, callback)
try:
    del obj
    time.sleep(5)
    print("went on")
except KeyboardInterrupt as err:
    print("stopped by", getattr(err, "signal_name", "SIGINT"))
"""


@pytest.mark.parametrize("error, name", [("KeyboardInterrupt", "SIGINT"), ("Stopped('SIGTERM')", "SIGTERM")])
def test_ctrl_c_or_sigterm_swallowed_by_a_callback_still_stops_the_run(error, name):
    out = subprocess.run([sys.executable, "-c", SWALLOWED.format(error=error)], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == f"stopped by {name}", out.stderr
    assert "Exception ignored" not in out.stderr


@pytest.mark.parametrize("command, signum, line", [
    (["harness.sweep", "model=ncf", "runs=3"], signal.SIGTERM, "harness.sweep: stopped by SIGTERM"),
    (["harness.check", "nowhere"], signal.SIGINT, "harness.check: interrupted"),
])
def test_a_signal_while_a_command_starts_ends_it_in_one_line_as_the_signal_ends_a_process(tmp_path, command, signum,
                                                                                           line):
    from tests.helpers import child_env

    # -X importtime: a line as each import ends; the signal lands once the harness package is in
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", *command], cwd=tmp_path, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for said in proc.stderr:
        seen.append(said)
        if said.rstrip().endswith("| harness"):
            proc.send_signal(signum)
            break
    _, rest = proc.communicate(timeout=60)
    err = [s for s in [*seen, *rest.splitlines(keepends=True)] if not s.startswith("import time:")]
    assert [s.rstrip("\n") for s in err] == [line] and proc.returncode == -signum
    assert list(tmp_path.iterdir()) == []


SPAWN_PROBE = """
import multiprocessing as mp, os, signal, time
from harness.signals import spawning_ranks, take_ctrl_c

def rank(interrupted):
    if interrupted:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, or the launcher stopping it, in the rank's first moments
    time.sleep(0.2)
    print("rank still running", flush=True)  # held
    try:
        take_ctrl_c()  # ... and raised here, where the rank's own code handles it
        print("rank ran on", flush=True)
    except KeyboardInterrupt:
        print("rank: held KeyboardInterrupt", flush=True)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt:
        print("rank: KeyboardInterrupt", flush=True)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    with spawning_ranks():
        ctx.SimpleQueue()  # as torch's elastic agent does before its spawn: multiprocessing's resource tracker starts
        for interrupted in (True, False):
            child = ctx.Process(target=rank, args=(interrupted,))
            child.start()
            child.join()
            print("rank exit code", child.exitcode, flush=True)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            print("launcher: KeyboardInterrupt", flush=True)
"""


def test_a_rank_spawned_by_the_launcher_is_stopped_by_a_ctrl_c_held_from_its_start_and_the_launcher_still_is(
        tmp_path):
    """A rank's Ctrl-C before it runs its first line (Python's start-up, its imports) printed its traceback;
    held from its spawn, it stops the rank once the rank runs (KeyboardInterrupt from take_ctrl_c), with
    nothing printed before. That is also how the launcher stops ranks that are still starting: when the
    held signal was dropped, such a rank trained on while the launcher waited 30 s to kill it. A rank not
    interrupted runs on; Ctrl-C stops either once it runs; and the launcher, which holds Ctrl-C in its
    spawning thread all the while, still stops on it."""
    (tmp_path / "probe.py").write_text(SPAWN_PROBE)
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py")], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == [
        "rank still running", "rank: held KeyboardInterrupt", "rank: KeyboardInterrupt", "rank exit code 0",
        "rank still running", "rank ran on", "rank: KeyboardInterrupt", "rank exit code 0",
        "launcher: KeyboardInterrupt"], done.stdout + done.stderr
