"""`retain serve --workers N`: N processes answering on one listening socket.

The workers share the socket, but do not take connections as they come: the kernel
wakes every idle worker for a new connection and the first to run takes it, which is
mostly the same worker, so a few long-lived connections (agents, a load test) could all
land on one process while the others sat idle (measured: 4 keep-alive clients on one
of two workers; bench/RESULTS.md). Here a worker waits a moment for each connection it
already holds before it takes another, so the worker holding fewest answers first.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from retain import errors

ACCEPT_STEP_S = 0.005  # a worker waits this long per connection it holds before taking one
ACCEPT_WAIT_MAX_S = 0.05
STARTUP_S = 30.0  # a worker exiting with an error sooner than this could not start
log = logging.getLogger("uvicorn.error")


class BalancedServer(uvicorn.Server):
    """A worker process's server: uvicorn's, but taking connections from the shared
    socket itself, one at a time, and the later the more connections it already holds."""

    _accepting: list[asyncio.Task[None]]

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._accepting = []
        await super().startup(sockets=[])  # the app's startup; no listener of uvicorn's
        if not self.started:
            return
        config, state, app_state = self.config, self.server_state, self.lifespan.state

        def protocol() -> asyncio.Protocol:
            made: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=state, app_state=app_state
            )
            return made

        self._accepting = [asyncio.create_task(self._accept(s, protocol)) for s in sockets or []]
        # Said once it takes connections: whoever started the command may count on it.
        print(f"retain: worker {os.getpid()} answering", file=sys.stderr, flush=True)

    async def _accept(self, listener: socket.socket, protocol: Callable[[], Any]) -> None:
        loop = asyncio.get_running_loop()
        listener.setblocking(False)
        while True:
            await _readable(loop, listener)
            held = len(self.server_state.connections)
            if held:  # let a worker holding fewer take it
                await asyncio.sleep(min(held * ACCEPT_STEP_S, ACCEPT_WAIT_MAX_S))
            try:
                connection, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                continue  # another worker took it
            except OSError as exc:  # out of file descriptors, say: the next try may pass
                log.warning("cannot accept a connection: %s", exc)
                await asyncio.sleep(ACCEPT_WAIT_MAX_S)
                continue
            try:
                await loop.connect_accepted_socket(protocol, connection)
            except OSError as exc:  # the client went away at once: the loop goes on
                log.warning("cannot serve a connection: %s", exc)
                connection.close()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for task in self._accepting:
            task.cancel()
        await super().shutdown(sockets=sockets)


async def _readable(loop: asyncio.AbstractEventLoop, listener: socket.socket) -> None:
    """Return once ``listener`` has a connection waiting (or had: a worker may take it)."""
    pending: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not pending.done():
            pending.set_result(None)

    loop.add_reader(listener, ready)
    try:
        await pending
    finally:
        loop.remove_reader(listener)


def _worker(config: uvicorn.Config, listener: socket.socket) -> None:
    config.configure_logging()
    BalancedServer(config).run(sockets=[listener])


def listen(host: str, port: int) -> socket.socket:
    """The listening socket the server answers on: ``port_in_use`` when something else
    listens there, ``listen_failed`` when it cannot be had for another reason."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Said to be TCP: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # each answer waits ~40 ms for the client's delayed ACK (Nagle's algorithm).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise errors.PortInUse(
                f"cannot listen on {host}:{port}: something else listens there",
                remedy="stop what listens there, or choose another --port",
                host=host,
                port=port,
            ) from exc
        raise errors.ListenFailed(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            remedy="choose another --host or --port",
            host=host,
            port=port,
        ) from exc
    return sock


def port_of(value: str) -> int:
    """``--port`` as a number from 1 to 65535, or ``invalid_port``."""
    text = value.strip()
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        raise errors.InvalidPort(
            f"port {value!r} is not a whole number from 1 to 65535",
            remedy="pass --port a number from 1 to 65535 (the default is 8765)",
            port=value,
        )
    return int(text)


def run_workers(app: str, listener: socket.socket, workers: int) -> None:
    """Serve the ASGI app factory ``app`` (``module:function``) on ``listener`` (see
    ``listen``) from ``workers`` processes until SIGINT or SIGTERM. A worker that ends is
    replaced, unless it exited with an error within ``STARTUP_S`` of its start: its app
    could not start, each replacement would fail alike, and the command stops
    (``store_error``)."""
    host, port = listener.getsockname()[:2]
    config = uvicorn.Config(app, factory=True, host=host, port=port, log_level="warning")
    spawn = multiprocessing.get_context("spawn")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    def start() -> tuple[multiprocessing.process.BaseProcess, float]:
        process = spawn.Process(target=_worker, args=(config, listener), daemon=True)
        process.start()
        return process, time.monotonic()

    running = [start() for _ in range(workers)]
    failed: int | None = None
    while failed is None and not stop.wait(0.5):
        for i, (process, started) in enumerate(running):
            code = process.exitcode
            if code is None:
                continue
            if code > 0 and time.monotonic() - started < STARTUP_S:
                failed = code
                break
            log.warning("worker %s ended (exit %s); starting another", process.pid, code)
            running[i] = start()
    processes = [process for process, _ in running]
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(10)
        if process.is_alive():
            process.kill()
    listener.close()
    if failed is not None:
        raise errors.StoreError(
            f"a worker process could not start (exit {failed})",
            remedy="see the worker's error above; `retain serve` without --workers shows it too",
        )
