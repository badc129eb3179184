"""Every component id of the console, in one place (pages, callbacks and tests use these)."""

from __future__ import annotations

from enum import StrEnum


class Ids(StrEnum):
    # shell
    URL = "url"
    TOKEN = "token"  # dcc.Store (session storage): the operator's admin-API token
    OPERATOR = "operator"  # dcc.Store: who the token belongs to
    NAV = "nav"  # the groups (Live, Traffic, Pipeline, Admin)
    SUBNAV = "subnav"  # the pages of the current group
    SHELL = "shell"  # the console's root: its class carries the operator's role
    PAGE = "page"
    USER = "user"
    SIGN_OUT = "sign-out"
    GLOBAL_ALERT = "global-alert"  # unexpected errors of any callback

    # login
    LOGIN_TOKEN = "login-token"
    LOGIN_BUTTON = "login-button"
    LOGIN_ALERT = "login-alert"
    # sign-in with a password or single sign-on (ADR 052)
    LOGIN_USER = "login-user"
    LOGIN_PASSWORD = "login-password"
    LOGIN_PASSWORD_BUTTON = "login-password-button"
    LOGIN_SSO = "login-sso"
    LOGIN_SSO_ERROR = "login-sso-error"

    # overview
    OVERVIEW_INTERVAL = "overview-interval"
    OVERVIEW_ALERT = "overview-alert"
    OVERVIEW_HEALTH = "overview-health"
    OVERVIEW_MEMBERS = "overview-members"
    OVERVIEW_CARDS = "overview-cards"
    OVERVIEW_LAST_TS = "overview-last-ts"  # dcc.Store: sample time already charted per series
    OVERVIEW_GRAPH = "overview-graph"  # one per indicator: indicator_id(OVERVIEW_GRAPH, name)
    OVERVIEW_VALUE = "overview-value"  # the big current value of each indicator card
    OVERVIEW_WINDOWS = "overview-windows"  # the 1m/5m/15m statistics of each indicator card
    OVERVIEW_UPDATED = "overview-updated"
    OVERVIEW_ARRIVED = "overview-arrived"  # dcc.Store: when the last update arrived (browser)
    OVERVIEW_STALE = "overview-stale"  # "stale: no update for N s" (console/liveness.py)
    OVERVIEW_RANGE = "overview-range"  # the charts' time range (format.RANGES)
    OVERVIEW_CHARTS_ASK = "overview-charts-ask"  # dcc.Store: the charts round asked for
    OVERVIEW_CHARTS_DONE = "overview-charts-done"  # dcc.Store: the charts round answered
    OVERVIEW_STATUS_ASK = "overview-status-ask"  # dcc.Store: the status round asked for
    OVERVIEW_STATUS_DONE = "overview-status-done"  # dcc.Store: the status round answered
    OVERVIEW_CHARTS_NOTE = "overview-charts-note"  # what the charts cannot show (alert area)

    # statistics
    STATS_ALERT = "stats-alert"
    STATS_SCOPE = "stats-scope"
    STATS_DATA = "stats-data"  # dcc.Store: every scope's window statistics
    STATS_ASOF = "stats-asof"
    STATS_TABLE = "stats-table"
    STATS_REFRESH = "stats-refresh"

    # trends
    TRENDS_ALERT = "trends-alert"
    TRENDS_INDICATOR = "trends-indicator"
    TRENDS_WINDOW = "trends-window"
    TRENDS_SCOPE = "trends-scope"
    TRENDS_RANGE = "trends-range"
    TRENDS_GRAPH = "trends-graph"
    TRENDS_SUMMARY = "trends-summary"

    # subjects
    SUBJECT_ALERT = "subject-alert"
    SUBJECT_INPUT = "subject-input"
    SUBJECT_LOOKUP = "subject-lookup"
    SUBJECT_ENTITLEMENT = "subject-entitlement"  # the operator's entitlement token (issue 22)
    SUBJECT_CURRENT = "subject-current"  # dcc.Store: the subject being watched
    SUBJECT_INTERVAL = "subject-interval"
    SUBJECT_SNAPSHOT = "subject-snapshot"
    SUBJECT_SUBSCRIBERS = "subject-subscribers"
    SUBJECT_CONTENT = "subject-content"
    SUBJECT_FIELDS = "subject-fields"
    SUBJECT_PUBLISH = "subject-publish"
    SUBJECT_PUBLISHED = "subject-published"  # dcc.Store: the last test message published
    SUBJECT_ARRIVAL = "subject-arrival"
    SUBJECT_LOG = "subject-log"  # dcc.Store: snapshot changes seen while watching
    SUBJECT_LOG_VIEW = "subject-log-view"
    SUBJECT_PRESENCE = "subject-presence"  # presence: who follows the subject (operator role)
    SUBJECT_PRESENCE_INTERVAL = "subject-presence-interval"

    # sessions
    SESSIONS_ALERT = "sessions-alert"
    SESSIONS_SEARCH = "sessions-search"
    SESSIONS_MEMBER = "sessions-member"
    SESSIONS_PAGE = "sessions-page"  # dcc.Store: current page number (0-based)
    SESSIONS_PREV = "sessions-prev"
    SESSIONS_NEXT = "sessions-next"
    SESSIONS_PAGER = "sessions-pager"
    SESSIONS_TABLE = "sessions-table"
    SESSIONS_REFRESH = "sessions-refresh"
    SESSIONS_DISCONNECT = "sessions-disconnect"  # pattern-matching button per row
    SESSIONS_PENDING = "sessions-pending"  # dcc.Store: the session awaiting confirmation
    SESSIONS_CONFIRM = "sessions-confirm"
    SESSIONS_VERSION = "sessions-version"  # dcc.Store: bumped after a disconnect
    SESSIONS_RESULT = "sessions-result"  # outcome of the last disconnect
    SESSIONS_TRANSPORT = "sessions-transport"  # Clients page (issue 35): transport filter
    SESSIONS_SORT = "sessions-sort"
    SESSIONS_INTERNAL = "sessions-internal"  # checklist: show our own probes too
    SESSIONS_HIDDEN = "sessions-hidden"  # "N internal probes not shown"
    SESSIONS_OPEN = "sessions-open"  # pattern-matching client button per row
    SESSIONS_SELECTED = "sessions-selected"  # dcc.Store: the client whose detail is shown
    SESSIONS_DETAIL = "sessions-detail"
    SESSIONS_SLOW = "sessions-slow"  # the cluster's slow-consumer closes
    SESSIONS_QUERY = "sessions-query"  # dcc.Store: the page's state (also in the URL's query)

    # jobs
    JOBS_ALERT = "jobs-alert"
    JOBS_START = "jobs-start"
    JOBS_CONFIRM = "jobs-confirm"
    JOBS_INTERVAL = "jobs-interval"
    JOBS_TABLE = "jobs-table"
    JOBS_GRAPH = "jobs-graph"
    JOBS_VERSION = "jobs-version"
    JOBS_RESULT = "jobs-result"  # outcome of the last start

    # audit
    AUDIT_ALERT = "audit-alert"
    AUDIT_TABLE = "audit-table"
    AUDIT_REFRESH = "audit-refresh"
    AUDIT_INTERVAL = "audit-interval"
    AUDIT_ACTOR = "audit-actor"  # the API's filters (GET /api/v1/audit)
    AUDIT_ACTION = "audit-action"
    AUDIT_OUTCOME = "audit-outcome"
    AUDIT_SINCE = "audit-since"
    AUDIT_FROM = "audit-from"  # an absolute range (UTC), besides the relative "since"
    AUDIT_TO = "audit-to"
    AUDIT_OFFSET = "audit-offset"  # dcc.Store: the page's first row (paging)
    AUDIT_OLDER = "audit-older"
    AUDIT_NEWER = "audit-newer"
    AUDIT_SHOWN = "audit-shown"  # "rows 101-200"
    AUDIT_COUNT = "audit-count"  # dcc.Store: how many rows the page shows


