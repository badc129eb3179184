"""Entitlement gaps of issue 13 against a real server: a token's exp closes the connection
(4006) unless a ``token`` op refreshed it, tokens without exp are refused by default, RS256 and
ES256 tokens work end to end, and ``Entitlement = custom:NAME`` asks a plug-in found through
an entry point (the example under deploy/entitlement-example)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from .pgtest import run_cli, write_conf

SECRET = "hardening-test-secret-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "entitlement-example"
ALL = {"all": ["*"]}


def hs_token(permissions: dict[str, list[str]] | None = None, **claims: Any) -> str:
    payload: dict[str, Any] = {"sub": "u", "permissions": permissions or ALL, **claims}
    return jwt.encode(payload, SECRET, algorithm="HS256")


@pytest.fixture(scope="module")
def jwt_server(module_server_factory):
    return module_server_factory(Entitlement="jwt", EntitlementJwtSecret=SECRET)


async def test_token_expiry_closes_the_connection_with_4006(jwt_server, connect):
    # exp is whole seconds: +3 leaves the connect and subscribe at least 2 s (+2 left as
    # little as 1 s, which a loaded machine can spend before the subscribe is answered)
    client = await connect(jwt_server, hs_token(exp=int(time.time()) + 3))
    assert (await client.subscribe("/exp/a"))["status"] == "allow"
    assert await client.wait_closed(timeout=15) == 4006
    assert "token" in (client.close_reason or "")


async def test_token_refresh_keeps_the_connection_and_revokes(jwt_server, connect):
    # whole seconds: at least 2 s for the steps before the refresh (+2 left as little as 1 s)
    first_exp = int(time.time()) + 3
    client = await connect(jwt_server, hs_token(exp=first_exp))
    assert (await client.subscribe("/refresh/a"))["status"] == "allow"
    assert (await client.subscribe("/other/b"))["status"] == "allow"
    # A bad token is refused and the current one stays.
    await client.send({"op": "token", "id": 1, "token": "not-a-jwt"})
    denied = await client.expect("token_result", id=1)
    assert denied["result"] == "denied"
    assert "invalid token" in denied["reason"]
    new_exp = int(time.time()) + 3600
    narrower = hs_token({"all": ["/refresh/*"]}, exp=new_exp)
    await client.send({"op": "token", "id": 2, "token": narrower})
    result = await client.expect("token_result", id=2)
    assert result == {
        "type": "token_result",
        "result": "ok",
        "id": 2,
        "expires": new_exp,
        "reason": None,
        "revoked": ["/other/b"],
    }
    # Past the first token's exp the connection is still open, with the new permissions
    # (measured from that exp, not from now: the steps above may have taken a while).
    deadline = first_exp + 1.5
    while time.time() < deadline:
        await client.sync()
    assert not client.closed.is_set()
    assert (await client.publish("/refresh/c", "x"))["result"] == "ok"
    denied = await client.publish("/other/b", "x")
    assert denied["result"] == "denied"


async def test_token_without_exp_is_refused_unless_configured(jwt_server, server_factory, connect):
    client = await connect(jwt_server, hs_token())
    subscribed = await client.subscribe("/noexp/a")
    assert subscribed["status"] == "deny"
    assert "exp" in subscribed["reason"]
    lenient = server_factory(
        Entitlement="jwt", EntitlementJwtSecret=SECRET, EntitlementJwtRequireExp=False
    )
    client = await connect(lenient, hs_token())
    assert (await client.subscribe("/noexp/a"))["status"] == "allow"


def _key_pair(kind: str) -> tuple[bytes, bytes]:
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if kind == "RS256"
        else ec.generate_private_key(ec.SECP256R1())
    )
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
async def test_asymmetric_tokens_end_to_end(server_factory, connect, tmp_path, algorithm):
    private, public = _key_pair(algorithm)
    key_file = tmp_path / "jwt-public.pem"
    key_file.write_bytes(public)
    srv = server_factory(Entitlement="jwt", EntitlementJwtPublicKeyFile=str(key_file))
    claims = {"exp": int(time.time()) + 3600, "permissions": {"sub": ["/Stocks/*"]}}
    client = await connect(srv, jwt.encode(claims, private, algorithm=algorithm))
    assert (await client.subscribe("/Stocks/NYSE/IBM"))["status"] == "allow"
    assert (await client.publish("/Stocks/NYSE/IBM", "x"))["result"] == "denied"
    other_private, _ = _key_pair(algorithm)
    forged = await connect(srv, jwt.encode(claims, other_private, algorithm=algorithm))
    refused = await forged.subscribe("/Stocks/NYSE/IBM")
    assert refused["status"] == "deny"
    assert "invalid token" in refused["reason"]


# --- custom entitlement plug-in ----------------------------------------------------------------


def _plugin_env(tmp_path: Path, keys: dict[str, Any]) -> dict[str, str]:
    """Make the example plug-in importable and its entry point discoverable without installing
    it: a ``.dist-info`` folder on PYTHONPATH is what importlib.metadata reads."""
    site = tmp_path / "site"
    info = site / "pushgrid_example_entitlement-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pushgrid-example-entitlement\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[pushgrid.entitlement]\nexample = pushgrid_example_entitlement:ExampleEntitlement\n"
    )
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(keys))
    return {
        "PYTHONPATH": f"{site}:{EXAMPLE}",
        "EXAMPLE_ENTITLEMENT_KEYS": str(keys_file),
    }


async def test_custom_entitlement_plugin(server_factory, connect, tmp_path):
    keys = {"reader": {"sub": ["/Public/"]}, "writer": {"sub": ["/Public/"], "pub": ["/Public/"]}}
    srv = server_factory(
        _env=_plugin_env(tmp_path, keys),
        Entitlement="custom:example",
        EntitlementCustomTimeout=0.5,
    )
    reader = await connect(srv, "reader")
    assert (await reader.subscribe("/Public/news"))["status"] == "allow"
    denied = await reader.subscribe("/Private/news")
    assert (denied["status"], denied["reason"]) == ("deny", "denied by the entitlement plug-in")
    assert (await reader.publish("/Public/news", "x"))["result"] == "denied"
    writer = await connect(srv, "writer")
    assert (await writer.publish("/Public/news", "hello"))["result"] == "ok"
    message = await reader.expect("message", subject="/Public/news")
    assert message["content"] == "hello"
    # A plug-in that does not answer in time denies (fail closed), and the server lives on.
    slow = await connect(srv, "slow")
    timed_out = await slow.subscribe("/Public/news")
    assert timed_out["status"] == "deny"
    async with srv.http() as http:
        snapshot = await http.get(
            "/snapshot", params={"subject": "/Public/news"}, headers={"authorization": "Bearer x"}
        )
        assert snapshot.status_code == 403
        allowed = await http.get(
            "/snapshot",
            params={"subject": "/Public/news"},
            headers={"authorization": "Bearer reader"},
        )
        assert allowed.status_code == 200
    assert "timed out" in srv.log()


def test_unknown_plugin_stops_start_up_with_a_clear_message(tmp_path):
    conf = write_conf(
        tmp_path / "pushgrid.conf",
        {
            "Listen": "127.0.0.1:0",
            "MonitorHTTP.Listen": "",
            "MetricsArchive": "",
            "Entitlement": "custom:nosuch",
        },
    )
    result = run_cli("server", "--config", str(conf))
    assert result.returncode == 2, result
    assert "custom:nosuch" in result.stderr
    assert "pushgrid.entitlement" in result.stderr
    assert "Traceback" not in result.stderr


async def test_the_python_client_refreshes_its_token(jwt_server):
    from pushgrid.client import PushgridClient
    from pushgrid.client.models import Status, StatusEvent

    events: list[StatusEvent] = []

    async def on_status(event: StatusEvent) -> None:
        events.append(event)

    first_exp = int(time.time()) + 3
    client = PushgridClient(
        [jwt_server.address], hs_token(exp=first_exp), on_status=on_status, proxy=None
    )
    await client.connect()
    try:
        await client.subscribe(["/sdk/a", "/sdk-other/b"])
        new_exp = int(time.time()) + 3600
        result = await client.update_token(hs_token({"all": ["/sdk/*"]}, exp=new_exp))
        assert (result.result, result.expires, result.revoked) == ("ok", new_exp, ["/sdk-other/b"])
        assert client.subjects == ["/sdk/a"]
        denied = [e for e in events if e.status is Status.SUBSCRIBE_DENY]
        assert [(e.subject, e.detail) for e in denied] == [("/sdk-other/b", "revoked")]
        bad = await client.update_token("not-a-jwt")
        assert bad.result == "denied"
        # past the first token's exp (from that exp: the steps above may have taken a while)
        await asyncio.sleep(first_exp + 1.5 - time.time())
        assert client.connected
        assert (await client.publish("/sdk/a", "still here")).result == "ok"
    finally:
        await client.close()
