"""A page's controls in the URL's query (issue 35 item 6): read and written back unchanged, a
value the control does not offer ignored (the default), defaults left out of the link."""

from __future__ import annotations

from dash import no_update

from pushgrid.console.url_state import MAX_TEXT, UrlField, answer, read, write

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


def test_the_page_laid_out_takes_its_controls_from_the_link_and_leaves_the_link_alone() -> None:
    shown = ["15m", 0, None]
    for trigger in (None, "r"):  # Dash names a new page's controls as triggered
        assert answer(FIELDS, shown, "?range=1h&who=olivia", False, trigger) == (
            no_update,
            "1h",
            no_update,
            "olivia",
            True,
        )


def test_a_click_before_the_first_read_answered_is_kept_and_written() -> None:
    """A loaded admin API: Dash dropped the first read's answer and runs the callback again
    for the click, the marker still False. The click wins, the link sets the rest."""
    shown = ["5m", 0, None]  # the person chose 5m
    assert answer(FIELDS, shown, "?range=1h&who=olivia", False, "r") == (
        "?range=5m&who=olivia",
        no_update,
        no_update,
        "olivia",
        True,
    )


def test_once_read_a_change_rewrites_the_link() -> None:
    assert answer(FIELDS, ["1h", 3600, None], "", True, "s") == (
        "?range=1h&since=3600",
        no_update,
        no_update,
        no_update,
        no_update,
    )
    assert answer(FIELDS, ["15m", 0, None], "", True, "s")[0] is no_update
