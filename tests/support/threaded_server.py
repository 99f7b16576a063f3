"""An HTTP server on a daemon thread of the test process, closed by `close` or `with`: the base
of the scripted server and the fault proxy."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self


class ThreadedServer:
    """Serves `server` on its own thread from construction on; `url` is where it listens."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_port}"
        self._thread = threading.Thread(target=server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
