"""Secrets masked wherever configuration, URLs and log lines are shown
(pushgrid/kernel/redaction.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pushgrid.config import ConfigError, Settings, load_settings
from pushgrid.kernel.redaction import (
    MASK,
    RedactingFilter,
    is_secret_key,
    redact_setting,
    redact_text,
    redact_url_path,
)
from pushgrid.server.monitoring.beans import configuration


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("ClusterPassword", True),
        ("Admin.MemberPassword", True),
        ("EntitlementJwtSecret", True),
        ("Alerts.Webhook", True),
        ("SomeApiToken", True),
        ("CloudCredentials", True),
        ("TLSKey", True),
        ("EntitlementJwtSecretFile", False),
        ("JmxTLSKeyStore", False),
        ("KeepaliveTimeout", False),
        ("Database", False),
        ("AuthBackoffMax", False),
        ("Occupancy.WebhookSecret", True),
        ("Occupancy.WebhookQueue", False),
        ("Alerts.WebhookRetries", False),
        ("Occupancy.WebhookTimeout", False),
    ],
)
def test_secret_keys_by_pattern(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://u:p%40ss@db:5432/x", f"postgresql://u:{MASK}@db:5432/x"),
        ("nats://u:pw@h:4222, nats://h2:4222", f"nats://u:{MASK}@h:4222, nats://h2:4222"),
        ("local=http://mon:pw@10.0.0.1:8900", f"local=http://mon:{MASK}@10.0.0.1:8900"),
        ("GET /api/v1/me?token=pgt_x&limit=3", f"GET /api/v1/me?token={MASK}&limit=3"),
        ("/ws?access_token=abc", f"/ws?access_token={MASK}"),
        ("/x?sig=abc&page=2&api_key=k", f"/x?sig={MASK}&page=2&api_key={MASK}"),
        ("sqlite:///data/pushgrid.db", "sqlite:///data/pushgrid.db"),
        ("http://h/p?subject=/a&limit=3", "http://h/p?subject=/a&limit=3"),
    ],
)
def test_text_redaction(text: str, shown: str) -> None:
    assert redact_text(text) == shown


def test_only_text_settings_are_secrets() -> None:
    assert redact_setting("Alerts.WebhookRetries", 3) == 3
    assert redact_setting("TLSKey", Path("/etc/key.pem")) == Path("/etc/key.pem")
    assert redact_setting("ClusterPassword", "x") == MASK
    assert redact_setting("ClusterPassword", None) is None
    assert redact_setting("NatsServers", ["nats://u:p@h:1"]) == [f"nats://u:{MASK}@h:1"]


def test_configuration_map_hides_every_secret() -> None:
    settings = Settings.model_validate(
        {
            "ClusterPassword": "c-pw-1",
            "Admin.MemberPassword": "m-pw-2",
            "Database": "postgresql://a:dsn-pw-3@db/x",
            "Alerts.Webhook": "https://hooks.example.com/services/T/B/hook-4",
            "MonitorUsername": "mon",
            "MonitorPassword": "mon-pw-5",
            "Admin.Members": "a=http://u:member-url-pw-6@10.0.0.2:8900",
        }
    )
    shown = repr(configuration(settings))
    for secret in ("c-pw-1", "m-pw-2", "dsn-pw-3", "hook-4", "mon-pw-5", "member-url-pw-6"):
        assert secret not in shown
    assert configuration(settings)["MonitorUsername"] == "mon"


def test_url_reduced_to_its_origin_for_logs() -> None:
    url = "https://hooks.slack.com:8443/services/T000/B000/XXXX?x=1"
    assert redact_url_path(url) == "https://hooks.slack.com:8443/…"


def test_logging_filter_masks_known_secrets_and_query_tokens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    webhook = "https://hooks.example.com/services/T/B/very-secret"
    logger = logging.getLogger("test.redaction")
    logger.addFilter(RedactingFilter([webhook]))
    with caplog.at_level(logging.INFO, logger="test.redaction"):
        logger.info("POST %s failed", webhook)
        logger.info('127.0.0.1 - "GET %s HTTP/1.1" 200', "/api/v1/me?token=pgt_abc")
    text = caplog.text
    assert "very-secret" not in text
    assert "pgt_abc" not in text
    assert "https://hooks.example.com/…" in text


def test_configuration_errors_do_not_echo_secrets() -> None:
    with pytest.raises(ConfigError) as failure:
        load_settings(
            None,
            environ={
                "PUSHGRID_ALERTS_WEBHOOK": "ftp://hooks.example.com/T/B/err-secret-1",
                "PUSHGRID_DATABASE": "postgresql://a:err-secret-2@db/x",
                "PUSHGRID_ADMIN_STALEAFTER": "-1",
                "PUSHGRID_OCCUPANCY_WEBHOOKSECRET": "err-secret-3",
                # a number's key merely mentions a webhook: only a URL password in it is masked
                "PUSHGRID_OCCUPANCY_WEBHOOKQUEUE": "http://u:err-secret-4@h",
            },
        )
    message = str(failure.value)
    assert "Alerts.Webhook = '********'" in message
    assert f"Occupancy.WebhookQueue = 'http://u:{MASK}@h'" in message
    assert "err-secret" not in message


@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        ("PUSHGRID_OCCUPANCY_WEBHOOKQUEUE", "0", "Occupancy.WebhookQueue"),
        ("PUSHGRID_ALERTS_WEBHOOKRETRIES", "many", "Alerts.WebhookRetries"),
        ("PUSHGRID_OCCUPANCY_WEBHOOKTIMEOUT", "-1", "Occupancy.WebhookTimeout"),
        ("PUSHGRID_PUBLISHDEDUPMAXKEYS", "lots", "PublishDedupMaxKeys"),
    ],
)
def test_errors_show_numbers_of_keys_that_merely_mention_a_secret(
    variable: str, value: str, key: str
) -> None:
    """A number, boolean or duration is never a secret (issue 22 item 2): an operator who wrote
    ``Occupancy.WebhookQueue = 0`` must see the 0 they wrote, not ``********``."""
    with pytest.raises(ConfigError) as failure:
        load_settings(None, environ={variable: value})
    assert f"{key} = {value!r}" in str(failure.value)
    assert MASK not in str(failure.value)


def test_configuration_map_shows_numbers_of_webhook_keys() -> None:
    settings = Settings.model_validate(
        {
            "Occupancy.Webhook": "https://hooks.example.com/services/T/B/occ-hook-1",
            "Occupancy.WebhookSecret": "occ-secret-2",
            "Occupancy.WebhookQueue": 7,
            "Occupancy.WebhookTimeout": 2.5,
            "Alerts.WebhookRetries": 4,
        }
    )
    shown = configuration(settings)
    assert "occ-" not in repr(shown)
    assert shown["Occupancy.WebhookQueue"] == 7
    assert shown["Occupancy.WebhookTimeout"] == 2.5
    assert shown["Alerts.WebhookRetries"] == 4
