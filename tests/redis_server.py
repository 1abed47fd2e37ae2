"""A throwaway ``redis-server`` on a spare loopback port, for fault-injection tests.

Tests kill, freeze and fill their own server; the shared Redis is never touched.
Each server keeps nothing on disk (``--save "" --appendonly no``), works in its
own directory, and is always stopped by ``close()`` (also when it is frozen).
The same class starts Sentinels (``config=`` and ``"--sentinel"``) and Cluster
nodes (``port_args=`` for the bus port); ``wait_for`` bounds a real-time wait.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import redis

# Overridable for machines where redis-server is not on PATH.
REDIS_SERVER = os.environ.get("REDIS_SERVER_BIN") or shutil.which("redis-server") or ""
# redis-cli joins Cluster nodes (``redis-cli --cluster create``).
REDIS_CLI = os.environ.get("REDIS_CLI_BIN") or shutil.which("redis-cli") or ""

START_TIMEOUT = 10.0


class RedisServerError(RuntimeError):
    """redis-server could not be started (the message includes its log)."""


def spare_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], object], *, timeout: float, what: str) -> None:
    """Poll ``condition`` until it is true; fail after ``timeout`` real seconds.

    For waits on real servers (a replica syncing, a failover, a cluster
    agreeing): ``time.monotonic`` is not moved by time_machine, so this works
    inside a travel, and it costs only as long as the servers take.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RedisServerError(f"{what}: not within {timeout} s")
        time.sleep(0.02)


class RedisServer:
    """One ``redis-server`` child process on 127.0.0.1.

    ``start()`` picks a spare port the first time; ``restart()`` (or ``start()``
    after ``kill()``/``stop()``) reuses it, as a restarted production Redis would.

    ``config``, if given, is written to a file in ``directory`` and passed first,
    as a Sentinel needs (it rewrites that file). ``port_args`` makes more
    arguments from the port chosen, e.g. a spare Cluster bus port (the default,
    port + 10000, is out of range for many spare ports).
    """

    def __init__(
        self,
        *args: str,
        directory: Path,
        binary: str = REDIS_SERVER,
        config: str | None = None,
        port_args: Callable[[int], Sequence[str]] | None = None,
    ) -> None:
        self.args = args
        self.directory = directory
        self.binary = binary
        self.config = config
        self.port_args = port_args
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False
        self.starts = 0

    # -- addresses and clients ------------------------------------------------

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.require_port()}/0"

    def require_port(self) -> int:
        if self.port is None:
            raise RedisServerError("the server has not been started")
        return self.port

    def client(self, **kwargs: object) -> redis.Redis:
        """A direct client (the caller closes it, e.g. ``with server.client() as r:``)."""
        options: dict[str, object] = {"socket_timeout": 5, "socket_connect_timeout": 5}
        options.update(kwargs)
        port = self.require_port()
        return redis.Redis(host="127.0.0.1", port=port, **options)  # type: ignore[arg-type]

    @property
    def log(self) -> str:
        """What redis-server printed (its log goes to a file in ``directory``)."""
        try:
            return self._log_path().read_text(errors="replace")
        except (FileNotFoundError, RedisServerError):
            return ""

    def _log_path(self) -> Path:
        return self.directory / f"redis-{self.require_port()}.log"

    # -- life cycle ----------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> RedisServer:
        if self.running:
            raise RedisServerError(f"redis-server already runs on port {self.port}")
        if not self.binary:
            raise RedisServerError("redis-server is not installed (set REDIS_SERVER_BIN)")
        if self.port is not None:
            self._spawn(self.port)
            return self
        # A spare port can be taken between our probe and redis-server's bind: retry.
        last: RedisServerError | None = None
        for _ in range(5):
            self.port = spare_port()
            try:
                self._spawn(self.port)
                return self
            except RedisServerError as exc:
                last = exc
                self.port = None
        assert last is not None
        raise last

    def _spawn(self, port: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        config_file: list[str] = []
        if self.config is not None:
            path = self.directory / f"redis-{port}.conf"
            path.write_text(self.config)
            config_file = [str(path)]
        more = list(self.port_args(port)) if self.port_args is not None else []
        command = [
            self.binary,
            *config_file,
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.directory),
            "--daemonize", "no",
            "--logfile", "",
            *self.args,
            *more,
        ]  # fmt: skip
        with open(self.directory / f"redis-{port}.log", "ab") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self.paused = False
        self.starts += 1
        try:
            self._wait_until_it_answers(port)
        except BaseException:
            self._reap(signal.SIGKILL)
            raise

    def _wait_until_it_answers(self, port: int) -> None:
        # time.monotonic is not moved by time_machine, so this works inside a travel.
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RedisServerError(
                    f"redis-server exited with {self.process.returncode} on port {port}:\n"
                    + self.log
                )
            try:
                with redis.Redis(
                    host="127.0.0.1", port=port, socket_timeout=1, socket_connect_timeout=1
                ) as probe:
                    if probe.ping():
                        return
            except redis.exceptions.BusyLoadingError:
                pass
            except redis.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RedisServerError(
                    f"redis-server did not answer PING on port {port} within "
                    f"{START_TIMEOUT} s:\n" + self.log
                )
            time.sleep(0.01)

    def kill(self) -> None:
        """SIGKILL: the server vanishes without a word, as in a crash or OOM kill."""
        self._reap(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM and wait: an orderly shutdown."""
        self._reap(signal.SIGTERM)

    def restart(self) -> RedisServer:
        """Stop (if running) and start again on the same port, with empty data."""
        if self.running:
            self.stop()
        return self.start()

    def pause(self) -> None:
        """SIGSTOP: the port still accepts connections, but nothing is answered."""
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT after ``pause()``."""
        self._signal(signal.SIGCONT)
        self.paused = False

    def close(self) -> None:
        """Always safe: wakes a frozen server, stops it, and reaps the process."""
        if self.process is None:
            return
        if self.paused and self.running:
            self.resume()
        self._reap(signal.SIGTERM)

    def _signal(self, signum: int) -> None:
        if not self.running:
            raise RedisServerError("redis-server is not running")
        assert self.process is not None
        self.process.send_signal(signum)

    def _reap(self, signum: int) -> None:
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            if self.paused:
                process.send_signal(signal.SIGCONT)  # a stopped process ignores SIGTERM
            process.send_signal(signum)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.paused = False
        self.process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
