"""Subject syntax: spec 4.1.1 and Table 4.2 (architecture guide v5, 2019)."""

from __future__ import annotations

import pytest

from pushgrid.protocol.errors import ErrorCode, InvalidSubject, RemoteProtocolError
from pushgrid.protocol.subjects import MAX_SUBJECT_BYTES, subject_error, validate_subject

# Table 4.2 "Examples of Invalid Subjects": subject -> a word the reason must contain.
TABLE_4_2 = [
    pytest.param("/Stocks//IBM/BID", "empty", id="empty-second-segment"),
    pytest.param("Stocks/IBM/BID", "start with '/'", id="no-leading-slash"),
    pytest.param("/Stocks/IBM/BID/", "last segment is empty", id="trailing-slash"),
    pytest.param("/", "single empty segment", id="single-slash"),
    pytest.param("/Stocks", "two or more segments", id="one-segment"),
]


@pytest.mark.parametrize(("subject", "reason"), TABLE_4_2)
def test_table_4_2_subject_is_rejected_with_its_reason(subject: str, reason: str) -> None:
    error = subject_error(subject)
    assert error is not None
    assert reason in error


@pytest.mark.parametrize(("subject", "reason"), TABLE_4_2)
def test_validate_subject_raises_invalid_subject(subject: str, reason: str) -> None:
    with pytest.raises(InvalidSubject) as info:
        validate_subject(subject, request_id=7)
    error = info.value
    assert isinstance(error, RemoteProtocolError)
    assert error.code is ErrorCode.INVALID_SUBJECT
    assert error.subject == subject
    assert error.request_id == 7
    assert reason in error.reason
    assert error.reason in error.message
    assert repr(subject) in error.message


def test_empty_second_segment_is_not_reported_as_a_missing_slash() -> None:
    # "/Stocks//IBM/BID" starts with '/' and has no trailing '/': the problem is the empty segment.
    error = subject_error("/Stocks//IBM/BID")
    assert error is not None
    assert "'//'" in error or "segment is empty" in error


@pytest.mark.parametrize(
    "subject",
    [
        "",
        "//",
        "///",
        "//a",
        "/a//",
        "a/b",
        " /a/b",
        "Stocks",
        "/a/b//c",
    ],
)
def test_more_malformed_subjects_are_rejected(subject: str) -> None:
    assert subject_error(subject) is not None
    with pytest.raises(InvalidSubject):
        validate_subject(subject)


VALID = [
    "/Stocks/NYSE/IBM",
    "/a/b",
    "/Börse/ÄÖÜ/日本",
    "/Stocks/NYSE/IBM/BID/level/1/2/3/4/5/6/7/8/9/10",
    "/" + "/".join(f"s{i}" for i in range(200)),
    "/with space/and tab-free text",
    "/punct/!\"#$%&'()*+,-.:;<=>?@[\\]^_`{|}~",
    "/*/*",
    "/émoji/😀",
    "/a/b.c",
    "/1/2",
]


@pytest.mark.parametrize("subject", VALID)
def test_valid_subjects_are_accepted(subject: str) -> None:
    assert subject_error(subject) is None
    assert validate_subject(subject) is subject


@pytest.mark.parametrize(
    "subject",
    [
        # A ZWJ inside an emoji sequence shows (it joins two symbols); a no-break space (Zs)
        # inside a company name is visible text.
        "/Emoji/👨\u200d👩\u200d👧",
        "/Emoji/👨\U0001f3fd\u200d⚕\ufe0f",
        "/Stocks/Soci\u00e9t\u00e9\u00a0G\u00e9n\u00e9rale",
    ],
    ids=["zwj-emoji", "zwj-emoji-modifier", "no-break-space"],
)
def test_emoji_joiners_and_visible_spaces_are_accepted(subject: str) -> None:
    assert subject_error(subject) is None


