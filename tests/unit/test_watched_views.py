"""Watched subjects in the views: /stats text lines stay ``name value`` whatever the pattern,
Prometheus carries the pattern label only, meta-subjects name each pattern reversibly."""

from __future__ import annotations

from urllib.parse import unquote

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.readmodel import ArchiveReading, ReadModel, build_read_model
from pushgrid.server.core.watch import Watchlist
from pushgrid.server.monitoring import watched_view

PATTERNS = ("/Stocks/NYSE/*", "/a b/ü/*", "*")


def model_with_patterns() -> ReadModel:
    watchlist = Watchlist()
    for pattern in PATTERNS:
        watchlist.add(pattern, "config")
    watchlist.read(100.0, 0.0, [])
    watchlist.absorb({"/Stocks/NYSE/IBM": [3, 6, 600, 30], "/a b/ü/x": [1, 0, 0, 5]})
    watchlist.read(101.0, 1.0, [("/Stocks/NYSE/IBM", 2)])
    return build_read_model(
        101,
        dict.fromkeys(INDICATOR_NAMES, 0.0),
        {},
        ArchiveReading(False, 0.0, 0),
        watched=watchlist.document(),
    )


def test_stats_lines_are_name_value_pairs_with_the_pattern_encoded() -> None:
    model = model_with_patterns()
    lines = watched_view.stats_lines(model.watched)
    values = dict(line.split(" ") for line in lines)
    assert all(len(line.split(" ")) == 2 for line in lines)
    assert values["watched.%2FStocks%2FNYSE%2F*.messages_in_total"] == "3"
    assert values["watched.%2Fa%20b%2F%C3%BC%2F*.bytes_in_total"] == "5"
    assert values["watched.*.messages_out_total"] == "6"


def test_prometheus_labels_are_patterns_only() -> None:
    model = model_with_patterns()
    families = list(watched_view.prometheus_metrics(model.watched))
    labels = {
        sample.labels.get("pattern")
        for family in families
        for sample in family.samples
        if family.name != "pushgrid_watched_patterns"
    }
    assert labels == set(PATTERNS)
    (received,) = [f for f in families if f.name == "pushgrid_watched_messages_received"]
    assert {s.labels["pattern"]: s.value for s in received.samples}["*"] == 4


def test_meta_subjects_name_each_pattern_reversibly() -> None:
    model = model_with_patterns()
    messages = watched_view.meta_messages(model, "/pushgrid/n1")
    overview, *per_pattern = messages
    assert overview.subject == "/pushgrid/n1/watched"
    assert overview.fields == {p: m.subject for p, m in zip(PATTERNS, per_pattern, strict=True)}
    for pattern, message in zip(PATTERNS, per_pattern, strict=True):
        assert unquote(message.subject.rsplit("/", 1)[1]) == pattern
        assert message.content == pattern
        assert message.retained
    assert per_pattern[0].fields["messages_in_total"] == "3"
    assert per_pattern[0].fields["subscribers"] == "2"
