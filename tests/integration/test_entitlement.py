"""Entitlement = jwt: per-subject subscribe/publish permissions from an HS256 token."""

from __future__ import annotations

import time

import jwt
import pytest

SECRET = "integration-test-secret-0123456789abcdef"
PERMISSIONS = {"sub": ["/Stocks/*"], "pub": ["/Stocks/NYSE/IBM"]}


def token(permissions=None, secret: str = SECRET, **claims) -> str:
    payload = {
        "sub": "user-1",
        "exp": int(time.time()) + 3600,
        "permissions": PERMISSIONS if permissions is None else permissions,
    }
    payload.update(claims)
    return jwt.encode(payload, secret, algorithm="HS256")


@pytest.fixture(scope="module")
def jwt_server(module_server_factory):
    return module_server_factory(Entitlement="jwt", EntitlementJwtSecret=SECRET)


async def test_token_permissions_over_websocket(jwt_server, connect):
    client = await connect(jwt_server, token())
    allowed = await client.subscribe("/Stocks/NYSE/IBM")
    assert allowed["status"] == "allow"
    deeper = await client.subscribe("/Stocks/NASDAQ/AAPL")
    assert deeper["status"] == "allow", "/Stocks/* covers any deeper subject"
    denied = await client.subscribe("/Forex/EUR/USD")
    assert denied["type"] == "subscribed"
    assert denied["status"] == "deny"
    assert denied["reason"]
    assert denied["epoch"] is None
    assert denied["seq"] is None

    ok = await client.publish("/Stocks/NYSE/IBM", "193")
    assert ok["result"] == "ok"
    (message,) = await client.messages(1, "/Stocks/NYSE/IBM")
    assert message["content"] == "193"

    for subject in ("/Stocks/NYSE/MSFT", "/Forex/EUR/USD"):
        refused = await client.publish(subject, "1")
        assert refused["type"] == "publish_result"
        assert refused["result"] == "denied"
        assert refused["code"] == "denied"
        assert refused["seq"] is None
    # a denied subscription delivers nothing
    other = await connect(jwt_server, token({"all": ["/Forex/*"]}))
    assert (await other.publish("/Forex/EUR/USD", "1.08"))["result"] == "ok"
    assert await client.sync() == []


@pytest.mark.parametrize(
    "bad_token",
    [
        pytest.param(None, id="no-token"),
        pytest.param("not-a-jwt", id="garbage"),
        pytest.param(token(secret="some-other-secret-0123456789abcdef"), id="wrong-secret"),
        pytest.param(token(exp=int(time.time()) - 60), id="expired"),
    ],
)
async def test_without_a_valid_token_everything_is_denied(jwt_server, connect, bad_token):
    client = await connect(jwt_server, bad_token)
    denied = await client.subscribe("/Stocks/NYSE/IBM")
    assert denied["status"] == "deny"
    assert denied["reason"]
    refused = await client.publish("/Stocks/NYSE/IBM", "1")
    assert refused["result"] == "denied"
    async with jwt_server.http() as http:
        params = {"subject": "/Stocks/NYSE/IBM"}
        if bad_token is not None:
            params["token"] = bad_token
        response = await http.get("/snapshot", params=params)
        assert response.status_code == 403
        assert response.json()["code"] == "denied"


async def test_http_snapshot_and_publish_need_a_token(jwt_server, connect):
    good = token()
    subject = "/Stocks/NYSE/IBM"
    async with jwt_server.http() as http:
        response = await http.post("/publish", json={"subject": subject, "content": "201"})
        assert response.status_code == 403
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["code"] == "denied"

        response = await http.post(
            "/publish",
            json={"subject": subject, "content": "201", "fields": {"v": "1"}},
            headers={"Authorization": f"Bearer {good}"},
        )
        assert response.status_code == 200, response.text
        assert response.json()["result"] == "ok"

        # publishing outside the token's pub list is refused
        response = await http.post(
            "/publish",
            json={"subject": "/Stocks/NYSE/MSFT", "content": "1"},
            headers={"Authorization": f"Bearer {good}"},
        )
        assert response.status_code == 403

        # GET /snapshot: 403 without a token, 200 with it (query or Authorization header)
        no_token = await http.get("/snapshot", params={"subject": subject})
        assert no_token.status_code == 403
        assert no_token.headers["content-type"].startswith("application/problem+json")
        with_query = await http.get("/snapshot", params={"subject": subject, "token": good})
        assert (with_query.status_code, with_query.text) == (200, "201")
        with_header = await http.get(
            "/snapshot", params={"subject": subject}, headers={"Authorization": f"Bearer {good}"}
        )
        assert (with_header.status_code, with_header.text) == (200, "201")
        # a subject the token may not subscribe to
        forex = await http.get("/snapshot", params={"subject": "/Forex/EUR/USD", "token": good})
        assert forex.status_code == 403

    # the HTTP-published message is the WebSocket snapshot too
    client = await connect(jwt_server, good)
    await client.subscribe(subject)
    (snapshot,) = await client.messages(1, subject)
    assert (snapshot["kind"], snapshot["content"], snapshot["fields"]) == (
        "snapshot",
        "201",
        {"v": "1"},
    )
