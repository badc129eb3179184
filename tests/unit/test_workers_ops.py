"""The operators' side of Workers (ADR 061), pure parts: the supervision board, CPU rates, the
Workers MBean's document, the alert signals per process, the console's process rows and the
built-in worker rules."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pushgrid.admin_api.alert_signals import WorkerLook, WorkerTracker, key, worker_target
from pushgrid.console.process_table import (
    cores_text,
    process_cells,
    processes_summary,
    render_processes,
)
from pushgrid.ops.alerts import SIGNALS
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.workers import NOT_ANSWERING_AFTER, WorkerProcess, document, not_answering
from pushgrid.server.monitoring.supervision_board import SupervisionBoard
from pushgrid.server.monitoring.workers_view import CpuRates
from pushgrid.server.workers.supervisor import STALL_AFTER


def row(**changes: Any) -> WorkerProcess:
    base: dict[str, Any] = {
        "index": 1,
        "pid": 4321,
        "cpus": [0, 1],
        "cpu_percent": 12.5,
        "cpu_seconds": 3.0,
        "rss_bytes": 60_000_000,
        "connections": 10,
        "sessions": 9,
        "open_files": 40,
        "report_age_seconds": 0.4,
        "linked": True,
        "loop_lag_seconds": 0.001,
        "loop_lag_max_seconds": 0.002,
        "restarts": 0,
        "heartbeat_age_seconds": 0.3,
        "answering": True,
    }
    return WorkerProcess(**{**base, **changes})


def test_the_not_answering_line_is_the_supervisor_s() -> None:
    assert NOT_ANSWERING_AFTER == STALL_AFTER
    assert not not_answering(None)
    assert not not_answering(5.0)
    assert not_answering(5.1)


def test_the_board_is_shared_with_a_forked_child() -> None:
    board = SupervisionBoard(3)
    pid = os.fork()
    if pid == 0:  # the child writes, as the supervisor does for its workers
        board.write(2, 777, 4, time.monotonic() - 6.0, True)
        os._exit(0)
    os.waitpid(pid, 0)
    slot = board.read(2)
    assert (slot.pid, slot.restarts, slot.stalled) == (777, 4, True)
    assert 6.0 <= slot.heartbeat_age < 60.0
    assert board.read(0) == (0, 0, 0.0, False)  # never written


def test_cpu_rates_need_a_second_of_reports() -> None:
    rates = CpuRates()
    assert rates.percent(10, 100.0, 1.0) is None
    assert rates.percent(10, 100.5, 1.2) is None  # half a second: not yet
    assert rates.percent(10, 101.0, 1.5) == 50.0
    assert rates.percent(10, 103.0, 3.5) == 100.0  # over the newest report >= 1 s older
    rates.forget_others({11})
    assert rates.percent(10, 104.0, 4.0) is None  # forgotten: a new start


def test_the_document_sums_restarts_and_names_the_silent_workers() -> None:
    doc = document([row(index=0, cpus=[0]), row(index=1, cpus=[1, 3], restarts=2, answering=False)])
    assert (doc.workers, doc.cpus, doc.restarts, doc.not_answering) == (2, [0, 1, 3], 2, [1])
    assert doc.processes[1]["pid"] == 4321


def test_worker_signals_fire_on_a_restart_and_resolve_the_old_pid() -> None:
    tracker = WorkerTracker()
    first = tracker.readings({"m1": [WorkerLook(1, 100, 0, True)]})
    old = worker_target("m1", 1, 100)
    assert old == "m1 worker 1 (pid 100)"
    assert first[old] == {key("worker_restarted"): 0.0, key("worker_not_answering"): 0.0}
    dead = tracker.readings({"m1": [WorkerLook(1, 0, 1, True)]})  # killed, not back yet
    assert dead == {old: {key("worker_restarted"): 0.0, key("worker_not_answering"): 0.0}}
    back = tracker.readings({"m1": [WorkerLook(1, 200, 1, True)]})
    new = worker_target("m1", 1, 200)
    assert back[new][key("worker_restarted")] == 1.0  # the restart seen while it was dead
    assert back[old][key("worker_restarted")] == 0.0  # the old life resolves
    again = tracker.readings({"m1": [WorkerLook(1, 200, 1, False)]})
    assert again[new] == {key("worker_restarted"): 0.0, key("worker_not_answering"): 1.0}
    assert tracker.readings({"m1": None}) == {}  # unreadable: no value


def test_restarts_before_the_first_look_do_not_fire() -> None:
    readings = WorkerTracker().readings({"m1": [WorkerLook(0, 5, 3, True)]})
    assert readings["m1 worker 0 (pid 5)"][key("worker_restarted")] == 0.0


def test_console_cells_and_levels() -> None:
    assert cores_text([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert cores_text([]) == "—"
    cells, level = process_cells(row())
    assert cells[:4] == ["1", "4321", "0-1", "12.5 %"]
    assert cells[-1] == "linked"
    assert level == "ok"
    assert process_cells(row(restarts=1))[0][-1] == "linked, restarted 1 time"
    assert process_cells(row(restarts=1))[1] == "warn"
    silent = process_cells(row(answering=False, heartbeat_age_seconds=7.25))
    assert silent == (silent[0], "bad")
    assert silent[0][-1].startswith("not answering for 7.25 s")
    assert process_cells(row(pid=0, restarts=2))[0][-1] == "dead, restarting, restarted 2 times"
    assert processes_summary([row(index=0, cpus=[0]), row(cpus=[1])]) == (
        "2 processes on cores 0-1"
    )


def test_the_card_carries_the_processes_through_json() -> None:
    item = {"name": "m1", "monitor_url": "http://x", "reachable": True, "source": "config"}
    item |= {"client_url": None, "has_credentials": False}
    rows = [row(index=0).model_dump(), row().model_dump()]
    card = MemberOut.model_validate({**item, "processes": rows})
    assert card.processes is not None
    assert [p.index for p in card.processes] == [0, 1]
    assert MemberOut.model_validate(card.model_dump(mode="json")) == card  # a Dash store
    assert MemberOut.model_validate(item).processes is None
    table = render_processes(card.processes)
    assert str(table).count("process-row") == 2


def test_migration_0015_adds_the_worker_rules_once_and_an_operators_own_wins(
    tmp_path: Path,
) -> None:
    """The rules come from the store's migration (0015), not from each admin API start: an
    operator's own rule of one name is kept, a deleted built-in one stays deleted."""
    from sqlalchemy import delete, select

    from pushgrid.metrics.sqlstore import head_revision, make_session_factory, upgrade
    from pushgrid.metrics.sqlstore.admin_models import AlertRule
    from pushgrid.metrics.sqlstore.models import utc_now

    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert upgrade(url, "0014") == "0014"
    factory = make_session_factory(url)
    with factory() as db, db.begin():
        mine = AlertRule(
            name="WorkerRestarted",
            indicator="worker_restarted",
            window="current",
            stat="max",
            comparison=">=",
            threshold=3.0,
            for_seconds=0.0,
            severity="critical",
            scope="member",
            description="mine",
            enabled=True,
            created_by="ops",
            created_at=utc_now(),
            clear_threshold=None,
            clear_for=60.0,
            builtin=False,
        )
        db.add(mine)
    assert upgrade(url) == head_revision()  # 0015 and any later one
    with factory() as db:
        rules = {r.name: r for r in db.scalars(select(AlertRule)) if r.name.startswith("Worker")}
    assert set(rules) == {"WorkerRestarted", "WorkerNotAnswering"}
    assert rules["WorkerRestarted"].description == "mine"  # the operator's own wins
    assert not rules["WorkerRestarted"].builtin
    added = rules["WorkerNotAnswering"]
    assert added.builtin
    assert added.enabled
    assert added.indicator in set(SIGNALS)
    assert added.clear_for == 5.0
    with factory() as db, db.begin():
        db.execute(delete(AlertRule).where(AlertRule.name == "WorkerNotAnswering"))
    assert upgrade(url) == head_revision()  # nothing re-adds a deleted built-in rule
    with factory() as db:
        names = set(db.scalars(select(AlertRule.name)))
    assert "WorkerNotAnswering" not in names
    factory.kw["bind"].dispose()


