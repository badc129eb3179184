"""Delivery accounting's fold and views (server/core/accounting.py, ADR 054)."""

from __future__ import annotations

from datetime import UTC, datetime

from pushgrid.admin_api.schemas import SlowConsumerOut
from pushgrid.admin_api.services.accounting import offenders
from pushgrid.console.pages.delivery_accounting import (
    holds_cell,
    render_accounting,
    render_offenders,
)
from pushgrid.ops import accounting as contract
from pushgrid.server.core.accounting import (
    CLOSED,
    COLUMNS,
    CONFLATED,
    DUE,
    PUBLISHED,
    REFUSED,
    WRITTEN,
    DeliveryAccounts,
    new_tally,
)
from pushgrid.server.monitoring.accounting_view import (
    accounting_metrics,
    read_accounting,
    stats_lines,
    stats_section,
)


def tally(**columns: int) -> list[int]:
    counts = new_tally()
    index = {
        "published": PUBLISHED,
        "due": DUE,
        "written": WRITTEN,
        "conflated": CONFLATED,
        "closed": CLOSED,
        "refused": REFUSED,
    }
    for name, n in columns.items():
        counts[index[name]] = n
    return counts


def test_the_server_and_the_contract_name_the_same_columns() -> None:
    assert COLUMNS == contract.COLUMNS
    assert set(contract.OUTCOMES) < set(COLUMNS)


def test_tallies_fold_into_totals_subjects_patterns_and_seconds() -> None:
    patterns = {"/a/x": ["/a/*"], "/a/y": ["/a/*"], "/b": []}
    accounts = DeliveryAccounts(lambda subject: patterns[subject])
    accounts.close_second(["/a/*"])
    accounts.absorb({"/a/x": tally(published=2, due=6, written=5, conflated=1)})
    accounts.absorb({"/a/x": tally(due=3, written=2), "/b": tally(refused=4)})
    accounts.absorb({"/a/y": tally(due=1, closed=1), "/b": new_tally()})
    accounts.close_second(["/a/*"])
    x = accounts.subjects["/a/x"].row()
    assert (x["published"], x["due"], x["written"], x["conflated"]) == (2, 9, 7, 1)
    assert contract.unaccounted(x) == 1  # one still in flight
    pattern = accounts.patterns["/a/*"].row()
    assert (pattern["due"], pattern["written"], pattern["closed"]) == (10, 7, 1)
    assert accounts.totals.row()["refused"] == 4
    assert accounts.totals.rate()["due"] == 10  # the second that closed
    accounts.close_second(["/a/*"])
    assert accounts.totals.rate()["due"] == 0
    assert accounts.totals.row()["due"] == 10
    assert [name for name, _ in accounts.top(2)] == ["/a/x", "/a/y"]
    accounts.close_second([])  # unwatched: the pattern's row goes
    assert accounts.patterns == {}


def test_past_the_cap_the_subject_with_the_fewest_due_is_forgotten_not_the_totals() -> None:
    accounts = DeliveryAccounts(subject_cap=2)
    accounts.absorb({"/big": tally(due=10, written=10), "/small": tally(due=1, written=1)})
    accounts.absorb({"/new": tally(due=5, written=5)})
    assert set(accounts.subjects) == {"/big", "/new"}
    assert accounts.forgotten == 1
    assert accounts.totals.row()["due"] == 16


def test_a_flood_of_one_shot_subjects_is_counted_without_following_each() -> None:
    """Publishes nobody was due (no subscriber, no refusal) count in the totals and patterns and
    create no subject account: the CI run where 20,000 one-shot subjects kept 10,000 accounts
    (10 MiB kept after the subjects' eviction, test_flood_rss) and scanned them all per new
    subject past the cap."""
    accounts = DeliveryAccounts(lambda subject: ["/flood/*"])
    accounts.close_second(["/flood/*"])
    accounts.absorb({f"/flood/s{i}": tally(published=1) for i in range(20_000)})
    accounts.close_second(["/flood/*"])
    assert accounts.subjects == {}
    assert accounts.totals.row()["published"] == 20_000
    assert accounts.patterns["/flood/*"].row()["published"] == 20_000
    # a followed subject keeps counting its publishes
    accounts.absorb({"/flood/s1": tally(published=1, due=1, written=1)})
    accounts.absorb({"/flood/s1": tally(published=1)})
    assert accounts.subjects["/flood/s1"].row()["published"] == 2


def test_past_the_cap_an_eighth_is_forgotten_at_once_and_idle_rates_clear() -> None:
    accounts = DeliveryAccounts(subject_cap=80)
    for i in range(80):
        accounts.absorb({f"/s{i:03}": tally(due=i + 1, written=i + 1)})
    assert accounts.forgotten == 0
    accounts.absorb({"/new": tally(due=1000, written=1000)})
    assert accounts.forgotten == 10  # the ten with the fewest due, in one pass
    assert sorted(accounts.subjects)[:2] == ["/new", "/s010"]
    assert len(accounts.subjects) == 71
    assert accounts.totals.row()["due"] == sum(range(1, 81)) + 1000
    accounts.close_second([])
    assert accounts.subjects["/new"].rate()["due"] == 1000
    accounts.close_second([])  # idle for a second: its rate reads zero
    assert accounts.subjects["/new"].rate()["due"] == 0
    assert accounts.subjects["/new"].row()["due"] == 1000


