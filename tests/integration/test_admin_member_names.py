"""``GET /api/v1/member-names``: the console's member pickers get the directory's names without the
admin API asking any member (issue 30 item 2: the console filled a dropdown with a Jolokia read
of every member). A stand-in member counts the requests it gets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .pgtest import AdminHarness


class _Counting(BaseHTTPRequestHandler):
    hits = 0

    def _answer(self) -> None:
        type(self).hits += 1
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def counting_member() -> Iterator[tuple[str, type[_Counting]]]:
    handler = type("Handler", (_Counting,), {"hits": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jolokia", handler
    finally:
        server.shutdown()
        server.server_close()


async def test_member_names_come_from_the_directory_without_a_member_read(
    tmp_path: Path, counting_member: tuple[str, type[_Counting]]
) -> None:
    url, handler = counting_member
    admin = AdminHarness(tmp_path / "admin", [f"ghost={url}", "second=http://127.0.0.1:9/jolokia"])
    try:
        async with admin.client("viewer") as api:
            names = await api.get("/api/v1/member-names")
            assert names.status_code == 200, names.text
            assert names.json() == {"items": ["ghost", "second"]}
            assert handler.hits == 0
            # the full list does read each member (the difference this route exists for)
            assert (await api.get("/api/v1/members")).status_code == 200
            assert handler.hits > 0
            anonymous = await api.get("/api/v1/member-names", headers={"authorization": ""})
            assert anonymous.status_code == 401
    finally:
        admin.close()