def test_status_text_names_the_cores_and_the_silent_worker() -> None:
    from pushgrid.cli.workers_text import cores, member_text

    assert cores([3, 0, 1, 2, 6]) == "0-3,6"
    text = member_text(
        "m1",
        "http://127.0.0.1:8900",
        [
            row(index=0, cpus=[0]),
            row(cpus=[1], answering=False, heartbeat_age_seconds=6.0, restarts=2),
        ],
    )
    head, zero, one = text.splitlines()
    assert head == "m1 (http://127.0.0.1:8900): 2 processes on cores 0-1"
    assert zero.strip().startswith("worker 0  pid 4321")
    assert zero.endswith("linked")
    assert one.endswith("NOT ANSWERING for 6.0 s, restarted 2x")


def test_up_uses_auto_unless_workers_is_said(tmp_path: Path) -> None:
    from pushgrid.cli.workers import workers_set

    conf = tmp_path / "pushgrid.conf"
    conf.write_text("ServerName = a\n# Workers = 4\n")
    assert not workers_set(conf, {})
    assert not workers_set(None, {"PUSHGRID_WORKERS": " "})
    assert workers_set(None, {"PUSHGRID_WORKERS": "1"})
    conf.write_text("ServerName = a\n  workers = 1\n")
    assert workers_set(conf, {})
