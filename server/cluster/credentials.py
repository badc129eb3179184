"""The cluster bus's credentials, all derived from ``ClusterPassword`` (issue 22).

Nothing on the bus is anonymous: the members' NATS nodes accept a client connection only with
the member user's password and a route only with the route user's password, and every
membership message (``pg.members``, ``pg.hello``) carries an HMAC that only holders of the
cluster secret can compute. Each credential is its own HMAC-SHA256 of the secret with a fixed
label, so one leaking (a route URL in a NATS log, say) reveals neither the secret nor the
others, and every member derives the same values from the same configuration.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Final

CLIENT_USER: Final = "pushgrid-member"
ROUTE_USER: Final = "pushgrid-route"
SIGNATURE_HEADER: Final = "Pg-Sig"

_LABELS: Final = {
    "client": b"pushgrid nats client v1",
    "route": b"pushgrid nats route v1",
    "membership": b"pushgrid membership hmac v1",
}


def _derive(secret: str, label: str) -> str:
    return hmac.new(secret.encode("utf-8"), _LABELS[label], hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class BusCredentials:
    """What a member needs on the bus; ``repr`` never shows a secret."""

    client_password: str
    route_password: str
    membership_key: bytes

    @staticmethod
    def derive(cluster_password: str) -> BusCredentials:
        return BusCredentials(
            client_password=_derive(cluster_password, "client"),
            route_password=_derive(cluster_password, "route"),
            membership_key=bytes.fromhex(_derive(cluster_password, "membership")),
        )

    def __repr__(self) -> str:
        return "BusCredentials(<derived from ClusterPassword>)"

    def sign(self, subject: str, payload: bytes) -> str:
        """The signature of a membership message (bound to its subject kind)."""
        return hmac.new(
            self.membership_key, subject.encode() + b"\n" + payload, hashlib.sha256
        ).hexdigest()

    def verify(self, subject: str, payload: bytes, signature: str | None) -> bool:
        if not signature:
            return False
        return hmac.compare_digest(self.sign(subject, payload), signature)
