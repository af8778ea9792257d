"""What every test of the server gets."""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.study_server import people


@pytest.fixture(autouse=True)
def no_player_outlives_its_test():
    """Close the players a test left open (one whose server was killed goes on
    reconnecting otherwise, for the rest of the run)."""
    yield
    while people.LIVE:
        people.LIVE[-1].close()


@contextmanager
def own_filesystem(folder: Path, size: str = "16m") -> Iterator[Path]:
    """``folder`` made a filesystem of its own (tmpfs) for the block, so that a test can
    fill it or mount it read-only for real (as root, as ``make test`` runs); where
    ``mount`` is not allowed the test fails and says so."""
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if made.returncode:
        pytest.fail(f"this case needs a filesystem of its own (mount -t tmpfs, as root): "
                    f"{made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def remount(folder: Path, *options: str) -> None:
    """Mount :func:`own_filesystem`'s ``folder`` again with ``options`` (``ro``)."""
    subprocess.run(["mount", "-o", ",".join(("remount", *options)), str(folder)], check=True,
                   capture_output=True)


def outside_address() -> str:
    """An IPv4 address of this machine that is not a loopback one: the server limits
    connections from such addresses (its own machine's are not). Read from the kernel
    (``SIOCGIFADDR`` on each interface), since a minimal Debian has no ``ip`` command."""
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                answer = fcntl.ioctl(probe.fileno(), SIOCGIFADDR,
                                     struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without an IPv4 address
                continue
        address = socket.inet_ntoa(answer[20:24])
        if not ipaddress.ip_address(address).is_loopback:
            return address
    pytest.fail("this case connects from an address of this machine other than loopback, "
                f"and its interfaces ({', '.join(n for _, n in socket.if_nameindex())}) have "
                "none")


SIOCGIFADDR = 0x8915
"""Linux's request for an interface's IPv4 address."""


def still_open(connections: list[socket.socket]) -> int:
    """How many of ``connections`` the server has not closed."""
    count = 0
    for connection in connections:
        connection.setblocking(False)
        try:
            count += connection.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count
