"""harness/run/rendezvous.py: the host of `rdzv_endpoint` resolves before any rank starts. One that does not
held a multi-node run for minutes inside torch's c10d rendezvous before a C++ trace; now it is one line,
exit status 2 and nothing written."""
from __future__ import annotations

import re
import socket

import pytest

from harness.config import ConfigError, compose
from harness.run.launch import check_resources
from harness.run.rendezvous import check_endpoint, split_endpoint
from tests.helpers import run_cli, said

NOWHERE = "no-such-host.invalid"  # RFC 6761: a name under .invalid never resolves


def _refusal(host: str, endpoint: str) -> str:
    return (rf"rdzv_endpoint={re.escape(endpoint)}: the rendezvous host '{re.escape(host)}' does not resolve on this "
            r"host \(.+\); set rdzv_endpoint to its IP address \(rdzv_endpoint=ADDRESS:29400\) or to a name that every "
            r"node resolves")


@pytest.mark.parametrize("endpoint, host", [("127.0.0.1:29400", "127.0.0.1"), ("localhost:29400", "localhost"),
                                            ("10.1.2.3:29400", "10.1.2.3")])
def test_an_address_and_localhost_pass_and_are_looked_up_with_the_port(endpoint, host, monkeypatch):
    asked = []
    real = socket.getaddrinfo

    def seen(*args, **kwargs):
        asked.append(args[:2])
        return real(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", seen)
    check_endpoint(endpoint)
    assert asked == [(host, 29400)]


def test_the_endpoint_splits_as_torchs_launcher_reads_it():
    assert split_endpoint("node0.cluster:29400") == ("node0.cluster", 29400)
    assert split_endpoint("[::1]:29400") == ("::1", 29400)  # an IPv6 address in brackets
    with pytest.raises(ConfigError, match=r"^rdzv_endpoint=node0:99999: port 99999 is out of range; need a port from 0 to 65535$"):
        split_endpoint("node0:99999")


def test_a_name_that_does_not_resolve_is_one_line_naming_it():
    with pytest.raises(ConfigError) as caught:
        check_endpoint(f"{NOWHERE}:29400")
    assert re.fullmatch(_refusal(NOWHERE, f"{NOWHERE}:29400"), str(caught.value)), str(caught.value)


def test_only_the_endpoint_the_launcher_is_handed_is_resolved():
    several = ["model=ncf", "device=cpu", "nodes=2", f"rdzv_endpoint={NOWHERE}:29400", "run_id=r1"]
    with pytest.raises(ConfigError, match=re.escape(f"the rendezvous host '{NOWHERE}' does not resolve")):
        check_resources(compose(several))
    # one rank runs in this process, with no rendezvous: the option is not used
    check_resources(compose(["model=ncf", "device=cpu", f"rdzv_endpoint={NOWHERE}:29400"]))
    check_resources(compose(["model=ncf", "device=cpu", "nodes=2", "rdzv_endpoint=127.0.0.1:29400", "run_id=r1"]))


def test_a_multi_node_run_whose_rendezvous_host_does_not_resolve_exits_2_in_one_line_writing_nothing(tmp_path):
    endpoint = f"{NOWHERE}:29400"
    out = run_cli("harness.train", "model=ncf", "device=cpu", "nodes=2", f"rdzv_endpoint={endpoint}", "run_id=r1",
                  "seed=1", "output_root=out", "data_root=data", cwd=tmp_path, timeout=120)
    assert out.returncode == 2, out.stderr
    (line,) = said(out.stderr)
    assert re.fullmatch("harness.train: error: " + _refusal(NOWHERE, endpoint), line), line
    assert list(tmp_path.iterdir()) == []  # no run folder, no dataset, no sweep folder
