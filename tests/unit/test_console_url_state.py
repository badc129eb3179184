"""A page's controls in the URL's query (issue 35 item 6): read and written back unchanged, a
value the control does not offer ignored (the default), defaults left out of the link."""

from __future__ import annotations

from pushgrid.console.url_state import MAX_TEXT, UrlField, read, write

FIELDS = (
    UrlField("range", "r", "15m", ["5m", "15m", "1h"]),
    UrlField("since", "s", 0, [0, 3600]),
    UrlField("who", "w", None),
)


def test_a_link_round_trips() -> None:
    values = {"range": "1h", "since": 3600, "who": "olivia"}
    search = write(values, FIELDS)
    assert search == "?range=1h&since=3600&who=olivia"
    assert read(search, FIELDS) == values  # the int comes back an int (the control's value)


def test_defaults_are_left_out_and_bad_values_ignored() -> None:
    assert write({"range": "15m", "since": 0, "who": ""}, FIELDS) == ""
    assert read("", FIELDS) == {"range": "15m", "since": 0, "who": None}
    assert read("?range=99y&since=7&who=" + "x" * 500, FIELDS) == {
        "range": "15m",
        "since": 0,
        "who": "x" * MAX_TEXT,
    }
