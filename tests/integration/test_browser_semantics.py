"""The browser client's pure parts behave exactly like the Python SDK's (client/*.py).

The same inputs go through the JavaScript (/pushgrid.js, in Chromium) and the Python
implementation, and the answers must agree: server list parsing, subject validation, reconnect
delays, close-code rules and the recovery tracker on randomized frame sequences.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from pushgrid.client.backoff import Backoff, BackoffPolicy
from pushgrid.client.closecodes import rule_for_close
from pushgrid.client.recovery import RecoveryTracker
from pushgrid.client.servers import parse_server
from pushgrid.protocol.frames import MessageFrame, Subscribed, msg_id_error
from pushgrid.protocol.subjects import subject_error

from .browser import Browser, missing


@pytest.fixture(scope="module")
def page(module_server_factory) -> Iterator[Browser]:
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    srv = module_server_factory()
    browser = Browser()
    try:
        browser.driver.get(f"{srv.url}/health")  # any page of the server's origin
        browser.js(
            "const s = document.createElement('script'); s.src = '/pushgrid.js';"
            "document.head.appendChild(s);"
        )
        browser.wait_js("return typeof window.Pushgrid === 'object'", "/pushgrid.js loaded")
        yield browser
        assert not browser.console_errors(), browser.console_errors()
    finally:
        browser.quit()


SERVER_ENTRIES = [
    "localhost",
    "127.0.0.1:18800",
    "50 push1.example.com",
    "0 10.0.0.2:9000",
    "  100   host-a:1  ",
    "[::1]",
    "25 [fe80::1]:8801",
    "ws://a.example.com:8800",
    "wss://b.example.com",
    "ws://c.example.com/",
    "70 wss://d.example.com:9443/push/ws?x=1",
    "ws://[::1]:8800/ws",
    # invalid
    "",
    "   ",
    "101 host",
    "-1 host",
    "x host",
    "host:0",
    "host:65536",
    "host:abc",
    "::1",
    "[::1",
    "[::1]x",
    "[host]",
    "bad_host!",
    "ftp://host",
    "ws://user@host",
    "ws://host#frag",
]


def test_server_entries_parse_alike(page):
    js: list[Any] = page.js(
        """
        return arguments[0].map((entry) => {
          try {
            const s = Pushgrid.parseServer(entry);
            return {host: s.host, port: s.port, weight: s.weight, secure: s.secure,
                    path: s.path, text: String(s), url: s.wsUrl("a b")};
          } catch (err) { return {error: err.message}; }
        });
        """,
        SERVER_ENTRIES,
    )
    for entry, answer in zip(SERVER_ENTRIES, js, strict=True):
        try:
            s = parse_server(entry)
        except ValueError:
            s = None
        if s is None:
            assert "error" in answer, f"{entry!r}: Python refuses it, JS accepts {answer}"
            continue
        expected = {
            "host": s.host,
            "port": s.port,
            "weight": s.weight,
            "secure": s.secure,
            "path": s.path,
            "text": str(s),
            "url": s.url("a b"),
        }
        assert answer == expected, entry


SUBJECTS = [
    "/Stocks/NYSE/IBM",
    "/a/b",
    "/Stocks//IBM/BID",
    "Stocks/IBM/BID",
    "/Stocks/IBM/BID/",
    "/",
    "/Stocks",
    "/a/b c/d é 株",
    "/a/\u0007bell",
    "/a/\u007fdel",
    "/a/" + "x" * 1021,
    "/a/" + "x" * 1022,
    "/a/" + "é" * 511,
    "/a/" + "é" * 510,
]


def test_subject_validation_agrees(page):
    js = page.js("return arguments[0].map((s) => Pushgrid.subjectError(s))", SUBJECTS)
    assert js == [subject_error(s) for s in SUBJECTS]


MSG_IDS = ["k", "order-17", "~" * 128, "x" * 129, "", "a b", "é", "a\u200bb", "tab\t", "😀"]


def test_msg_id_validation_agrees(page):
    js = page.js("return arguments[0].map((s) => Pushgrid.msgIdError(s))", MSG_IDS)
    assert js == [msg_id_error(s) for s in MSG_IDS]


class ListRandom(random.Random):
    """A Random whose random() returns the given values in turn (uniform() uses random())."""

    def __init__(self, values: list[float]) -> None:
        super().__init__(0)
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_backoff_delays_agree(page):
    draws = [random.Random(7).random() for _ in range(1)] + [i / 23 for i in range(23)]
    for policy in (
        BackoffPolicy(),
        BackoffPolicy(base=0.5, quick_retries=1, jitter=0.0, multiplier=3.0, cap=20.0),
    ):
        python = Backoff(policy, ListRandom(draws))
        expected = [python.next_delay() for _ in draws]
        js = page.js(
            """
            const [p, draws] = arguments;
            const values = draws.slice();
            const b = new Pushgrid.Backoff(Pushgrid.backoffPolicy({base: p.base,
              quickRetries: p.quick, jitter: p.jitter, multiplier: p.mult, cap: p.cap}),
              () => values.shift());
            return draws.map(() => b.nextDelay());
            """,
            {
                "base": policy.base,
                "quick": policy.quick_retries,
                "jitter": policy.jitter,
                "mult": policy.multiplier,
                "cap": policy.cap,
            },
            draws,
        )
        assert js == pytest.approx(expected, rel=1e-12)


def test_close_code_rules_agree(page):
    codes = [None, 1000, 1001, 1002, 1005, 1006, 1009, 1011, 4001, 4002, 4003, 4004, 4005]
    codes += [4007, 4999]
    js = page.js(
        "return arguments[0].map((c) => { const r = Pushgrid.ruleForClose(c);"
        " return [r.retry, r.immediate, r.avoidServer]; })",
        codes,
    )
    expected = [[r.retry, r.immediate, r.avoid_server] for r in (rule_for_close(c) for c in codes)]
    assert js == expected


def random_frames(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """A plausible-to-hostile stream of subscribed and message frames for two subjects."""
    frames: list[dict[str, Any]] = []
    seqs = {"/a/b": 0, "/c/d": 0}
    epochs = {"/a/b": "e1", "/c/d": "e1"}
    for _ in range(count):
        subject = rng.choice(list(seqs))
        if rng.random() < 0.03:
            epochs[subject] = rng.choice(["e1", "e2", "e3"])
        epoch = epochs[subject]
        roll = rng.random()
        if roll < 0.12:
            frames.append(
                {
                    "type": "subscribed",
                    "subject": subject,
                    "status": rng.choice(["allow"] * 5 + ["deny"]),
                    "recovery": rng.choice(
                        ["none", "recovered", "up_to_date", "new_epoch", "failed"]
                    ),
                    "epoch": epoch,
                    "seq": seqs[subject],
                    "id": None,
                    "reason": None,
                }
            )
            continue
        step = rng.choice([1, 1, 1, 0, -1, 2, 2, 3])
        seqs[subject] = max(0, seqs[subject] + step)
        frames.append(
            {
                "type": "message",
                "kind": rng.choice(["update"] * 6 + ["recovered", "snapshot", "historical"]),
                "subject": subject,
                "content": "x",
                "fields": {},
                "epoch": epoch,
                "seq": seqs[subject],
                "qos": rng.choice(["guaranteed"] * 5 + ["standard"]),
                "retained": True,
                "ts": 0,
                "conflated": rng.random() < 0.1,
            }
        )
    return frames


def scripted_frames() -> list[dict[str, Any]]:
    """Repeated gaps with refused recoveries in between: recover, recover, then resync."""
    sub: dict[str, Any] = {
        "type": "subscribed",
        "subject": "/a/b",
        "status": "allow",
        "id": None,
        "reason": None,
    }
    msg: dict[str, Any] = {
        "type": "message",
        "kind": "update",
        "subject": "/a/b",
        "content": "x",
        "fields": {},
        "qos": "guaranteed",
        "retained": True,
        "ts": 0,
    }
    frames: list[dict[str, Any]] = [{**sub, "recovery": "none", "epoch": "e", "seq": 1}]
    for seq in (2, 5, 6):
        frames.append({**msg, "epoch": "e", "seq": seq})
    for _ in range(3):
        frames.append({**sub, "recovery": "up_to_date", "epoch": "e", "seq": 2})
        frames.append({**msg, "epoch": "e", "seq": 9})
    frames.append({**sub, "recovery": "none", "epoch": "e", "seq": 9})
    frames.append({**msg, "epoch": "e", "seq": 10})
    return frames


@pytest.mark.parametrize("seed", [*range(6), "scripted"])
def test_recovery_tracker_agrees(page, seed):
    frames = scripted_frames() if seed == "scripted" else random_frames(random.Random(seed), 400)
    tracker = RecoveryTracker(max_recoveries=2)
    expected: list[Any] = []
    for frame in frames:
        if frame["type"] == "subscribed":
            tracker.on_subscribed(msgspec.convert(frame, Subscribed))
            expected.append(None)
        else:
            decision = tracker.on_message(msgspec.convert(frame, MessageFrame))
            recover = decision.recover
            expected.append(
                [
                    decision.action.value,
                    None if recover is None else [recover.epoch, recover.seq],
                ]
            )
        position = tracker.position(frame["subject"])
        expected[-1] = [
            expected[-1],
            None if position is None else [position.epoch, position.seq],
            tracker.recovering(frame["subject"]),
        ]
    js = page.js(
        """
        const t = new Pushgrid.RecoveryTracker(2);
        return arguments[0].map((frame) => {
          let answer = null;
          if (frame.type === "subscribed") t.onSubscribed(frame);
          else {
            const d = t.onMessage(frame);
            answer = [d.action, d.recover ? [d.recover.epoch, d.recover.seq] : null];
          }
          const p = t.position(frame.subject);
          return [answer, p ? [p.epoch, p.seq] : null, t.recovering(frame.subject)];
        });
        """,
        frames,
    )
    for index, (got, want) in enumerate(zip(js, expected, strict=True)):
        assert got == want, f"frame #{index} {frames[index]}: JS {got}, Python {want}"
    if seed == "scripted":
        actions = [answer[0][0] for answer in expected if answer[0] is not None]
        assert "resync" in actions, actions