def indicator_id(kind: Ids, indicator: str) -> str:
    """The id of one indicator's element on the Overview: ``overview-graph-connected_users``."""
    return f"{kind.value}-{indicator}"


def client_open_id(member: str, session: str) -> dict[str, str]:
    """The pattern-matching id of the button that opens one client's detail."""
    return {"type": Ids.SESSIONS_OPEN.value, "index": f"{member}|{session}"}


def disconnect_id(member: str, session: str) -> dict[str, str]:
    """The pattern-matching id of the Disconnect button of one session row."""
    return {"type": Ids.SESSIONS_DISCONNECT.value, "index": f"{member}|{session}"}


class OpsIds(StrEnum):
    """Ids of the operators' pages (issue 17) and of the alert banner on every page."""

    ALERT_BANNER = "alert-banner"
    ALERT_BANNER_INTERVAL = "alert-banner-interval"

    HOT_ALERT = "hot-alert"
    HOT_SCOPE = "hot-scope"
    HOT_INTERVAL = "hot-interval"
    HOT_TABLES = "hot-tables"

    WATCHED_ALERT = "watched-alert"
    WATCHED_SCOPE = "watched-scope"
    WATCHED_INTERVAL = "watched-interval"
    WATCHED_TABLE = "watched-table"
    WATCHED_PATTERN = "watched-pattern"
    WATCHED_ADD = "watched-add"
    WATCHED_REMOVE = "watched-remove"
    WATCHED_RESULT = "watched-result"
    WATCHED_HISTORY = "watched-history"
    WATCHED_STATS = "watched-stats"

    ALERTS_ALERT = "alerts-alert"
    ALERTS_INTERVAL = "alerts-interval"
    ALERTS_ACTIVE = "alerts-active"
    ALERTS_RULES = "alerts-rules"
    ALERTS_HISTORY = "alerts-history"
    RULE_NAME = "rule-name"
    RULE_INDICATOR = "rule-indicator"
    RULE_WINDOW = "rule-window"
    RULE_STAT = "rule-stat"
    RULE_COMPARISON = "rule-comparison"
    RULE_THRESHOLD = "rule-threshold"
    RULE_FOR = "rule-for"
    RULE_SEVERITY = "rule-severity"
    RULE_SCOPE = "rule-scope"
    RULE_CREATE = "rule-create"
    RULE_RESULT = "rule-result"
    RULE_CLEAR_THRESHOLD = "rule-clear-threshold"
    RULE_CLEAR_FOR = "rule-clear-for"
    # acting on alerts and rules (issue 21 item 3): console/pages/alert_actions.py
    ALERT_PICK = "alert-pick"
    ALERT_ACK = "alert-ack"
    SILENCE_FOR = "silence-for"
    ALERT_SILENCE = "alert-silence"
    ALERT_ACTION_RESULT = "alert-action-result"
    ALERTS_SILENCES = "alerts-silences"
    SILENCE_PICK = "silence-pick"
    SILENCE_END = "silence-end"
    RULE_PICK = "rule-pick"
    RULE_EDIT = "rule-edit"
    RULE_SAVE = "rule-save"
    RULE_TOGGLE = "rule-toggle"
    RULE_DELETE = "rule-delete"
    RULE_ACTION_RESULT = "rule-action-result"

    TRACE_ALERT = "trace-alert"
    TRACE_MEMBER = "trace-member"
    TRACE_SUBJECT = "trace-subject"
    TRACE_TOKEN = "trace-token"
    TRACE_START = "trace-start"
    TRACE_STOP = "trace-stop"
    TRACE_PAUSE = "trace-pause"
    TRACE_OPENED = "trace-opened"  # dcc.Store: {id, status, error} of the trace last opened
    TRACE_VIEW = "trace-view"  # dcc.Store: the last poll's view of a trace (GET /traces/{id})
    TRACE_STATE = "trace-state"  # dcc.Store: {id, after, status, error, messages (bounded)}
    # traces by client id or subject, recorded by the members (issue 35 item 2, ADR 050)
    MTRACE_BY = "mtrace-by"
    MTRACE_VALUE = "mtrace-value"
    MTRACE_MEMBER = "mtrace-member"
    MTRACE_START = "mtrace-start"
    MTRACE_STOP = "mtrace-stop"
    MTRACE_DOWNLOAD = "mtrace-download"  # the button
    MTRACE_FILE = "mtrace-file"  # dcc.Download
    MTRACE_OPENED = "mtrace-opened"  # dcc.Store: the trace the last Start opened (None: stopped)
    MTRACE_VIEW = "mtrace-view"  # dcc.Store: the last poll's GET /member-traces/{id}
    MTRACE_STATE = "mtrace-state"  # dcc.Store: {id, kind, value, after, dropped, events, members}
    MTRACE_STATUS = "mtrace-status"
    MTRACE_EVENTS = "mtrace-events"
    MTRACE_ALERT = "mtrace-alert"
    MTRACE_INTERVAL = "mtrace-interval"  # one tick at a time: each poll's answer arms the next
    TRACE_PAUSED = "trace-paused"  # dcc.Store: bool
    TRACE_INTERVAL = "trace-interval"
    TRACE_STATUS = "trace-status"
    TRACE_MESSAGES = "trace-messages"
    TRACE_SESSION = "trace-session"
    TRACE_SESSION_SHOW = "trace-session-show"
    TRACE_SESSION_VIEW = "trace-session-view"


