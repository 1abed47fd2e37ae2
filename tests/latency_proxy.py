"""A TCP proxy on loopback that delays every chunk Redis sends back, for fault tests.

    python -m tests.latency_proxy UPSTREAM_PORT

It listens on a spare loopback port and prints ``listening <port>`` once ready.
Each line written to its stdin sets the delay in seconds (``0.05``). Bytes to
Redis pass at once; bytes from Redis reach the client ``delay`` seconds after
they arrived, in order, so pipelined replies are each late by the delay rather
than queued behind one another, as over a slow network. A Redis that is killed
closes the client's side too; a frozen one keeps it open and silent. The test
stops the proxy by its pid.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path


class Proxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.delay = 0.0

    async def serve(self) -> None:
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        async with server:
            while line := await reader.readline():
                self.delay = float(line)

    async def handle(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        try:
            redis_in, redis_out = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:  # Redis is down: the client sees its connection closed
            client_out.close()
            return
        await asyncio.gather(
            self.forward(client_in, redis_out),
            self.delayed(redis_in, client_out),
            return_exceptions=True,
        )
        for writer in (client_out, redis_out):
            writer.close()

    async def forward(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        sink.close()

    async def delayed(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    sink.close()
                    return
                await asyncio.sleep(max(due - loop.time(), 0))
                sink.write(data)
                await sink.drain()

        delivering = asyncio.ensure_future(deliver())
        try:
            while data := await source.read(65536):
                queue.put_nowait((loop.time() + self.delay, data))
        finally:
            queue.put_nowait((0.0, b""))
            await delivering


class LatencyProxy:
    """tests/latency_proxy.py in a process of its own, stopped by its pid."""

    def __init__(self, upstream: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.latency_proxy", str(upstream)],
            cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("listening "), line
        self.port = int(line.split()[1])

    def delay(self, seconds: float) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{seconds}\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


if __name__ == "__main__":
    asyncio.run(Proxy(int(sys.argv[1])).serve())
