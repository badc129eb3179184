"""Subject syntax at every entry point (spec 4.1.1, Table 4.2) and UTF-8 (spec 4.1.4)."""

from __future__ import annotations

import json

import pytest

# Table 4.2 "Examples of Invalid Subjects"
TABLE_4_2 = ["/Stocks//IBM/BID", "Stocks/IBM/BID", "/Stocks/IBM/BID/", "/", "/Stocks"]


async def test_table_4_2_subjects_are_rejected_on_websocket(server, connect, subject):
    """subscribe -> error invalid_subject; publish -> publish_result failed/invalid_subject.

    After each rejection the same connection still subscribes, publishes and receives.
    """
    client = await connect(server)
    good = subject("ok")
    assert (await client.subscribe(good))["status"] == "allow"
    for n, bad in enumerate(TABLE_4_2):
        error = await client.subscribe(bad)
        assert error["type"] == "error", error
        assert error["code"] == "invalid_subject"
        assert error["subject"] == bad
        assert error["message"]

        result = await client.publish(bad, "x")
        assert result["type"] == "publish_result", result
        assert result["result"] == "failed"
        assert result["code"] == "invalid_subject"
        assert result["subject"] == bad
        assert result["seq"] is None

        # the same connection keeps working
        ok = await client.publish_ok(good, f"after-{n}")
        (message,) = await client.messages(1, good)
        assert (message["content"], message["seq"]) == (f"after-{n}", ok["seq"])
    assert await client.sync() == [], "an invalid subject must not create a subscription"


async def test_invalid_subject_in_a_multi_subject_subscribe(server, connect, subject):
    client = await connect(server)
    good = subject()
    await client.send(
        {"op": "subscribe", "id": 5, "subjects": [{"subject": "/Stocks"}, {"subject": good}]}
    )
    error = await client.expect("error", id=5)
    assert (error["code"], error["subject"]) == ("invalid_subject", "/Stocks")
    subscribed = await client.expect("subscribed", id=5)
    assert (subscribed["subject"], subscribed["status"]) == (good, "allow")


@pytest.mark.parametrize("bad", TABLE_4_2)
async def test_table_4_2_subjects_are_rejected_over_http(server, bad):
    async with server.http() as http:
        snapshot = await http.get("/snapshot", params={"subject": bad})
        assert snapshot.status_code == 400
        assert snapshot.headers["content-type"].startswith("application/problem+json")
        problem = snapshot.json()
        assert problem["status"] == 400
        assert problem["code"] == "invalid_subject"
        assert problem["detail"]

        publish = await http.post("/publish", json={"subject": bad, "content": "x"})
        assert publish.status_code == 400
        assert publish.headers["content-type"].startswith("application/problem+json")
        assert publish.json()["code"] == "invalid_subject"

        # the server is fine afterwards
        assert (await http.get("/health")).status_code == 200


async def test_snapshot_without_subject_parameter_is_400(server):
    async with server.http() as http:
        response = await http.get("/snapshot")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_subject"


async def test_utf8_subject_content_and_fields_round_trip(server, connect):
    s = "/Börse/ÄÖÜ/日本"
    content = "Grüße aus München – 日本語 😀"
    fields = {"Straße": "Ölweg ß", "通貨": "¥ 円"}
    publisher = await connect(server)
    sub = await connect(server)
    await sub.subscribe(s)
    result = await publisher.publish_ok(s, content, fields)
    assert result["subject"] == s
    (update,) = await sub.messages(1, s)
    assert (update["subject"], update["content"], update["fields"]) == (s, content, fields)

    fresh = await connect(server)
    await fresh.subscribe(s)
    (snapshot,) = await fresh.messages(1, s)
    assert snapshot["kind"] == "snapshot"
    assert (snapshot["content"], snapshot["fields"]) == (content, fields)

    async with server.http() as http:
        text = await http.get("/snapshot", params={"subject": s})
        assert text.status_code == 200
        assert "utf-8" in text.headers["content-type"].lower()
        assert text.content.decode("utf-8") == content
        doc = await http.get(
            "/snapshot", params={"subject": s}, headers={"Accept": "application/json"}
        )
        assert doc.json()["subject"] == s
        assert doc.json()["fields"] == fields

        # HTTP publish with a UTF-8 JSON body reaches the WebSocket subscriber intact
        body = json.dumps({"subject": s, "content": "Ünïcödé ✓", "fields": {"ä": "ö"}})
        response = await http.post(
            "/publish", content=body.encode("utf-8"), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 200, response.text
        assert response.json()["seq"] == result["seq"] + 1
    (update,) = await sub.messages(1, s)
    assert (update["content"], update["fields"]) == ("Ünïcödé ✓", {"ä": "ö"})