def test_every_view_formats_the_one_document() -> None:
    accounts = DeliveryAccounts(lambda subject: ["/a/*"])
    accounts.absorb({"/a/x": tally(published=1, due=3, written=2, conflated=1)})
    accounts.close_second(["/a/*"])
    document = read_accounting(accounts, "m1", 5)
    assert document.unaccounted == 0
    (row,) = document.subjects
    assert (row.name, row.total["due"], row.second["written"], row.unaccounted) == (
        "/a/x",
        3,
        2,
        0,
    )
    lines = list(stats_lines(stats_section(document)))
    assert "deliveries.due_total 3" in lines
    assert "deliveries.pattern./a/*.conflated_total 1" in lines
    samples = {
        (metric.name, tuple(sorted(sample.labels.items()))): sample.value
        for metric in accounting_metrics(document)
        for sample in metric.samples
    }
    assert samples[("pushgrid_deliveries", (("column", "written"),))] == 2
    key = ("pushgrid_subject_deliveries", (("column", "due"), ("subject", "/a/x")))
    assert samples[key] == 3
    assert samples[("pushgrid_deliveries_unaccounted", (("pattern", "/a/*"),))] == 0


def test_the_console_rows_say_whether_due_adds_up_and_by_how_much() -> None:
    """console/pages/delivery_accounting.py: a row that adds up, one off by 3, unreachable."""
    columns = dict.fromkeys(contract.COLUMNS, 0)
    good = {"name": "/a", "total": {**columns, "due": 4, "written": 4}, "unaccounted": 0}
    off = {"name": "/b", "total": {**columns, "due": 5, "written": 2}, "unaccounted": 3}
    document = {
        "totals": {"name": "", "total": {**columns, "due": 9, "written": 6}, "unaccounted": 3},
        "subjects": [good, off],
        "patterns": [],
        "members": [{"member": "m2", "reachable": False}],
    }
    text = str(render_accounting(document).to_plotly_json())  # type: ignore[no-untyped-call]
    assert "adds up" in text
    assert "off by 3" in text
    assert "not read: m2" in text
    assert "no pattern watched" in text
    props = holds_cell(off).to_plotly_json()["props"]  # type: ignore[no-untyped-call]
    assert (props["data-holds"], props["data-unaccounted"]) == ("False", "3")


def test_offenders_group_closes_by_client_id_else_host_most_closes_first() -> None:
    """admin_api/services/accounting.py: the cluster-wide ranking of repeat offenders."""

    def close(member: str, second: int, client_id: str, remote: str) -> SlowConsumerOut:
        return SlowConsumerOut(
            member=member,
            at=datetime.fromtimestamp(second, UTC),
            session=f"s{second}",
            remote=remote,
            client_id=client_id,
            transport="websocket",
            subjects=[f"/x/{second}"],
            subject_count=1,
            queued_bytes=second * 10,
            limit=65536,
        )

    records = [
        close("m1", 1, "app-1", "10.0.0.1:5000"),
        close("m2", 5, "app-1", "10.0.0.9:6000"),  # the same client id elsewhere
        close("m1", 3, "", "10.0.0.2:7000"),
        close("m1", 4, "", "10.0.0.2:7001"),  # the same host, no client id
        close("m2", 9, "", "10.0.0.3:7000"),
    ]
    ranked = offenders(records, 10)
    assert [(r.client, r.closes) for r in ranked] == [
        ("app-1", 2),
        ("10.0.0.2", 2),
        ("10.0.0.3", 1),
    ]
    first = ranked[0]
    assert (first.members, first.last_remote, first.subjects, first.max_queued_bytes) == (
        ["m1", "m2"],
        "10.0.0.9:6000",
        ["/x/1", "/x/5"],
        50,
    )
    assert len(offenders(records, 1)) == 1


def test_the_console_lists_offenders_with_their_closes_and_round_trip() -> None:
    item = {
        "client": "app-1",
        "closes": 3,
        "members": ["m1", "m2"],
        "last_remote": "10.0.0.9:6000",
        "subjects": [f"/x/{i}" for i in range(7)],
        "max_queued_bytes": 70_000,
        "compressed": True,
        "last_rtt_ms": 12.5,
        "last_at": "2026-11-28T06:00:01.123000Z",
    }
    text = str(render_offenders({"items": [item]}).to_plotly_json())  # type: ignore[no-untyped-call]
    for needle in (
        "app-1",
        "m1, m2",
        "10.0.0.9:6000",
        "/x/4 ...",
        "deflate",
        "2026-11-28 06:00:01",
    ):
        assert needle in text, needle
    empty = str(render_offenders({"items": []}).to_plotly_json())  # type: ignore[no-untyped-call]
    assert "no slow consumer" in empty
