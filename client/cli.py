"""``pushgrid publish`` and ``pushgrid subscribe``: plain functions plus :func:`register`.

The main Typer app mounts the commands with ``register(app)``; the ``*_command`` functions can
also be called directly (they return the process exit code and never call ``sys.exit``).

Output contract:

- ``publish`` prints one JSON object ``{"result", "subject", "epoch", "seq", "reason"}`` on
  stdout; exit code 0 when the result is ``ok``, 1 otherwise (also for invalid arguments, with a
  message on stderr).
- ``subscribe`` prints one JSON object per message per line with exactly the keys
  ``subject, content, fields, type, epoch, seq``, flushed after each line; connection and
  subscription notices go to stderr. It exits 0 after ``count`` messages (runs until interrupted
  without ``count``), 1 when every subject is denied or the server says not to retry, 130 on
  Ctrl-C, 143 on SIGTERM (after closing the connection cleanly).
"""

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Annotated

import typer

from .backoff import BackoffPolicy
from .client import PushgridClient
from .models import Message, QoS, Status, StatusEvent

DEFAULT_SERVER = "127.0.0.1:8800"

# Quick first retries suit a command line: a server that is restarting is found within seconds.
CLI_BACKOFF = BackoffPolicy(base=1.0, quick_retries=3, cap=30.0)


def parse_fields(fields: list[str] | None) -> dict[str, str]:
    """``["NAME=VALUE", ...]`` to a dict; split at the first ``=``, so values may contain ``=``.

    Raises ValueError naming the bad item when one has no ``=`` or an empty NAME.
    """
    result: dict[str, str] = {}
    for item in fields or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--field {item!r}: expected NAME=VALUE (e.g. --field volume=6.62M)")
        result[name] = value
    return result


def message_json(message: Message) -> str:
    """The subscribe output line of one message (keys in the documented order)."""
    return json.dumps(
        {
            "subject": message.subject,
            "content": message.content,
            "fields": message.fields,
            "type": message.type.value,
            "epoch": message.epoch,
            "seq": message.seq,
        },
        ensure_ascii=False,
    )


def publish_command(
    subject: str,
    content: str,
    fields: list[str] | None = None,
    server: str = DEFAULT_SERVER,
    token: str | None = None,
    qos: QoS = "guaranteed",
    retained: bool = True,
    timeout: float = 10.0,
    msg_id: str | None = None,
) -> int:
    """Publish one message and print the result as JSON. Returns 0 on ``ok``, 1 otherwise.

    ``msg_id``: the idempotency key (generated when None); publishing again with the one
    printed stores the message at most once (docs/protocol.md 5.3.1)."""
    try:
        parsed = parse_fields(fields)
        client = PushgridClient(server, token, backoff=CLI_BACKOFF)
    except ValueError as exc:
        _error(str(exc))
        return 1

    async def run() -> int:
        await client.connect(wait=False)
        try:
            result = await client.publish(
                subject, content, parsed, retained=retained, qos=qos, timeout=timeout, msg_id=msg_id
            )
        finally:
            await client.close()
        print(json.dumps(result.to_dict(), ensure_ascii=False), flush=True)
        return 0 if result.ok else 1

    try:
        return asyncio.run(run())
    except ValueError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130


def subscribe_command(
    subjects: list[str],
    server: str = DEFAULT_SERVER,
    count: int | None = None,
    token: str | None = None,
    history: int = 0,
    updates: bool = False,
) -> int:
    """Print messages of ``subjects`` as JSON lines until ``count`` messages (or Ctrl-C);
    ``updates``: without the snapshot a subscription starts with."""
    if count is not None and count < 0:
        _error(f"--count must be >= 0, got {count}")
        return 1
    if count == 0:
        return 0
    try:
        return asyncio.run(_subscribe(subjects, server, count, token, history, updates))
    except ValueError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: silence the flush at interpreter exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


#: how each informational status is shown on stderr (denials and closes also decide the exit)
_NOTES: dict[Status, Callable[[StatusEvent], str]] = {
    Status.SERVER_DOWN: lambda event: (
        f"server {event.server} down: {event.detail}"
        + (f"; retrying in {event.retry_in:.1f} s" if event.retry_in is not None else "")
    ),
    Status.SERVER_UP: lambda event: f"connected to {event.server}",
    Status.DATA_RESYNC: lambda event: (
        f"{event.subject}: data resync ({event.detail}), a snapshot follows"
    ),
}


