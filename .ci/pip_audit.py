"""Run pip-audit on the project's environment and say plainly how much it could audit.

    .venv/bin/python tools/pip_audit.py [--strict]

pip-audit asks PyPI's vulnerability data for every installed distribution. Where that service
cannot be reached (a machine whose registry is a mirror of the package index only), pip-audit
skips every package and still prints "No known vulnerabilities found": this wrapper reports
the number of packages actually audited instead, fails (exit 1) on any known vulnerability,
and fails on an unreachable service only with ``--strict``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PIP_AUDIT = Path(sys.executable).with_name("pip-audit")


def main() -> int:
    strict = "--strict" in sys.argv[1:]
    run = subprocess.run(  # a fixed argument list, no shell
        [str(PIP_AUDIT), "--progress-spinner", "off", "--skip-editable", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        print(f"pip-audit: no report (exit {run.returncode}):\n{run.stderr[-2000:]}")
        return 1
    dependencies = report.get("dependencies", [])
    skipped = [d for d in dependencies if "skip_reason" in d]
    vulnerable = [d for d in dependencies if d.get("vulns")]
    audited = len(dependencies) - len(skipped)
    for dependency in vulnerable:
        ids = ", ".join(v["id"] for v in dependency["vulns"])
        print(f"pip-audit: {dependency['name']} {dependency['version']}: {ids}")
    print(
        f"pip-audit: {audited} of {len(dependencies)} packages audited, "
        f"{len(vulnerable)} with known vulnerabilities"
    )
    if skipped and not audited:
        print("pip-audit: the vulnerability service was not reachable; nothing was audited")
        return 1 if strict else 0
    return 1 if vulnerable else 0


if __name__ == "__main__":
    sys.exit(main())
