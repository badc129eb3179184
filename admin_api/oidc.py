"""OpenID Connect single sign-on: the authorization code flow with PKCE, state and nonce
(ADR 052). No web framework here: the routes are in ``routes/signin_oidc.py``.

1. :meth:`OidcClient.start` makes a flow: a random ``state`` (binds the answer to this browser:
   it also goes into a cookie), a ``nonce`` (binds the ID token to this flow) and a PKCE
   verifier (RFC 7636, S256: a stolen code is useless without it); it answers the provider's
   authorization URL.
2. :meth:`OidcClient.finish` takes the code back: the flow must be pending (single use, 10
   minutes), the state must match the browser's cookie; the code is exchanged at the token
   endpoint with the verifier; the ID token's signature is checked against the provider's JWKS
   (joserfc), and its ``iss``, ``aud``, ``exp``, ``iat`` and ``nonce``.
3. :func:`role_of` maps the configured claim (``OIDC.RoleClaim``, a string or a list) through
   ``OIDC.RoleMap`` to the highest role it names; no role, no session.

The provider's metadata (``/.well-known/openid-configuration``) and keys are fetched on first
use and kept for an hour; an unknown key id fetches the keys again (the provider rotated them).
Libraries: Authlib (PKCE challenge, URL building), joserfc (JWS/JWT, JWKS); httpx for HTTP.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from pushgrid.config import SignInSettings

from .problems import ProblemError
from .security import Role

FLOW_SECONDS: Final = 600.0
MAX_PENDING: Final = 1000
METADATA_SECONDS: Final = 3600.0
HTTP_TIMEOUT: Final = 10.0
LEEWAY: Final = 60  # seconds of clock difference tolerated on exp / iat
ALGORITHMS: Final = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"]


class OidcError(ProblemError):
    """A single sign-on that cannot complete; ``code`` is short and safe to show the browser.
    401 (403 for a user the claim gives no role, 502 for a provider that does not answer)."""

    def __init__(self, code: str, detail: str) -> None:
        status = {"no_role": 403, "provider_unreachable": 502, "provider_error": 502}.get(code, 401)
        super().__init__(status, detail, code)


@dataclass(frozen=True, slots=True)
class PendingFlow:
    nonce: str
    verifier: str
    redirect_uri: str
    started: float


@dataclass(frozen=True, slots=True)
class OidcIdentity:
    name: str
    subject: str
    role: Role


def role_of(claims: dict[str, Any], claim: str, mapping: dict[str, str]) -> Role | None:
    """The highest role the claim's values map to (None: none does)."""
    value = claims.get(claim)
    values = value if isinstance(value, list) else [value]
    roles = [Role(mapping[v]) for v in values if isinstance(v, str) and v in mapping]
    return max(roles, key=lambda role: role.rank) if roles else None


def name_of(claims: dict[str, Any], claim: str) -> str:
    for key in (claim, "email", "sub"):
        value = claims.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:128]
    raise OidcError("no_subject", "the ID token names no user (no sub)")