async def _subscribe(
    subjects: list[str],
    server: str,
    count: int | None,
    token: str | None,
    history: int,
    updates: bool = False,
) -> int:
    stop = asyncio.Event()
    denied: set[str] = set()
    exit_code = 0
    wanted = set(subjects)

    def on_status(event: StatusEvent) -> None:
        nonlocal exit_code
        if event.status is Status.SUBSCRIBE_DENY and event.subject is not None:
            denied.add(event.subject)
            _error(f"subscription to {event.subject} denied: {event.detail}")
            if denied >= wanted:
                exit_code = 1
                stop.set()
        elif event.status is Status.CLOSED and event.close_code is not None:
            _error(f"stopped: close code {event.close_code} {event.close_reason}")
            exit_code = 1
            stop.set()
        elif event.status in _NOTES:
            _note(_NOTES[event.status](event))

    def on_sigterm() -> None:
        nonlocal exit_code
        exit_code = 128 + signal.SIGTERM
        stop.set()

    with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
    client = PushgridClient(server, token, on_status=on_status, backoff=CLI_BACKOFF)
    await client.subscribe(subjects, history=history)  # validates before connecting
    await client.connect(wait=False)
    await _print_until(client, count, stop, updates)
    return exit_code


async def _print_until(
    client: PushgridClient, count: int | None, stop: asyncio.Event, updates: bool = False
) -> None:
    """Print messages until ``count`` of them, or ``stop``; then close the client. ``updates``:
    leave out the snapshot a subscription starts with, so ``count`` counts the messages
    published from now on (a second run of the README's tour met the first run's snapshot)."""

    async def consume() -> None:
        received = 0
        async for message in client.messages():
            if updates and message.type == "snapshot":
                continue
            print(message_json(message), flush=True)
            received += 1
            if count is not None and received >= count:
                return

    consumer = asyncio.create_task(consume())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({consumer, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (consumer, stopper):
            task.cancel()
        await client.close()
    if consumer.done() and not consumer.cancelled():
        consumer.result()  # re-raises what stopped the consumer, e.g. BrokenPipeError


def _error(text: str) -> None:
    print(f"error: {text}", file=sys.stderr, flush=True)


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- Typer wiring -------------------------------------------------------------------------------

ServerOption = Annotated[
    str,
    typer.Option(
        "--server",
        "-s",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="Server to connect to; a comma-separated list to fail over between members.",
    ),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", help="Entitlement token (JWT), sent as ?token=.")
]


def publish(
    subject: Annotated[str, typer.Argument(help="Subject, e.g. /Stocks/NYSE/IBM.")],
    content: Annotated[str, typer.Argument(help="Message content.")],
    field: Annotated[
        list[str] | None,
        typer.Option("--field", "-f", metavar="NAME=VALUE", help="A message field; repeatable."),
    ] = None,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
    qos: Annotated[
        str, typer.Option("--qos", help="guaranteed (cached, recoverable) or standard.")
    ] = "guaranteed",
    retained: Annotated[
        bool, typer.Option("--retained/--not-retained", help="Whether it becomes the snapshot.")
    ] = True,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait.")] = 10.0,
    msg_id: Annotated[
        str | None,
        typer.Option(
            "--msg-id", help="Idempotency key (default: a new one); retry with the printed one."
        ),
    ] = None,
) -> None:
    """Publish one message and print the result as JSON (exit 0 on ok, 1 otherwise)."""
    if qos not in ("guaranteed", "standard"):
        _error(f"--qos must be 'guaranteed' or 'standard', got {qos!r}")
        raise typer.Exit(1)
    qos_value: QoS = "standard" if qos == "standard" else "guaranteed"
    code = publish_command(
        subject, content, field, server, token, qos_value, retained, timeout, msg_id
    )
    raise typer.Exit(code)


def subscribe(
    subjects: Annotated[list[str], typer.Argument(help="One or more subjects.")],
    server: ServerOption = DEFAULT_SERVER,
    count: Annotated[
        int | None, typer.Option("--count", "-n", help="Exit after N messages.")
    ] = None,
    token: TokenOption = None,
    history: Annotated[
        int, typer.Option("--history", help="Start with the N last cached messages.")
    ] = 0,
    updates: Annotated[
        bool,
        typer.Option(
            "--updates", help="Leave out the snapshot: print (and count) new messages only."
        ),
    ] = False,
) -> None:
    """Print messages as JSON lines: subject, content, fields, type, epoch, seq."""
    raise typer.Exit(subscribe_command(subjects, server, count, token, history, updates))


def register(app: typer.Typer) -> None:
    """Add the ``publish`` and ``subscribe`` commands to ``app``."""
    app.command("publish")(publish)
    app.command("subscribe")(subscribe)
