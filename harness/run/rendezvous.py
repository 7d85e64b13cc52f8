"""The rendezvous endpoint the harness hands torch's elastic launcher (`rdzv_endpoint=HOST:PORT`), checked
before any rank starts. A host name that does not resolve held the run for minutes inside torch.distributed's
c10d rendezvous, retrying, before it ended in a C++ trace; here it is one line naming the host.

    python -c "from harness.run.rendezvous import check_endpoint; check_endpoint('no-such-host.invalid:29400')"
"""
from __future__ import annotations

import socket

from harness.errors import ConfigError

OPTION = "rdzv_endpoint"


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """(host, port) of HOST:PORT as torch's launcher reads it (its parse_rendezvous_endpoint): the last colon
    parts them, and an IPv6 address may stand in brackets ([::1]:29400)."""
    host, _, port = endpoint.strip().rpartition(":")
    if len(host) > 1 and host[0] == "[" and host[-1] == "]":
        host = host[1:-1]
    if not host or not port.isdigit():
        raise ConfigError(f"{OPTION}={endpoint}: need HOST:PORT, such as {OPTION}=192.0.2.1:29400")
    if int(port) > 65535:
        raise ConfigError(f"{OPTION}={endpoint}: port {port} is out of range; need a port from 0 to 65535")
    return host, int(port)


def check_endpoint(endpoint: str) -> None:
    """Refuse, in one line (ConfigError), an endpoint whose host does not resolve on this host; an address
    (IPv4 or IPv6) and `localhost` resolve without asking a name server."""
    host, port = split_endpoint(endpoint)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as err:  # socket.gaierror; UnicodeError: a label IDNA cannot encode ("a..b")
        reason = getattr(err, "strerror", None) or str(err)
        raise ConfigError(f"{OPTION}={endpoint}: the rendezvous host {host!r} does not resolve on this host ({reason}); "
                          f"set {OPTION} to its IP address ({OPTION}=ADDRESS:{port}) or to a name that every node "
                          "resolves") from None
