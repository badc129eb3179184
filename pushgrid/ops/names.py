"""MBean object names (domain ``pushgrid``) and operation names, as the server registers them and
the admin API asks for them."""

from __future__ import annotations

from typing import Final

DOMAIN: Final = "pushgrid"

SERVER: Final = "pushgrid:type=Server"
CLUSTER: Final = "pushgrid:type=Cluster"
CACHE: Final = "pushgrid:type=Cache"
COMPRESSION: Final = "pushgrid:type=Compression"
SESSIONS: Final = "pushgrid:type=Sessions"
SUBJECTS: Final = "pushgrid:type=Subjects"
HOT_SUBJECTS: Final = "pushgrid:type=HotSubjects"
MEMBER_PANEL: Final = "pushgrid:type=MemberPanel"
WATCHED_SUBJECTS: Final = "pushgrid:type=WatchedSubjects"
WORKERS: Final = "pushgrid:type=Workers"  # the server's processes (docs/workers.md)
CANARY: Final = "pushgrid:type=Canary"  # the canaries this member receives (ADR 049)
DELIVERY: Final = "pushgrid:type=Delivery"
ACCOUNTING: Final = "pushgrid:type=Accounting"  # delivery accounting (ADR 054)
#: every indicator MBean (a pattern: the name key is the indicator's MBean name)
INDICATORS: Final = "pushgrid:type=Indicator,*"
#: the JMX bridge's own MBean (deploy/jmx/Bridge.java): whether its values are live
BRIDGE: Final = "pushgrid.jmx:type=Bridge"

# Operations (their argument lists are in server/monitoring/beans.py, next to their code)
SESSIONS_LIST: Final = "list"
SESSIONS_DETAIL: Final = "detail"
SESSIONS_DISCONNECT: Final = "disconnect"
SESSIONS_SLOW_CONSUMERS: Final = "slowConsumers"
SESSIONS_TRACE_OPEN: Final = "traceOpen"
SESSIONS_TRACE_READ: Final = "traceRead"
SESSIONS_TRACE_CLOSE: Final = "traceClose"
SUBJECTS_SNAPSHOT: Final = "snapshot"
SUBJECTS_SUBSCRIBER_COUNT: Final = "subscriberCount"
SUBJECTS_OCCUPANCY: Final = "occupancy"
SUBJECTS_PRESENCE: Final = "presence"
SUBJECTS_PUBLISH_ALERT: Final = "publishAlert"
SUBJECTS_LIST: Final = "list"
SUBJECTS_HISTORY: Final = "history"
SUBJECTS_REMOVE_SNAPSHOT: Final = "removeSnapshot"
SUBJECTS_UNSUBSCRIBE: Final = "unsubscribe"
WATCH: Final = "watch"
UNWATCH: Final = "unwatch"
CANARY_PROBE_KEY: Final = "probeKey"  # the admin API probe's token (ADR 049)


def indicator(mbean: str) -> str:
    """The object name of one indicator's MBean (``mbean`` is ``Indicator.mbean``)."""
    return f"{DOMAIN}:name={mbean},type=Indicator"
