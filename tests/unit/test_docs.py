"""Every configuration key is documented, and the example file holds only valid keys."""

from __future__ import annotations

from pathlib import Path

from pushgrid.config import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_documented_in_configuration_md() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [
        info.alias
        for info in Settings.model_fields.values()
        if info.alias and f"| `{info.alias}` |" not in text
    ]
    assert missing == []


def test_example_configuration_loads() -> None:
    settings = load_settings(ROOT / "deploy" / "pushgrid.conf.example", environ={})
    assert settings.listen == ["*:8800"]
