"""``pushgrid publish`` / ``pushgrid subscribe`` against a real server."""

from __future__ import annotations

import json
import subprocess
import threading

from .pgtest import PUSHGRID, REPO, clean_env, free_port, run_cli

KEYS = {"subject", "content", "fields", "type", "epoch", "seq"}


def test_publish_then_subscribe_count_1(server, subject):
    s = subject("b")
    published = run_cli(
        "publish", s, "hello", "--field", "k=v", "--field", "x=a=b", "--server", server.address
    )
    assert published.returncode == 0, published.stderr
    result = json.loads(published.stdout)
    assert result["result"] == "ok"
    assert result["subject"] == s
    assert result["seq"] == 1
    assert result["epoch"]

    subscribed = run_cli("subscribe", s, "--server", server.address, "--count", "1")
    assert subscribed.returncode == 0, subscribed.stderr
    lines = subscribed.stdout.splitlines()
    assert len(lines) == 1, subscribed.stdout
    message = json.loads(lines[0])
    assert set(message) == KEYS
    assert message == {
        "subject": s,
        "content": "hello",
        "fields": {"k": "v", "x": "a=b"},
        "type": "snapshot",
        "epoch": result["epoch"],
        "seq": 1,
    }


def _subscriber(*args: str) -> subprocess.Popen[str]:
    """``pushgrid subscribe ARGS`` running, its stdout and stderr piped."""
    return subprocess.Popen(
        [*PUSHGRID, "subscribe", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=clean_env(),
        cwd=REPO,
    )


def test_subscribe_prints_live_updates_as_json_lines(server, subject):
    s = subject("live")
    assert run_cli("publish", s, "first", "--server", server.address).returncode == 0
    proc = _subscriber(s, "--server", server.address, "--count", "3")
    timer = threading.Timer(60, proc.kill)  # never hang
    timer.start()
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # the snapshot: the subscription is active
        assert (first["type"], first["content"], first["seq"]) == ("snapshot", "first", 1)
        for content in ("Grüße 日本", "third"):
            published = run_cli("publish", s, content, "--field", "n=1", "--server", server.address)
            assert published.returncode == 0, published.stderr
        rest = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert proc.wait(30) == 0
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    assert [(m["type"], m["content"], m["seq"], m["fields"]) for m in rest] == [
        ("update", "Grüße 日本", 2, {"n": "1"}),
        ("update", "third", 3, {"n": "1"}),
    ]
    assert all(set(m) == KEYS for m in rest)
    assert proc.stdout.read() == "", "exactly --count lines"


def test_subscribe_updates_leaves_out_the_snapshot(server, subject):
    """Issue 34: a second run of the README tour counted the first run's snapshot in
    ``--count 2`` and missed the second update; ``--updates`` counts new messages only."""
    s = subject("updates")
    assert run_cli("publish", s, "old", "--server", server.address).returncode == 0
    proc = _subscriber(s, "--server", server.address, "--updates", "--count", "1")
    try:
        assert proc.stderr is not None
        assert "connected to" in proc.stderr.readline()
        sent = 0
        while proc.poll() is None:  # until it has printed one: no guess at when it subscribed
            sent += 1
            assert sent < 100, "the subscriber never printed an update"
            assert run_cli("publish", s, f"new {sent}", "--server", server.address).returncode == 0
        assert proc.returncode == 0
        assert proc.stdout is not None
        (line,) = proc.stdout.read().splitlines()
    finally:
        proc.kill()
        proc.wait()
    message = json.loads(line)
    assert message["type"] == "update"
    assert message["content"].startswith("new "), "not the snapshot ('old')"


def test_subscribe_history(server, subject):
    s = subject()
    for n in range(1, 5):
        assert run_cli("publish", s, f"m{n}", "--server", server.address).returncode == 0
    result = run_cli("subscribe", s, "--server", server.address, "--count", "2", "--history", "2")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(m["type"], m["content"], m["seq"]) for m in lines] == [
        ("historical", "m3", 3),
        ("historical", "m4", 4),
    ]


def test_publish_invalid_subject_exits_1(server):
    result = run_cli("publish", "/Stocks", "x", "--server", server.address)
    assert result.returncode == 1
    assert "subject" in (result.stderr + result.stdout).lower()


def test_publish_to_unreachable_server_fails_within_timeout():
    result = run_cli(
        "publish", "/a/b", "x", "--server", f"127.0.0.1:{free_port()}", "--timeout", "1.5"
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["result"] == "failed"


def test_publish_again_with_the_printed_msg_id_is_stored_once(server, subject):
    s = subject("d")
    first = json.loads(run_cli("publish", s, "once", "--server", server.address).stdout)
    again = run_cli("publish", s, "once", "--server", server.address, "--msg-id", first["msg_id"])
    assert again.returncode == 0, again.stderr
    repeat = json.loads(again.stdout)
    assert (repeat["seq"], repeat["epoch"], repeat["duplicate"]) == (1, first["epoch"], True)
    assert "duplicate" not in first
    bad = run_cli("publish", s, "x", "--server", server.address, "--msg-id", "a b")
    assert bad.returncode == 1
    assert "visible ASCII" in bad.stderr