class SubjectBrowserIds(StrEnum):
    """Ids of the subject browser (issue 35 item 3)."""

    URL = "browse-url"  # the page's own dcc.Location: its query is the page's state
    REFRESH = "browse-refresh"
    ALERT = "browse-alert"
    RESULT = "browse-result"
    PATTERN = "browse-pattern"
    SORT = "browse-sort"
    TABLE = "browse-table"
    PREV = "browse-prev"
    NEXT = "browse-next"
    PAGER = "browse-pager"
    TOKEN = "browse-entitlement"
    REMOVE = "browse-remove"
    DETAIL = "browse-detail"
    QUERY = "browse-query"  # dcc.Store: pattern, sort, offset (from the URL)
    SELECTED = "browse-selected"  # dcc.Store: the subject shown below
    VERSION = "browse-version"  # dcc.Store: bumped by an action, re-reads list and detail
    TOTAL = "browse-total"  # dcc.Store: the last listing's total (paging's end)
    CONFIRM = "browse-confirm"
    ROW = "browse-row"  # pattern-matching: one per subject ({"type": ROW, "index": subject})
    UNSUBSCRIBE = "browse-unsubscribe"  # pattern-matching: "member|session"


class AlertRowIds(StrEnum):
    """Ids of the Alerts page's row actions and history filters (issue 35 item 4)."""

    ACK = "alert-row-ack"  # a row button's data-row-action (its data-pick: "rule_id|target")
    SILENCE = "alert-row-silence"  # as ACK
    # dcc.Store: the last row click, {"type": ACK or SILENCE, "index": pick, "at": ms}
    ROW_ACTION = "alert-row-action"
    COMMENT = "alert-comment"  # the comment row actions send (acknowledge, silence)
    HISTORY_RULE = "history-rule"
    HISTORY_TARGET = "history-target"
    HISTORY_STATE = "history-state"
    HISTORY_RANGE = "history-range"
    HISTORY_URL = "history-url"  # the history's own dcc.Location: its query is the filters
    HISTORY_QUERY = "history-query"  # dcc.Store: the query read from the URL
    HISTORY_TOTAL = "history-total"  # dcc.Store: the API's total (the last page's bound)
    HISTORY_PREV = "history-prev"
    HISTORY_NEXT = "history-next"
    HISTORY_PAGER = "history-pager"
    HISTORY_INTERVAL = "history-interval"  # one tick at a time: each answer arms the next
