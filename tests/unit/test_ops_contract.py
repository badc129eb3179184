"""The typed ops contract (pushgrid/ops/, ADR 035): the server's MBeans are built from it, the
admin API's views decode what the server serves, and the attributes outside clients read
(Telegraf, the PyPI jolokia client, jmxquery, Prometheus) keep their names, types and order."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest
from test_monitoring_views import beans

from pushgrid.admin_api.member_client import MemberEndpoint, MemberFailure
from pushgrid.admin_api.services.hot import parse_hot
from pushgrid.admin_api.services.watched import parse_watched
from pushgrid.metrics.hotsubjects import HotSubjectSketches
from pushgrid.metrics.indicators import INDICATORS, Indicator
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops import names
from pushgrid.ops.accounting import COLUMNS as ACCOUNTING_COLUMNS
from pushgrid.ops.accounting import EMPTY_ACCOUNTING, AccountingDocument
from pushgrid.ops.attributes import ContractError, attributes, decode
from pushgrid.ops.attributes import names as attribute_names
from pushgrid.ops.canary import CanaryDocument
from pushgrid.ops.hot import HotSubjectsDocument
from pushgrid.ops.indicator import (
    WINDOW_LABELS,
    IndicatorDocument,
    IndicatorLive,
    IndicatorSamples,
    window_attribute,
)
from pushgrid.ops.panel import MemberPanel, PanelAttributes
from pushgrid.ops.server import (
    ServerDocument,
    ServerIdentity,
    ServerSettingsView,
    ServerTotals,
    list_text,
    text_list,
)
from pushgrid.ops.statistics import TrendQuery
from pushgrid.ops.watched import WatchedSubjectsDocument
from pushgrid.server.core.watch import Watchlist
from pushgrid.server.monitoring.mbeans import MBean

# What outside clients read before the contract (main at 28f5ff1): name, Java type, in order.
SERVER_BEFORE = [
    ("ServerName", "java.lang.String"),
    ("Version", "java.lang.String"),
    ("Uptime", "double"),
    ("StartTime", "long"),
    ("Engine", "java.lang.String"),
    ("DeliveryMode", "java.lang.String"),
    ("ConnectedUsers", "long"),
    ("Subscriptions", "long"),
    ("Counters", "java.util.Map"),
    ("Configuration", "java.util.Map"),
]
PANEL_BEFORE = [
    ("CpuPercent", "double"),
    ("CpuSeconds", "double"),
    ("ResidentBytes", "long"),
    ("OpenFiles", "long"),
    ("MaxOpenFiles", "long"),
    ("EventLoopLag", "double"),
    ("EventLoopLagMax", "double"),
    ("FlushDelayP50", "double"),
    ("FlushDelayP99", "double"),
    ("Flushes", "long"),
    ("SlowConsumers", "long"),
    ("SlowConsumerDisconnects", "long"),
    ("ReplicaLagMax", "long"),
    ("Window", "double"),
    ("Panel", "java.util.Map"),
]


def served(bean: MBean) -> dict[str, Any]:
    """A Jolokia ``read`` of every attribute of one MBean, as JSON would carry it."""
    values = {attribute.name: attribute.getter() for attribute in bean.attributes}
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(values))
    return decoded


def test_the_server_mbean_keeps_every_attribute_and_adds_typed_settings() -> None:
    server = beans()[names.SERVER]
    listed = [(a.name, a.type) for a in server.attributes]
    assert listed == [*SERVER_BEFORE, ("Settings", "java.util.Map")]
    assert [(s.name, s.type) for s in attributes(ServerDocument)] == listed
    values = served(server)
    # outside clients still read non-scalar settings as Python text; Settings carries a list as
    # text without '"' (jmxquery prints no arrays and breaks on a quote) that the contract decodes
    assert values["Configuration"]["Listen"] == "['*:8800']"
    assert values["Settings"]["Listen"] == "*:8800"
    assert decode(ServerSettingsView, values, "Server").settings.listen == ["*:8800"]
    assert values["Settings"]["MonitorPassword"] == "********"


def test_the_member_panel_mbean_is_the_contract_panel() -> None:
    panel = beans()[names.MEMBER_PANEL]
    assert [(a.name, a.type) for a in panel.attributes] == PANEL_BEFORE
    values = served(panel)
    one = MemberPanel.model_validate(values["Panel"])
    assert values["ResidentBytes"] == one.rss_bytes
    assert values["Window"] == one.window_seconds
    assert list(values["Panel"]) == list(MemberPanel.model_fields)


@pytest.mark.parametrize("view", [ServerIdentity, ServerSettingsView, ServerTotals])
def test_every_admin_view_decodes_what_the_server_serves(view: type[msgspec.Struct]) -> None:
    served_names = {a.name for a in beans()[names.SERVER].attributes}
    assert set(attribute_names(view)) <= served_names
    values = served(beans()[names.SERVER])
    document = decode(view, {name: values[name] for name in attribute_names(view)}, "Server")
    if isinstance(document, ServerIdentity):
        assert (document.server_name, document.settings.listen) == ("node-a", ["*:8800"])


def test_an_answer_that_does_not_fit_names_the_attribute() -> None:
    values = served(beans()[names.SERVER])
    values["StartTime"] = "yesterday"
    with pytest.raises(ContractError, match=r"pushgrid:type=Server .*StartTime"):
        decode(ServerIdentity, values, names.SERVER)
    values = served(beans()[names.SERVER])
    values["Settings"]["Listen"] = ["127.0.0.1:8800"]  # a list: what jmxquery cannot print
    with pytest.raises(
        ContractError, match=r"Expected `str`, got `array` - at `\$.Settings.Listen`"
    ):
        decode(ServerSettingsView, values, names.SERVER)


@pytest.mark.parametrize(
    "items",
    [[], ["127.0.0.1:8800"], ["*:8800", "[::1]:8801"], ['a, "b"', "c\\d", "50%", "x y"]],
)
def test_a_list_setting_survives_the_text_and_holds_no_quote(items: list[str]) -> None:
    text = list_text(items)
    assert text_list(text) == items
    assert '"' not in text
    assert "\\" not in text


def test_panel_attributes_cover_every_panel_number() -> None:
    fields = {f.name for f in msgspec.structs.fields(PanelAttributes)} - {"panel"}
    assert fields == set(MemberPanel.model_fields)


def test_every_registered_name_is_in_the_contract() -> None:
    contract = {
        value for key, value in vars(names).items() if key.isupper() and isinstance(value, str)
    }
    for name, bean in beans().items():
        assert name in contract or bean.object_name.get("type") == "Indicator", name
        for operation in bean.operations:
            assert operation.name in contract, (name, operation.name)


def test_the_trend_query_is_the_route_s_query_parameters() -> None:
    """``trend(...)`` is said once: the console's providers send TrendQuery.params(), the route
    takes the same names and builds the query for its service."""
    from pushgrid.admin_api.routes.statistics import get_trend

    taken = set(inspect.signature(get_trend).parameters) - {"principal", "db", "admin"}
    assert taken == set(TrendQuery.__struct_fields__)
    query = TrendQuery(scope="cluster", indicator="connected_users", window="1h", since=5)
    assert query.params() == {
        "scope": "cluster",
        "indicator": "connected_users",
        "window": "1h",
        "since": 5,
        "until": None,
    }


def test_the_accounting_mbean_is_the_contract_document_and_decodes_back() -> None:
    """ADR 054: every attribute in the document's order; a read decodes into the document."""
    bean = beans()[names.ACCOUNTING]
    assert [(a.name, a.type) for a in bean.attributes] == [
        (s.name, s.type) for s in attributes(AccountingDocument)
    ]
    document = decode(AccountingDocument, served(bean), "Accounting")
    assert document == EMPTY_ACCOUNTING  # the test node has counted nothing
    assert list(document.totals) == list(ACCOUNTING_COLUMNS)