@pytest.mark.parametrize(
    "char",
    [
        "\u200b",
        "\u200c",
        "\u200d",
        "\u2060",
        "\ufeff",
        "\u202e",
        "\u00ad",
        "\U000e0041",
        "\u2028",
        "\u2029",
        "\ue000",
        "\U0010ffff",
    ],
    ids=lambda c: f"U+{ord(c):04X}",
)
def test_invisible_characters_are_rejected(char: str) -> None:
    # Zero-width space/joiners, word joiner, BOM, bidi override, soft hyphen, tag, line and
    # paragraph separators, private use, unassigned: two subjects must not look alike.
    for subject in (f"/a/b{char}c", f"/{char}/b", f"/IBM/x{char}"):
        error = subject_error(subject)
        assert error is not None, subject
        assert f"U+{ord(char):04X}" in error
        with pytest.raises(InvalidSubject):
            validate_subject(subject)


@pytest.mark.parametrize(
    "char",
    ["\x00", "\x01", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f", "\x85", "\x9f"],
    ids=lambda c: f"U+{ord(c):04X}",
)
def test_control_characters_are_rejected(char: str) -> None:
    for subject in (f"/a/b{char}c", f"/{char}/b", f"/a/{char}"):
        error = subject_error(subject)
        assert error is not None
        assert "control" in error
        with pytest.raises(InvalidSubject):
            validate_subject(subject)


def test_lone_surrogate_is_rejected() -> None:
    # Not encodable as UTF-8 (spec 4.1.4): can never be a subject on the wire.
    assert subject_error("/a/\ud800") is not None


@pytest.mark.parametrize(
    "value", [None, 1, 1.5, b"/a/b", ["/a", "b"], ("/a/b",), {"subject": "/a/b"}, True]
)
def test_non_strings_are_rejected(value: object) -> None:
    error = subject_error(value)
    assert error is not None
    assert "string" in error
    with pytest.raises(InvalidSubject) as info:
        validate_subject(value)
    assert info.value.code is ErrorCode.INVALID_SUBJECT


def _subject_of_bytes(size: int, filler: str = "x") -> str:
    prefix = "/a/"
    per_char = len(filler.encode("utf-8"))
    remaining = size - len(prefix)
    assert remaining % per_char == 0
    subject = prefix + filler * (remaining // per_char)
    assert len(subject.encode("utf-8")) == size
    return subject


@pytest.mark.parametrize(
    "filler", ["x", "é", "日", "😀"], ids=["1-byte", "2-byte", "3-byte", "4-byte"]
)
def test_length_limit_counts_utf8_bytes(filler: str) -> None:
    per_char = len(filler.encode("utf-8"))
    # the largest multiple of per_char that fits, then one character more
    fitting = 3 + ((MAX_SUBJECT_BYTES - 3) // per_char) * per_char
    ok = _subject_of_bytes(fitting, filler)
    assert subject_error(ok) is None
    too_long = ok + filler
    assert len(too_long.encode("utf-8")) > MAX_SUBJECT_BYTES
    error = subject_error(too_long)
    assert error is not None
    assert str(MAX_SUBJECT_BYTES) in error


def test_length_limit_exact_boundary() -> None:
    assert MAX_SUBJECT_BYTES == 1024
    assert subject_error(_subject_of_bytes(MAX_SUBJECT_BYTES)) is None
    assert subject_error(_subject_of_bytes(MAX_SUBJECT_BYTES + 1)) is not None


def test_multibyte_subject_under_the_char_count_but_over_the_byte_count_is_rejected() -> None:
    subject = "/a/" + "日" * 400  # 403 characters, 1203 bytes
    assert len(subject) < MAX_SUBJECT_BYTES < len(subject.encode("utf-8"))
    assert subject_error(subject) is not None


@pytest.mark.parametrize("value", [5, None, "/a", "a/b", "/a//b", "/a/b\u200b"])
def test_one_pair_of_validators_one_wording(value: object) -> None:
    """subject_error gives the reason, validate_subject raises with the one wording of the
    error; the client's check and the server's reporters (HTTP, Jolokia, admin API) use them, so
    a subject that is not even a string reads the same everywhere (ADR 036)."""
    from pushgrid.client.protocol import check_subject
    from pushgrid.protocol.errors import invalid_subject_message

    reason = subject_error(value)
    assert reason is not None
    with pytest.raises(InvalidSubject) as raised:
        validate_subject(value)
    assert raised.value.message == invalid_subject_message(value, reason)
    with pytest.raises(ValueError, match="invalid subject") as refused:
        check_subject(value)  # type: ignore[arg-type]
    assert str(refused.value) == raised.value.message