@dataclass
class OidcClient:
    settings: SignInSettings
    transport: httpx.AsyncBaseTransport | None = None
    _pending: dict[str, PendingFlow] = field(default_factory=dict)
    _metadata: dict[str, Any] | None = None
    _keys: KeySet | None = None
    _fetched: float = 0.0

    @property
    def issuer(self) -> str:
        assert self.settings.oidc_issuer is not None
        return self.settings.oidc_issuer

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=HTTP_TIMEOUT, trust_env=False, transport=self.transport)

    async def _get_json(self, http: httpx.AsyncClient, url: str) -> dict[str, Any]:
        try:
            answer = await http.get(url, headers={"Accept": "application/json"})
            answer.raise_for_status()
            body = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError("provider_unreachable", f"{url}: {exc}") from None
        if not isinstance(body, dict):
            raise OidcError("provider_error", f"{url} did not answer a JSON object")
        return body

    async def metadata(self, refresh: bool = False) -> dict[str, Any]:
        fresh = time.monotonic() - self._fetched < METADATA_SECONDS
        if self._metadata is not None and self._keys is not None and fresh and not refresh:
            return self._metadata
        async with self._http() as http:
            found = await self._get_json(http, f"{self.issuer}/.well-known/openid-configuration")
            if str(found.get("issuer", "")).rstrip("/") != self.issuer:
                raise OidcError(
                    "provider_error",
                    f"the provider calls itself {found.get('issuer')!r}, not {self.issuer!r}",
                )
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(found.get(key), str):
                    raise OidcError("provider_error", f"the provider's metadata has no {key}")
            jwks = await self._get_json(http, found["jwks_uri"])
        try:
            self._keys = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError) as exc:
            raise OidcError("provider_error", f"the provider's keys: {exc}") from None
        self._metadata, self._fetched = found, time.monotonic()
        return found

    def _forget_old(self, now: float) -> None:
        for state in [s for s, f in self._pending.items() if now - f.started > FLOW_SECONDS]:
            del self._pending[state]
        while len(self._pending) >= MAX_PENDING:
            del self._pending[next(iter(self._pending))]

    async def start(self, redirect_uri: str) -> tuple[str, str]:
        """(state, the provider's authorization URL) of a new flow."""
        metadata = await self.metadata()
        now = time.monotonic()
        self._forget_old(now)
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)
        self._pending[state] = PendingFlow(nonce, verifier, redirect_uri, now)
        params = [
            ("response_type", "code"),
            ("client_id", self.settings.oidc_client_id or ""),
            ("redirect_uri", redirect_uri),
            ("scope", " ".join(self.settings.oidc_scopes)),
            ("state", state),
            ("nonce", nonce),
            ("code_challenge", create_s256_code_challenge(verifier)),
            ("code_challenge_method", "S256"),
        ]
        return state, add_params_to_uri(metadata["authorization_endpoint"], params)

    def _take(self, state: str | None, cookie: str | None) -> PendingFlow:
        if not state:
            raise OidcError("missing_state", "the provider's answer has no state")
        if not cookie or not secrets.compare_digest(state, cookie):
            raise OidcError("state_mismatch", "the state does not match this browser's sign-in")
        flow = self._pending.pop(state, None)
        if flow is None or time.monotonic() - flow.started > FLOW_SECONDS:
            raise OidcError("unknown_state", "no sign-in under way with this state (expired?)")
        return flow

    async def _exchange(self, code: str, flow: PendingFlow) -> str:
        metadata = await self.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.redirect_uri,
            "code_verifier": flow.verifier,
        }
        auth = (self.settings.oidc_client_id or "", self.settings.oidc_client_secret or "")
        async with self._http() as http:
            try:
                answer = await http.post(metadata["token_endpoint"], data=form, auth=auth)
                body = answer.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise OidcError("provider_unreachable", f"token endpoint: {exc}") from None
        if answer.status_code != 200 or not isinstance(body, dict):
            raise OidcError("token_refused", f"the token endpoint answered {answer.status_code}")
        id_token = body.get("id_token")
        if not isinstance(id_token, str):
            raise OidcError("token_refused", "the token endpoint gave no ID token")
        return id_token

    async def _verified_claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        await self.metadata()
        try:
            try:
                token = jwt.decode(id_token, self._keys, algorithms=ALGORITHMS)  # type: ignore[arg-type]
            except JoseError:  # an unknown key: the provider may have rotated its keys
                await self.metadata(refresh=True)
                token = jwt.decode(id_token, self._keys, algorithms=ALGORITHMS)  # type: ignore[arg-type]
            jwt.JWTClaimsRegistry(
                leeway=LEEWAY,
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.settings.oidc_client_id or ""},
                sub={"essential": True},
                exp={"essential": True},
                nonce={"essential": True, "value": nonce},
            ).validate(token.claims)
        except (JoseError, ValueError) as exc:
            raise OidcError("invalid_id_token", f"the ID token was refused: {exc}") from None
        return dict(token.claims)

    async def finish(self, code: str | None, state: str | None, cookie: str | None) -> OidcIdentity:
        """The signed-in identity of the provider's answer (raises :class:`OidcError`)."""
        flow = self._take(state, cookie)
        if not code:
            raise OidcError("missing_code", "the provider's answer has no code")
        claims = await self._verified_claims(await self._exchange(code, flow), flow.nonce)
        name = name_of(claims, self.settings.oidc_name_claim)
        role = role_of(claims, self.settings.oidc_role_claim, self.settings.oidc_roles())
        if role is None:
            raise OidcError(
                "no_role",
                f"{name}: the claim {self.settings.oidc_role_claim!r} maps to no role "
                f"(it is {claims.get(self.settings.oidc_role_claim)!r})",
            )
        return OidcIdentity(name, str(claims["sub"]), role)