def test_the_canary_mbean_is_the_contract_document_and_decodes_back() -> None:
    """What the admin API's matrix reads (ADR 049): every attribute in the document's order, and
    the read decodes into the document (a node with no pair yet: an empty list)."""
    canary = beans()[names.CANARY]
    assert [(a.name, a.type) for a in canary.attributes] == [
        (s.name, s.type) for s in attributes(CanaryDocument)
    ]
    assert [a.name for a in canary.attributes][-1] == "Pairs"
    document = decode(CanaryDocument, served(canary), "Canary")
    assert (document.member, document.stale_after, document.pairs) == ("node-a", 3.0, [])
    assert [o.name for o in canary.operations] == [names.CANARY_PROBE_KEY]


INDICATOR_BEFORE = [  # what outside clients read before the Indicator document (main 2b84b5c)
    ("Description", "java.lang.String"),
    ("Unit", "java.lang.String"),
    ("Current", "double"),
    ("SampleTime", "long"),
    ("Recent", "java.util.Map"),
    ("Total", "long"),
    ("Windows", "java.util.Map"),
]


@pytest.mark.parametrize("indicator", INDICATORS, ids=lambda i: i.mbean)
def test_an_indicator_mbean_is_the_contract_document_then_its_scalars(
    indicator: Indicator,
) -> None:
    bean = beans()[names.indicator(indicator.mbean)]
    listed = [(a.name, a.type) for a in bean.attributes]
    assert listed[:7] == INDICATOR_BEFORE
    assert listed[:7] == [(s.name, s.type) for s in attributes(IndicatorDocument)]
    scalars = [window_attribute(stat, w) for w in WINDOW_NAMES for stat in WINDOW_LABELS]
    assert [name for name, _ in listed[7:]] == scalars
    values = served(bean)
    document = decode(
        IndicatorDocument, {n: values[n] for n, _ in listed[:7]}, str(bean.object_name)
    )
    assert document.description == indicator.description
    assert list(document.windows) == list(WINDOW_NAMES)
    assert document.windows["1m"].count == values["Count1m"]


@pytest.mark.parametrize("view", [IndicatorLive, IndicatorSamples])
def test_the_admin_api_reads_parts_of_the_indicator_document(view: type[msgspec.Struct]) -> None:
    served_names = [s.name for s in attributes(IndicatorDocument)]
    assert set(attribute_names(view)) <= set(served_names)
    bean = beans()[names.indicator(INDICATORS[0].mbean)]
    values = served(bean)
    decoded = decode(view, {n: values[n] for n in attribute_names(view)}, str(bean.object_name))
    assert decoded.sample_time == values["SampleTime"]  # type: ignore[attr-defined]


def test_an_indicator_that_does_not_fit_names_its_mbean_and_attribute() -> None:
    from pushgrid.admin_api.services.history import samples_of
    from pushgrid.admin_api.services.live import parse_indicators

    mbean = names.indicator(INDICATORS[0].mbean)
    with pytest.raises(ContractError, match=r"ConnectedUsers.*Windows"):
        parse_indicators({mbean: {"Current": 1.0, "SampleTime": 5, "Windows": "every"}})
    with pytest.raises(ContractError, match=r"ConnectedUsers.*Recent"):
        samples_of({mbean: {"Current": 1.0, "SampleTime": 5, "Recent": ["a"]}})


MEMBER = MemberEndpoint("m1", "http://127.0.0.1:1", "config")


class _Tally:
    """A hub's tally of one second: (incoming, outgoing, bytes out) per subject."""

    def __init__(self) -> None:
        self.tally = {"/a/1": [5, 50, 5000], "/a/2": [1, 2, 30]}

    def take_tally(self) -> dict[str, list[int]]:
        tally, self.tally = self.tally, {}
        return tally

    def subscriber_counts(self) -> list[tuple[str, int]]:
        return [("/a/1", 10), ("/a/2", 2)]


def test_the_hot_subjects_document_is_the_contract_s() -> None:
    """What ``metrics/hotsubjects.py`` builds (the MBean's ``Document``) decodes strictly into
    :class:`HotSubjectsDocument`, and the admin API's member view reads the same numbers."""
    sketches = HotSubjectSketches(_Tally(), top_n=5, capacity=50, window=2.0)
    sketches.fold(1_795_363_200)
    served_document = msgspec.json.decode(msgspec.json.encode(sketches.document()))
    document = msgspec.convert(served_document, HotSubjectsDocument, strict=True)
    assert set(document.rankings) == {"messages_in", "messages_out", "bytes_out", "subscribers"}
    assert [e.subject for e in document.rankings["messages_out"]] == ["/a/1", "/a/2"]
    member = parse_hot(MEMBER, served_document)
    assert member.top_n == 5
    assert [e.value for e in member.rankings["subscribers"]] == [10.0, 2.0]
    with pytest.raises(MemberFailure, match=r"HotSubjects.*rankings"):
        parse_hot(MEMBER, {"top_n": 5})


def test_the_watched_subjects_document_is_the_contract_s() -> None:
    watchlist = Watchlist(cap=4)
    watchlist.add("/a/*", source="config")
    watchlist.absorb({"/a/1": [5, 50, 5000, 500]})
    watchlist.read(1_795_363_200.5, 0.0, [("/a/1", 10), ("/b/1", 3)])
    served_document = msgspec.json.decode(msgspec.json.encode(watchlist.document()))
    document = msgspec.convert(served_document, WatchedSubjectsDocument, strict=True)
    (pattern,) = document.patterns
    assert (pattern.pattern, pattern.source, pattern.subscribers) == ("/a/*", "config", 10)
    member = parse_watched(MEMBER, served_document)
    assert member.max_patterns == 4
    assert set(member.patterns[0].indicators) == set(pattern.indicators)
    broken = {"patterns": [{"pattern": "/a/*", "subscribers": "ten"}]}
    with pytest.raises(MemberFailure, match=r"WatchedSubjects.*patterns"):
        parse_watched(MEMBER, broken)
