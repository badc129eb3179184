/**
 * pushgrid browser client: zero-install, no build step, plain ES2020.
 *
 *   <script src="/pushgrid.js"></script>
 *   <script>
 *     const pg = new Pushgrid.PushgridClient(["127.0.0.1:8800"], {
 *       onMessage: (m) => console.log(m.subject, m.content, m.type),
 *       onStatus: (e) => console.log(e.status, e.subject, e.detail),
 *     });
 *     pg.subscribe(["/Stocks/NYSE/IBM"]);
 *     await pg.connect();
 *     const result = await pg.publish("/Stocks/NYSE/IBM", "193", { fields: { volume: "6.62M" } });
 *   </script>
 *
 * Same API and semantics as the Python SDK (client/client.py), in JavaScript style (camelCase,
 * options objects, Promises). Guarantees:
 *
 * - Reconnects after any failure, choosing servers by weight and skipping failed ones, waiting a
 *   few quick jittered retries (~5 s) then truncated exponential backoff with full jitter, and
 *   reacting to close codes as docs/protocol.md section 8.2 says (1002 and 4005 stop for good).
 * - A connection is dead after 1.4 x the welcome's keepalive without any frame from the server.
 * - Every subscription is renewed on reconnect with recovery from its last (epoch, seq):
 *   duplicates are dropped, a gap triggers a resubscribe with recovery (a resync after
 *   `maxRecoveries` gaps in a row), so guaranteed messages reach the application at most once,
 *   in seq order within an epoch. Conflated deliveries are only checked for duplicates.
 * - Transport: WebSocket, or Server-Sent Events (EventSource on GET /events, publish by
 *   POST /publish) when WebSocket does not exist, when forced with {transport: "sse"}, or (auto)
 *   after `sseAfterFailures` failed WebSocket attempts while the server still answers HTTP.
 *   Once fallen back, the client stays on SSE. With SSE, the browser's own EventSource reconnect
 *   (Last-Event-ID) recovers every subject; after `sseRetries` failed browser retries the client
 *   takes over (backoff, server choice, positions in the URL).
 * - Server frames may arrive one per WebSocket frame or batched as a JSON array.
 * - `publish` never rejects for network reasons: it resolves to {result: "ok" | "denied" |
 *   "failed" | "too_large", ...}. Invalid arguments throw synchronously.
 * - Callbacks run synchronously in event order (a DATA_RESYNC comes before the snapshot that
 *   follows it); an exception in a callback is logged with console.error and ignored.
 *
 * Differences from the Python SDK: callbacks only (no messages() iterator); status events use
 * camelCase (closeCode, closeReason, retryIn); plain "host:port" entries use wss:// when the page
 * itself is served over https. Over SSE a subscription change reopens the stream (the other
 * subjects recover from their positions, without DATA_SYNC noise), and one stream carries one
 * conflation period and one history depth: used when all its subjects agree, otherwise none
 * (field deltas are asked per subject, `delta=<subject>`, so they need no agreement).
 */
(function (root, factory) {
  "use strict";
  const api = factory();
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root) {
    root.Pushgrid = api;
    root.PushgridClient = api.PushgridClient;
  }
})(typeof globalThis !== "undefined" ? globalThis : this, function () {
  "use strict";

  const VERSION = "0.1.0";

  /** Status notification kinds (`onStatus`), the same strings as the Python SDK. */
  const Status = Object.freeze({
    SERVER_UP: "server_up", // connected, welcome received; `server` is set
    SERVER_DOWN: "server_down", // connection lost or attempt failed; closeCode, retryIn
    DATA_SYNC: "data_sync", // per subject after a recovery: detail "recovered" / "up_to_date"
    DATA_RESYNC: "data_resync", // per subject: new_epoch / failed / gap_resync; snapshot follows
    SUBSCRIBE_ALLOW: "subscribe_allow", // per subject, a subscription without recovery is active
    SUBSCRIBE_DENY: "subscribe_deny", // per subject; the subscription is dropped; reason in detail
    ERROR: "error", // an error frame not tied to a publish or subscribe request
    CLOSED: "closed", // the client stopped for good (close() or a do-not-retry close code)
  });
  /** How a message reached the client. */
  const MessageType = Object.freeze({
    SNAPSHOT: "snapshot", UPDATE: "update", RECOVERED: "recovered", HISTORICAL: "historical",
  });
  /** Outcome of a publish; only OK means the server accepted the message. */
  const PublishStatus = Object.freeze({
    OK: "ok", DENIED: "denied", FAILED: "failed", TOO_LARGE: "too_large",
  });

  const DEFAULT_PORT = 8800;
  const DEFAULT_WEIGHT = 100;
  const MAX_WEIGHT = 100;
  const DEAD_FACTOR = 1.4;
  const SUBJECTS_PER_FRAME = 500;
  const PRESENCE_SUBJECT = "/pushgrid/presence";
  const CLIENT_ID = /^[A-Za-z0-9._:@+=-]{1,64}$/; // pushgrid/protocol/frames.py client_id_error
  const MAX_SUBJECT_BYTES = 1024;
  const WS_OPEN = 1;
  const ES_CLOSED = 2;

  const encoder = new TextEncoder();
  const utf8Length = (text) => encoder.encode(text).length;
  const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now()) / 1000;
  /** Wall clock in ms since the Unix epoch, sub-millisecond where the platform allows. */
  const wallClock = () => (typeof performance !== "undefined" && performance.timeOrigin
    ? performance.timeOrigin + performance.now() : Date.now());
  const fmt = (seconds) => String(Math.round(seconds * 1000) / 1000);
  const describe = (err) => (err && err.message ? `${err.name}: ${err.message}` : String(err));

  // --- subjects --------------------------------------------------------------------------------

  /** Why `subject` is not a valid subject (docs/protocol.md section 3), or null when it is. */
  function subjectError(subject) {
    if (typeof subject !== "string") return "a subject must be a string";
    if (!subject.startsWith("/")) return "a subject must start with '/'";
    if (subject === "/") return "a subject needs two or more segments, '/' is a single empty segment";
    if (subject.endsWith("/")) return "the last segment is empty (trailing '/')";
    if (utf8Length(subject) > MAX_SUBJECT_BYTES) {
      return `a subject may hold at most ${MAX_SUBJECT_BYTES} bytes of UTF-8`;
    }
    const segments = subject.slice(1).split("/");
    if (segments.some((s) => s === "")) return "a segment is empty ('//' is not allowed)";
    if (segments.length < 2) return "a subject needs two or more segments";
    const chars = Array.from(subject); // code points, as the server counts them
    for (let i = 0; i < chars.length; i++) {
      const kind = invisibleKind(chars[i]);
      if (kind !== null && !emojiJoiner(chars, i)) {
        const code = chars[i].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
        return `a subject may not contain ${kind} characters (U+${code})`;
      }
    }
    return null;
  }

  // Unicode categories refused in subjects (pushgrid/protocol/subjects.py), with their names.
  const INVISIBLE = [
    [/\p{Cc}/u, "control"],
    [/\p{Cf}/u, "format (invisible)"],
    [/\p{Cs}/u, "surrogate"],
    [/\p{Co}/u, "private-use"],
    [/\p{Cn}/u, "unassigned"],
    [/\p{Zl}/u, "line separator"],
    [/\p{Zp}/u, "paragraph separator"],
  ];

  function invisibleKind(ch) {
    for (const [pattern, name] of INVISIBLE) if (pattern.test(ch)) return name;
    return null;
  }

  /** A zero-width joiner between two symbols (an emoji ZWJ sequence), where it does show. */
  function emojiJoiner(chars, i) {
    if (chars[i] !== "\u200d" || i === 0 || i + 1 >= chars.length) return false;
    return /[\p{So}\p{Sk}\p{Mn}]/u.test(chars[i - 1]) && /\p{So}/u.test(chars[i + 1]);
  }

  /** A refused or unanswered presence request: `code` says why. */
  function presenceError(code, message) {
    const error = new Error(message);
    error.code = code;
    return error;
  }

  function checkSubject(subject) {
    const reason = subjectError(subject);
    if (reason !== null) throw new Error(`invalid subject ${JSON.stringify(subject)}: ${reason}`);
  }

  function subjectList(subjects) {
    const names = typeof subjects === "string" ? [subjects] : Array.from(subjects || []);
    if (names.length === 0) throw new Error("at least one subject is required");
    names.forEach(checkSubject);
    return Array.from(new Set(names));
  }

  // --- servers ---------------------------------------------------------------------------------

  /**
   * One parsed server entry. `String(address)` gives "host:port" (IPv6 hosts in brackets).
   * `path` is the WebSocket path; `base` the prefix of the HTTP paths (/events, /publish, ...).
   */
  class ServerAddress {
    constructor({ host, port, weight = DEFAULT_WEIGHT, secure = false, path = "/ws", base = "", query = "" }) {
      Object.assign(this, { host, port, weight, secure, path, base, query });
      Object.freeze(this);
    }
    toString() {
      return `${this.host.includes(":") ? `[${this.host}]` : this.host}:${this.port}`;
    }
    /** The WebSocket URL, with `token` as the `token` query parameter. */
    wsUrl(token) {
      const params = this.query ? [this.query] : [];
      if (token) params.push(`token=${encodeURIComponent(token)}`);
      return `${this.secure ? "wss" : "ws"}://${this}${this.path}${params.length ? "?" + params.join("&") : ""}`;
    }
    /** The URL of HTTP endpoint `path` ("/events", ...) with `params` ([[key, value], ...]). */
    httpUrl(path, params = []) {
      const search = new URLSearchParams(this.query);
      for (const [key, value] of params) search.append(key, value);
      const text = search.toString();
      return `${this.secure ? "https" : "http"}://${this}${this.base}${path}${text ? "?" + text : ""}`;
    }
  }

  const pageIsSecure = () =>
    typeof location !== "undefined" && location && location.protocol === "https:";

  /**
   * Parse one "[weight ]host[:port]" entry, or "[weight ]URL" with a ws, wss, http or https URL.
   * Plain entries default to port 8800 and to wss when the page itself is served over https.
   * URLs default to port 80 / 443 and to the path /ws (http URLs name the server's HTTP base).
   * Throws Error naming the entry and what is wrong with it.
   */
  function parseServer(entry) {
    const bad = (why) => new Error(`server entry ${JSON.stringify(entry)}: ${why}`);
    let text = String(entry).trim();
    if (!text) throw new Error(`server entry ${JSON.stringify(entry)} is empty`);
    let weight = DEFAULT_WEIGHT;
    const match = /^(\S+)\s+(\S.*)$/.exec(text);
    if (match) {
      if (!/^\d+$/.test(match[1])) {
        const weightText = JSON.stringify(match[1]);
        throw bad(`weight ${weightText} is not an integer from 0 to ${MAX_WEIGHT} (expected '[weight ]host[:port]')`);
      }
      weight = Number(match[1]);
      if (weight > MAX_WEIGHT) throw bad(`weight ${weight} is out of range 0-${MAX_WEIGHT}`);
      text = match[2].trim();
    }
    if (text.includes("://")) return parseUrl(text, weight, bad);
    let host;
    let portText = null;
    if (text.startsWith("[")) {
      const end = text.indexOf("]");
      if (end < 0) throw bad("missing ']' after an IPv6 address");
      host = text.slice(1, end);
      const rest = text.slice(end + 1);
      if (!host.includes(":")) throw bad(`${JSON.stringify(host)} is not an IPv6 address`);
      if (rest && !rest.startsWith(":")) throw bad(`unexpected ${JSON.stringify(rest)} after ']'`);
      if (rest) portText = rest.slice(1);
    } else {
      if ((text.match(/:/g) || []).length > 1) {
        throw bad("write IPv6 addresses in brackets, e.g. '[::1]:8800'");
      }
      const colon = text.indexOf(":");
      host = colon < 0 ? text : text.slice(0, colon);
      if (colon >= 0) portText = text.slice(colon + 1);
      if (!/^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$/.test(host)) {
        throw bad(`${JSON.stringify(host)} is not a valid host name`);
      }
    }
    const port = portText === null ? DEFAULT_PORT : checkPort(portText, bad);
    return new ServerAddress({ host, port, weight, secure: pageIsSecure() });
  }

  function checkPort(text, bad) {
    if (!/^\d+$/.test(text)) throw bad(`port ${JSON.stringify(text)} is not a number`);
    const port = Number(text);
    if (port < 1 || port > 65535) throw bad(`port ${port} is out of range 1-65535`);
    return port;
  }

  function parseUrl(text, weight, bad) {
    let url;
    try {
      url = new URL(text);
    } catch (err) {
      throw bad(`invalid URL (${err.message})`);
    }
    const scheme = url.protocol.slice(0, -1);
    if (!["ws", "wss", "http", "https"].includes(scheme)) {
      throw bad(`scheme '${scheme}' is not supported (use ws://, wss://, http://, https:// or host[:port])`);
    }
    if (!url.hostname) throw bad("the URL has no host");
    if (url.username || url.hash) throw bad("user info and fragments are not supported");
    const secure = scheme === "wss" || scheme === "https";
    const port = url.port ? checkPort(url.port, bad) : secure ? 443 : 80;
    const rawPath = (/^[a-z]+:\/\/[^/?#]*(\/[^?#]*)?/i.exec(text) || [])[1] || "";
    let path;
    let base;
    if (scheme.startsWith("http")) {
      base = rawPath.replace(/\/+$/, "");
      path = `${base}/ws`;
    } else {
      path = rawPath || "/ws";
      base = path.replace(/\/ws\/?$/, "").replace(/\/+$/, "");
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    return new ServerAddress({ host, port, weight, secure, path, base, query: url.search.slice(1) });
  }

  /** Parse a server list: an array of entries, or one string of comma-separated entries. */
  function parseServers(servers) {
    const entries = typeof servers === "string"
      ? (servers.trim() ? servers.split(",") : [])
      : Array.from(servers || []);
    if (entries.length === 0) {
      throw new Error("the server list is empty; expected entries like '[weight ]host[:port]'");
    }
    return entries.map(parseServer);
  }

  /**
   * Weighted random choice that skips failed servers until every server has failed. Servers of
   * weight 0 are backups, chosen only when no candidate has a positive weight.
   */
  class ServerPool {
    constructor(servers, random = Math.random) {
      if (!servers.length) throw new Error("a server pool needs at least one server");
      this.servers = Object.freeze(Array.from(servers));
      this._failed = new Set();
      this._random = random;
    }
    candidates() {
      if (this._failed.size >= this.servers.length) this._failed.clear();
      const live = this.servers.filter((_, i) => !this._failed.has(i));
      const weighted = live.filter((s) => s.weight > 0);
      return weighted.length ? weighted : live;
    }
    choose() {
      const candidates = this.candidates();
      const total = candidates.reduce((sum, s) => sum + s.weight, 0);
      if (total <= 0) return candidates[Math.floor(this._random() * candidates.length)];
      let point = this._random() * total;
      for (const server of candidates) {
        point -= server.weight;
        if (point < 0) return server;
      }
      return candidates[candidates.length - 1];
    }
    markFailed(server) {
      this.servers.forEach((s, i) => { if (s === server) this._failed.add(i); });
    }
    reset() {
      this._failed.clear();
    }
  }

  // --- reconnect policy ------------------------------------------------------------------------

  /**
   * Reconnect delays in seconds: attempt n < quickRetries draws base x uniform(1 - jitter,
   * 1 + jitter); later attempts draw uniform(0, min(cap, base x multiplier^(n - quickRetries + 1))).
   * A connection up for `stableAfter` seconds starts over at attempt 0.
   */
  const DEFAULT_BACKOFF = Object.freeze({
    base: 5.0, quickRetries: 3, jitter: 0.3, multiplier: 2.0, cap: 120.0, stableAfter: 10.0,
  });

  function backoffPolicy(overrides = {}) {
    const policy = { ...DEFAULT_BACKOFF, ...overrides };
    const check = (ok, what) => { if (!ok) throw new Error(`backoff ${what}`); };
    check(policy.base >= 0, `base must be >= 0, got ${policy.base}`);
    check(policy.quickRetries >= 0, `quickRetries must be >= 0, got ${policy.quickRetries}`);
    check(policy.jitter >= 0 && policy.jitter <= 1, `jitter must be within 0-1, got ${policy.jitter}`);
    check(policy.multiplier >= 1, `multiplier must be >= 1, got ${policy.multiplier}`);
    check(policy.cap >= 0, `cap must be >= 0, got ${policy.cap}`);
    check(policy.stableAfter >= 0, `stableAfter must be >= 0, got ${policy.stableAfter}`);
    return Object.freeze(policy);
  }

  class Backoff {
    constructor(policy = DEFAULT_BACKOFF, random = Math.random) {
      this.policy = policy;
      this.attempt = 0;
      this._random = random;
    }
    nextDelay() {
      const p = this.policy;
      const n = this.attempt++;
      if (n < p.quickRetries) {
        return Math.min(p.cap, p.base * (1 - p.jitter + 2 * p.jitter * this._random()));
      }
      const bound = Math.min(p.cap, p.base * p.multiplier ** Math.min(n - p.quickRetries + 1, 64));
      return this._random() * bound;
    }
    reset() {
      this.attempt = 0;
    }
  }

  // --- close codes -----------------------------------------------------------------------------

  const BACKOFF = Object.freeze({ retry: true, immediate: false, avoidServer: false });
  const OTHER_SERVER = Object.freeze({ retry: true, immediate: false, avoidServer: true });
  const IMMEDIATE_OTHER = Object.freeze({ retry: true, immediate: true, avoidServer: true });
  const STOP = Object.freeze({ retry: false, immediate: false, avoidServer: false });
  const CLOSE_RULES = {
    1000: BACKOFF, 1001: IMMEDIATE_OTHER, 1002: STOP, 1007: STOP, 1008: BACKOFF, 1009: BACKOFF,
    1011: OTHER_SERVER, 4001: BACKOFF, 4002: BACKOFF, 4003: OTHER_SERVER, 4004: OTHER_SERVER,
    4005: STOP, 4006: BACKOFF, 4007: IMMEDIATE_OTHER,
    1006: OTHER_SERVER,
  };

  /** The reaction to a connection that ended with close `code` (null: no close frame). */
  const ruleForClose = (code) => (code == null ? OTHER_SERVER : CLOSE_RULES[code] || BACKOFF);

  // --- delivery reports (docs/protocol.md 5.7, client/delivery.py) ----------------------------

  /** Latency bucket upper bounds in microseconds: the server's table (protocol/latency.py). */
  const LATENCY_UPPER = Array.from({ length: 71 }, (_, i) => Math.round(Math.pow(10, 1 + i / 10)));
  const BUCKET_COUNT = LATENCY_UPPER.length + 1;
  const MAX_COUNT = 10000000;
  const MAX_REPORT_SUBJECTS = 64;
  const OFFSET_SAMPLES = 8;
  const EARLY_CLOCK_PINGS = 4;
  const LOSS_KINDS = ["gaps", "duplicates", "resyncs", "recovered", "recovery_failed"];

  /** The bucket of a latency in microseconds (bucket 0: up to 10 us and negative readings). */
  function bucketOf(micros) {
    let lo = 0;
    let hi = LATENCY_UPPER.length;
    while (lo < hi) { // the first bound >= micros, as Python's bisect_left
      const mid = (lo + hi) >> 1;
      if (LATENCY_UPPER[mid] < micros) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** One report period's latency histograms and loss counters per subject, and the clock
   * offset to the server (the minimum-round-trip ping of the last 8), as client/delivery.py. */
  class DeliveryReporter {
    constructor() {
      this._subjects = new Map();
      this._other = null;
      this._samples = [];
      this.best = null; // {rtt, offset} in microseconds
      this.latencies = 0;
    }
    addSample(t0, server, t3) {
      const rtt = t3 - t0;
      if (rtt < 0) return;
      this._samples.push({ rtt, offset: server - (t0 + t3) / 2 });
      if (this._samples.length > OFFSET_SAMPLES) this._samples.shift();
      this.best = this._samples.reduce((a, b) => (b.rtt < a.rtt ? b : a));
    }
    clearClock() {
      this._samples = [];
      this.best = null;
    }
    _seen(subject) {
      let seen = this._subjects.get(subject);
      if (!seen) {
        if (this._subjects.size >= MAX_REPORT_SUBJECTS) {
          if (!this._other) this._other = { latency: new Map(), counts: {} };
          return this._other;
        }
        seen = { latency: new Map(), counts: {} };
        this._subjects.set(subject, seen);
      }
      return seen;
    }
    /** The latency in microseconds of an update that reached the server at `ingress` (us) and
     * arrived at `received` (this client's clock, us); null while no offset is known. */
    latency(subject, ingress, received) {
      if (!this.best || !(ingress > 0)) return null;
      const micros = received + this.best.offset - ingress;
      const buckets = this._seen(subject).latency;
      const index = bucketOf(micros);
      buckets.set(index, (buckets.get(index) || 0) + 1);
      this.latencies += 1;
      return micros;
    }
    count(subject, kind) {
      const counts = this._seen(subject).counts;
      counts[kind] = (counts[kind] || 0) + 1;
    }
    /** The period's report frame (null when nothing was seen); the period restarts. */
    report(interval) {
      const entry = (subject, seen) => {
        const item = subject == null ? {} : { subject };
        const pairs = [...seen.latency].sort((a, b) => a[0] - b[0]).map(([i, n]) => [i, Math.min(n, MAX_COUNT)]);
        if (pairs.length) item.latency = pairs;
        for (const kind of LOSS_KINDS) if (seen.counts[kind]) item[kind] = Math.min(seen.counts[kind], MAX_COUNT);
        return pairs.length || Object.keys(seen.counts).length ? item : null;
      };
      const entries = [...this._subjects].map(([s, seen]) => entry(s, seen)).filter(Boolean);
      if (this._other) {
        const other = entry(null, this._other);
        if (other) entries.push(other);
      }
      this._subjects = new Map();
      this._other = null;
      if (!entries.length) return null;
      const frame = { op: "report", interval: Math.min(Math.max(interval, 0.001), 3600), entries };
      if (this.best) Object.assign(frame, { offset: Math.round(this.best.offset), rtt: Math.round(this.best.rtt) });
      return frame;
    }
  }

  // --- recovery --------------------------------------------------------------------------------

  /**
   * Per-subject positions and the duplicate / gap rules (docs/protocol.md section 6), exactly as
   * client/recovery.py. `onMessage` answers {action: "deliver" | "drop" | "recover" | "resync",
   * reason, recover} where `recover` is the {epoch, seq} to resubscribe from.
   */
  class RecoveryTracker {
    constructor(maxRecoveries = 2) {
      this._max = maxRecoveries;
      this._states = new Map();
    }
    _state(subject) {
      let state = this._states.get(subject);
      if (!state) this._states.set(subject, (state = { position: null, recovering: false, gaps: 0 }));
      return state;
    }
    position(subject) {
      const state = this._states.get(subject);
      return state ? state.position : null;
    }
    recovering(subject) {
      const state = this._states.get(subject);
      return Boolean(state && state.recovering);
    }
    forget(subject) {
      this._states.delete(subject);
    }
    cancelRecoveries(subjects = null) {
      for (const [subject, state] of this._states) {
        if (subjects === null || subjects.includes(subject)) state.recovering = false;
      }
    }
    onSubscribed(frame) {
      if (frame.status !== "allow") return this.forget(frame.subject);
      const state = this._state(frame.subject);
      state.recovering = false;
      const framePos = frame.epoch != null && frame.seq != null ? { epoch: frame.epoch, seq: frame.seq } : null;
      if (frame.recovery === "recovered") {
        if (state.position && (!framePos || framePos.epoch === state.position.epoch)) return;
        state.position = framePos;
      } else if (frame.recovery === "up_to_date") {
        if (framePos) state.position = framePos;
      } else { // none, new_epoch, failed: a fresh start, the snapshot (if any) follows
        state.position = framePos;
        state.gaps = 0;
      }
    }
    onMessage(frame) {
      const state = this._state(frame.subject);
      const current = state.position;
      const incoming = { epoch: frame.epoch, seq: frame.seq };
      const decide = (action, reason, recover = null) => ({ action, reason, recover });
      if (frame.kind === "snapshot") {
        state.position = incoming;
        return decide("deliver", "snapshot");
      }
      if (frame.kind === "historical") {
        if (!current || current.epoch !== frame.epoch || frame.seq > current.seq) state.position = incoming;
        return decide("deliver", "historical");
      }
      if (frame.qos !== "guaranteed") return decide("deliver", "standard qos");
      if (!current) {
        state.position = incoming;
        return decide("deliver", "first position");
      }
      if (current.epoch !== frame.epoch) {
        Object.assign(state, { position: incoming, gaps: 0, recovering: false });
        return decide("deliver", "new epoch adopted");
      }
      if (frame.seq <= current.seq) return decide("drop", `duplicate: seq ${frame.seq} <= ${current.seq}`);
      if (frame.conflated === true || frame.seq === current.seq + 1) {
        Object.assign(state, { position: incoming, gaps: 0 });
        return decide("deliver", frame.conflated === true ? "conflated" : "in order");
      }
      if (state.recovering) return decide("drop", "gap while a recovery is pending");
      state.recovering = true;
      state.gaps += 1;
      const missing = `gap: expected seq ${current.seq + 1}, got ${frame.seq}`;
      if (state.gaps > this._max) {
        state.gaps = 0;
        return decide("resync", `${missing}; recovery failed repeatedly`);
      }
      return decide("recover", missing, current);
    }
  }

  // --- the client ------------------------------------------------------------------------------

  /** connect() failed for good: the server closed with a do-not-retry code (1002, 4005). */
  class ConnectFailed extends Error {
    constructor(message) {
      super(message);
      this.name = "ConnectFailed";
    }
  }

  const statusEvent = (status, fields = {}) => Object.freeze({
    status, server: null, subject: null, detail: null, closeCode: null, closeReason: null, retryIn: null, ...fields,
  });
  const publishResult = (result, subject, fields = {}) => Object.freeze({
    result, subject, epoch: null, seq: null, reason: null, msgId: null, duplicate: false, outcomeUnknown: false,
    ...fields, ok: result === PublishStatus.OK,
  });

  // A publish's idempotency key (docs/protocol.md 5.3): 1 to 128 visible ASCII characters.
  const MSG_ID = /^[\x21-\x7e]*$/;
  /** Why `msgId` is not a valid msg_id, or null (the server's rule, pushgrid/protocol/frames.py). */
  const msgIdError = (msgId) => {
    if (typeof msgId !== "string") return "'msg_id' must be a string";
    if (msgId.length < 1 || msgId.length > 128) {
      return `'msg_id' must hold 1 to 128 characters, got ${msgId.length}`;
    }
    return MSG_ID.test(msgId) ? null : "'msg_id' may hold only visible ASCII characters (0x21-0x7E)";
  };
  const checkMsgId = (msgId) => {
    const error = msgIdError(msgId);
    if (error) throw new Error(error);
    return msgId;
  };
  const newMsgId = () => {
    const bytes = new Uint8Array(16);
    if (globalThis.crypto && globalThis.crypto.getRandomValues) globalThis.crypto.getRandomValues(bytes);
    else for (let i = 0; i < bytes.length; i += 1) bytes[i] = Math.floor(Math.random() * 256);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  };
  const ERROR_RESULTS = { message_too_large: PublishStatus.TOO_LARGE, denied: PublishStatus.DENIED };
  const HTTP_RESULTS = { 403: PublishStatus.DENIED, 413: PublishStatus.TOO_LARGE };

  /**
   * A client of a pushgrid server cluster: create, subscribe, connect(), publish, close().
   *
   * @param {string[]|string} servers "[weight ]host[:port]" entries or ws/wss/http/https URLs
   *   (an array, or one comma-separated string). Throws Error for an invalid list.
   * @param {object} [options]
   * @param {string} [options.token] entitlement token (query parameter / Bearer header)
   * @param {function(object):void} [options.onMessage] gets {subject, content, fields, type,
   *   epoch, seq, qos, retained, ts, conflated}
   * @param {function(object):void} [options.onStatus] gets {status, server, subject, detail,
   *   closeCode, closeReason, retryIn}
   * @param {object} [options.backoff] overrides of {base, quickRetries, jitter, multiplier, cap,
   *   stableAfter} (seconds)
   * @param {"auto"|"websocket"|"sse"} [options.transport="auto"]
   * @param {number} [options.sseAfterFailures=3] auto: failed WebSocket attempts before SSE
   * @param {number} [options.sseRetries=3] failed EventSource retries before the client takes over
   * @param {number} [options.openTimeout=10] seconds to wait for the welcome
   * @param {number} [options.maxRecoveries=2] gaps in a row before a resync
   * @param {function():number} [options.random=Math.random] for reproducible choices
   * @param {boolean} [options.debug=false] log decisions with console.debug
   * @param {boolean} [options.reports=true] measure delivery latency and loss and report them
   *   to the server (WebSocket only; docs/protocol.md 5.7)
   * @param {number} [options.reportInterval=5] seconds between reports
   * @param {function():number} [options.clock] the wall clock latencies are read on, ms since
   *   the Unix epoch (default: performance.timeOrigin + performance.now(), else Date.now());
   *   its offset to the server's clock is estimated from pings
   * @param {string} [options.clientId] sent with every subscription: presence lists it
   *   (1 to 64 ASCII letters, digits and . _ : @ - + =; docs/occupancy.md, "Presence")
   * @param {function(object):void} [options.onPresence] gets the join/leave events of
   *   /pushgrid/presence ({event, subject, session, clientId, member, subscribers, id, ts})
   *   after followPresence(); without it they arrive as messages
   */
  class PushgridClient {
    constructor(servers, options = {}) {
      const o = options;
      this._random = o.random || Math.random;
      this._pool = new ServerPool(parseServers(servers), this._random);
      this._token = o.token || null;
      this.onMessage = o.onMessage || null;
      this.onStatus = o.onStatus || null;
      this.onPresence = o.onPresence || null;
      if (o.clientId != null && !CLIENT_ID.test(o.clientId)) {
        throw new Error(`clientId must be 1 to 64 ASCII letters, digits or . _ : @ - + =, got ${JSON.stringify(o.clientId)}`);
      }
      this._clientId = o.clientId ?? null;
      this._presences = new Map(); // presence request id -> {resolve, reject}
      this._backoff = new Backoff(backoffPolicy(o.backoff || {}), this._random);
      const transport = o.transport || "auto";
      if (!["auto", "websocket", "sse"].includes(transport)) {
        throw new Error(`transport must be 'auto', 'websocket' or 'sse', got ${JSON.stringify(transport)}`);
      }
      this._transportOption = transport;
      this._sseAfterFailures = o.sseAfterFailures ?? 3;
      this._sseRetries = o.sseRetries ?? 3;
      this._openTimeout = o.openTimeout ?? 10;
      this._debug = Boolean(o.debug);
      this._fallback = transport === "sse";
      this._wsFailures = 0;
      this._tracker = new RecoveryTracker(o.maxRecoveries ?? 2);
      this._reports = o.reports !== false;
      this._reportInterval = o.reportInterval ?? 5;
      this._clock = o.clock || wallClock;
      /** What this client measured of its deliveries (the report's source; docs/protocol.md 5.7). */
      this.delivery = new DeliveryReporter();
      this._clockPings = new Map(); // ping id -> t0 (wall clock, us)
      this._pingsSent = 0;
      this._nextPing = Infinity;
      this._nextReport = Infinity;
      this._periodStart = 0;
      this._subscriptions = new Map(); // subject -> {history, conflation, delta}
      this._fields = new Map(); // delta subscriptions: subject -> every field received, latest values
      this._resyncing = new Set();
      this._subRequests = new Map(); // request id -> Set of subjects not answered yet
      this._pending = new Map(); // publish request id -> resolve function
      this._ids = 1;
      this._conn = null;
      this._server = null;
      this._welcome = null;
      this._waiters = new Set();
      this._running = false;
      this._closing = false;
      this._stopped = false;
      this._stopEvent = null;
      this._wakeSleep = null;
      this._lastFailure = null;
      /** Counters for diagnostics and tests: WebSockets / EventSources created, frames seen. */
      this.counters = { websockets: 0, eventSources: 0, welcomes: 0, keepalives: 0 };
    }

    // --- public API ----------------------------------------------------------------------------

    /** True while a welcomed connection is open (SSE without subjects: no stream is needed). */
    get connected() {
      const c = this._conn;
      return Boolean(c && (c.up || c.idle)) && !this._stopped;
    }
    /** The server ("host:port") of the current connection, or null. */
    get server() {
      return this.connected && this._server ? String(this._server) : null;
    }
    /** The welcome frame of the current (or last) connection. */
    get welcome() {
      return this._welcome;
    }
    /** "websocket" or "sse": the transport of the current (or next) connection. */
    get transport() {
      return this._sseMode() ? "sse" : "websocket";
    }
    /** The WebSocket extensions the server agreed to on the current connection
     * ("permessage-deflate; ..." when the browser's compression offer was accepted), or "". */
    get extensions() {
      const c = this._conn;
      return (this.connected && c && c.extensions) || "";
    }
    /** Subjects currently subscribed (renewed on each reconnect). */
    get subjects() {
      return Array.from(this._subscriptions.keys());
    }
    /** The last {epoch, seq} received for `subject`, or null. */
    position(subject) {
      const p = this._tracker.position(subject);
      return p ? { ...p } : null;
    }

    /**
     * Start the connection loop; with `wait`, resolve once connected. Rejects with ConnectFailed
     * if the client stops for good first, with an Error named "TimeoutError" after `timeout`
     * seconds (the client keeps trying until close()). Calling it again is harmless.
     */
    connect({ wait = true, timeout = null } = {}) {
      if (this._closing || this._stopped) return Promise.reject(new Error("the client is closed"));
      if (!this._running) {
        this._running = true;
        this._run().catch((err) => console.error("pushgrid: connection loop failed", err));
      }
      if (!wait) return Promise.resolve();
      return this._waitReady(timeout).then((ready) => {
        if (this._stopped) {
          const e = this._stopEvent;
          const code = e && e.closeCode ? `: ${e.closeCode} ${e.closeReason || ""}` : "";
          throw new ConnectFailed(`the client stopped before connecting${code}`);
        }
        if (!ready) {
          const last = this._lastFailure ? ` (last failure: ${this._lastFailure})` : "";
          const err = new Error(`not connected within ${timeout} s${last}`);
          err.name = "TimeoutError";
          throw err;
        }
      });
    }

    /**
     * Close the connection (code 1000) and stop for good. Idempotent. Pending publishes resolve
     * "failed" and onStatus gets a CLOSED event (unless the client had already stopped).
     */
    close() {
      if (!this._closing) {
        this._closing = true;
        this._failPending("the client is closed");
        if (this._wakeSleep) this._wakeSleep();
        if (this._conn) this._conn.finish(BACKOFF, "closed by the application");
        if (!this._stopped) this._stop(statusEvent(Status.CLOSED, { detail: "closed by the application" }));
      }
      return Promise.resolve();
    }

    /**
     * Subscribe to `subjects` (kept across reconnects until unsubscribe). The outcome arrives per
     * subject as SUBSCRIBE_ALLOW or SUBSCRIBE_DENY. `history` = N asks for the N last cached
     * messages (type historical) instead of the snapshot; `conflationMs` asks the server to
     * conflate updates. `delta: true` asks for the changed fields only (docs/protocol.md
     * 5.1.2): the client merges them and onMessage still gets the subject's full field set.
     * Throws for invalid arguments; resolves once the request is sent (or at once while
     * disconnected: it is sent on connect).
     */
    subscribe(subjects, { history = 0, conflationMs = 0, delta = false } = {}) {
      const names = subjectList(subjects);
      for (const [name, value] of [["history", history], ["conflationMs", conflationMs]]) {
        if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be an integer >= 0, got ${value}`);
      }
      this._checkOpen();
      for (const name of names) {
        this._subscriptions.set(name, { history, conflation: conflationMs, delta: delta === true });
        this._resyncing.delete(name);
        if (delta !== true) this._fields.delete(name);
      }
      const conn = this._conn;
      if (conn && conn.kind === "sse") {
        names.forEach((name) => this._tracker.forget(name)); // a fresh start, as on WebSocket
        conn.reopen();
      } else if (conn && conn.up) {
        const extra = delta === true ? { delta: true } : {};
        this._sendSubscribe(conn, names.map((subject) => ({ subject, history, conflation: conflationMs, ...extra })));
      }
      return Promise.resolve();
    }

    /**
     * Who follows `subject` in the whole cluster (docs/protocol.md 5.6): resolves to
     * {subject, subscribers, clients: [{session, clientId, member}], truncated}; rejects with an
     * Error whose `code` is the server's (`presence_disabled`, `denied`, `invalid_subject`),
     * `not_connected` (no WebSocket up: SSE carries no requests) or `timeout`.
     */
    presence(subject, { timeout = 10 } = {}) {
      checkSubject(subject);
      this._checkOpen();
      const conn = this._conn;
      if (!conn || !conn.up || conn.kind === "sse") {
        return Promise.reject(presenceError("not_connected", "presence needs a WebSocket connection"));
      }
      const id = this._ids++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this._presences.delete(id);
          reject(presenceError("timeout", `no presence answer within ${timeout} s`));
        }, timeout * 1000);
        const settle = (fn) => (value) => { clearTimeout(timer); this._presences.delete(id); fn(value); };
        this._presences.set(id, { resolve: settle(resolve), reject: settle(reject) });
        conn.send({ op: "presence", id, subject });
      });
    }

    /** Receive the cluster's join/leave events (/pushgrid/presence) through onPresence. */
    followPresence() {
      return this.subscribe(PRESENCE_SUBJECT);
    }

    /** Stop receiving `subjects`; messages of them still in flight are dropped. */
    unsubscribe(subjects) {
      const names = subjectList(subjects);
      this._checkOpen();
      for (const name of names) {
        this._subscriptions.delete(name);
        this._fields.delete(name);
        this._tracker.forget(name);
        this._resyncing.delete(name);
      }
      const conn = this._conn;
      if (conn && conn.kind === "sse") conn.reopen();
      else if (conn && conn.up) {
        for (let i = 0; i < names.length; i += SUBJECTS_PER_FRAME) {
          conn.send({ op: "unsubscribe", id: this._ids++, subjects: names.slice(i, i + SUBJECTS_PER_FRAME) });
        }
      }
      return Promise.resolve();
    }

    /**
     * Publish one message; resolves to {result, subject, epoch, seq, reason, msgId, duplicate,
     * ok} within `timeout` seconds. While disconnected (WebSocket) it waits for a connection
     * until the timeout; over SSE it POSTs to /publish. Every publish carries an idempotency key,
     * `msgId` (generated unless given; 1 to 128 visible ASCII characters): after a connection
     * lost before the answer it is sent again with the same `msgId` on the next connection, and
     * the server stores it at most once (an ok answer to a repeat has `duplicate: true` and the
     * original's epoch and seq). To retry yourself after FAILED, publish again with
     * `{msgId: result.msgId}`. TOO_LARGE without sending when content + fields exceed the
     * server's max_message_size; FAILED on timeout or once closed. Throws for an invalid
     * subject, content, fields, qos or msgId.
     */
    publish(subject, content, { fields = {}, retained = true, qos = "guaranteed", timeout = 10, msgId = null } = {}) {
      checkSubject(subject);
      if (typeof content !== "string") throw new Error("content must be a string");
      if (qos !== "standard" && qos !== "guaranteed") {
        throw new Error(`qos must be 'standard' or 'guaranteed', got ${JSON.stringify(qos)}`);
      }
      const frameFields = { ...(fields || {}) };
      for (const [name, value] of Object.entries(frameFields)) {
        if (typeof value !== "string") throw new Error(`field ${JSON.stringify(name)}: values must be strings`);
      }
      const msg_id = msgId == null ? newMsgId() : checkMsgId(msgId);
      const message = { subject, content, fields: frameFields, retained: Boolean(retained), qos, msg_id };
      return this._publish(message, timeout);
    }

    // --- connection loop -----------------------------------------------------------------------

    async _run() {
      const policy = this._backoff.policy;
      while (!this._closing) {
        const server = this._pool.choose();
        const sse = this._sseMode();
        const end = await (sse ? this._sessionSse(server) : this._sessionWs(server));
        if (this._closing) return;
        this._lastFailure = `${server}: ${end.detail}`;
        if (end.rule.avoidServer) this._pool.markFailed(server);
        if (!end.rule.retry) {
          this._emit(this._downEvent(server, end, null));
          this._stop(statusEvent(Status.CLOSED, {
            server: String(server), detail: "the server asked the client not to retry",
            closeCode: end.code, closeReason: end.reason,
          }));
          return;
        }
        if (end.upFor >= policy.stableAfter) this._backoff.reset();
        let delay = end.rule.immediate ? 0 : this._backoff.nextDelay();
        if (!sse && end.wasUp) this._wsFailures = 0;
        const mayFallBack = this._transportOption === "auto" && typeof EventSource !== "undefined";
        if (!sse && !end.opened && mayFallBack) {
          this._wsFailures += 1;
          if (this._wsFailures >= this._sseAfterFailures && (await this._httpReachable(server))) {
            this._log(`WebSocket failed ${this._wsFailures} times, ${server} answers HTTP: using SSE`);
            this._fallback = true;
            delay = 0;
          }
          if (this._closing) return;
        }
        this._emit(this._downEvent(server, end, delay));
        this._log(`${server} down (${end.detail}); retry in ${fmt(delay)} s`);
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, delay * 1000);
          this._wakeSleep = () => { clearTimeout(timer); resolve(); };
        });
        this._wakeSleep = null;
      }
    }

    _sseMode() {
      return this._fallback || typeof WebSocket === "undefined";
    }

    async _httpReachable(server) {
      if (typeof fetch === "undefined") return false;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), 3000);
      try {
        await fetch(server.httpUrl("/health"), { cache: "no-store", signal: abort.signal });
        return true;
      } catch (err) {
        return false;
      } finally {
        clearTimeout(timer);
      }
    }

    /** Common state of one connection attempt; `finish` ends it and resolves its session. */
    _newConn(kind, server, resolve, cleanup) {
      const conn = {
        kind, server, up: false, idle: false, done: false, upAt: 0, upFor: 0, wasUp: false, opened: false,
        lastRx: now(), lastTx: now(), welcome: null, timer: null,
        send: () => false,
        reopen: () => {},
        finish: (rule, detail, code = null, reason = null) => {
          if (conn.done) return;
          conn.done = true;
          clearInterval(conn.timer);
          cleanup();
          const upFor = conn.up ? now() - conn.upAt : conn.upFor;
          conn.up = false;
          if (this._conn === conn) this._conn = null;
          this._subRequests.clear();
          this._failPending("connection lost before the server answered");
          resolve({ rule, detail, code, reason, upFor, wasUp: conn.wasUp, opened: conn.opened });
        },
      };
      this._conn = conn;
      conn.timer = setInterval(() => this._watchdog(conn), 250);
      return conn;
    }

    /** One WebSocket connection: open, welcome, resubscribe, read until it ends. */
    _sessionWs(server) {
      return new Promise((resolve) => {
        let ws;
        try {
          ws = new WebSocket(server.wsUrl(this._token));
          this.counters.websockets += 1;
        } catch (err) {
          resolve({
            rule: OTHER_SERVER, detail: `cannot connect: ${describe(err)}`,
            upFor: 0, wasUp: false, opened: false, code: null, reason: null,
          });
          return;
        }
        const conn = this._newConn("websocket", server, resolve, () => {
          ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
          try {
            if (this._closing) ws.close(1000, "client closed");
            else ws.close();
          } catch (err) { /* already closed */ }
        });
        conn.send = (frame) => {
          if (ws.readyState !== WS_OPEN) return false;
          ws.send(JSON.stringify(frame));
          conn.lastTx = now();
          return true;
        };
        ws.onmessage = (event) => {
          conn.lastRx = now();
          if (typeof event.data !== "string") return;
          this._receive(conn, event.data, (welcome) => {
            if (conn.up) return (this._welcome = conn.welcome = welcome);
            this._onUp(conn, welcome);
            if (!conn.done && conn.up) this._resubscribeAll(conn);
          });
        };
        ws.onopen = () => {
          conn.opened = true;
          conn.extensions = ws.extensions;
        };
        ws.onclose = (event) => {
          if (!conn.opened) return conn.finish(OTHER_SERVER, "cannot connect: the WebSocket handshake failed");
          if (event.code === 1006) return conn.finish(OTHER_SERVER, "connection lost");
          const detail = `closed by the server: ${event.code} ${event.reason || ""}`.trim();
          conn.finish(ruleForClose(event.code), detail, event.code, event.reason || null);
        };
        ws.onerror = () => {}; // a close event follows
      });
    }

    /**
     * One SSE session: an EventSource on /events that the browser reconnects by itself (with
     * Last-Event-ID) and that is reopened when the subscriptions change. Without subjects there
     * is no stream and the session is idle (publishing needs none).
     */
    _sessionSse(server) {
      return new Promise((resolve) => {
        let es = null;
        const closeStream = () => {
          if (es) {
            es.onopen = es.onmessage = es.onerror = null;
            es.close();
            es = null;
          }
        };
        const conn = this._newConn("sse", server, resolve, closeStream);
        conn.errors = 0;
        conn.downSince = now();
        conn.reopening = false; // the stream is reopened for a subscription change, not lost
        conn.quiet = null; // subjects whose DATA_SYNC such a reopen should not report
        const open = () => {
          closeStream();
          conn.downSince = now();
          if (this._subscriptions.size === 0) {
            conn.idle = true;
            this._wake();
            return;
          }
          conn.idle = false;
          let stream;
          try {
            stream = es = new EventSource(server.httpUrl("/events", this._sseParams()));
            this.counters.eventSources += 1;
          } catch (err) {
            return conn.finish(OTHER_SERVER, `cannot connect: ${describe(err)}`);
          }
          stream.onopen = () => { conn.opened = true; };
          stream.onmessage = (event) => {
            if (stream !== es) return;
            conn.lastRx = now();
            this._receive(conn, event.data, (welcome) => this._onSseUp(conn, welcome));
          };
          stream.onerror = () => {
            if (stream !== es) return;
            if (stream.readyState === ES_CLOSED) {
              const detail = conn.up ? "event stream closed" : "cannot connect: the event stream was refused";
              return conn.finish(OTHER_SERVER, detail);
            }
            if (conn.up) { // the browser reconnects by itself, sending Last-Event-ID
              conn.up = conn.reopening = false;
              conn.quiet = null;
              conn.upFor = now() - conn.upAt;
              conn.downSince = now();
              this._emit(statusEvent(Status.SERVER_DOWN, {
                server: String(server), detail: "connection lost; the browser reconnects the event stream",
              }));
            } else if (++conn.errors > this._sseRetries) {
              conn.finish(OTHER_SERVER, `cannot connect: the event stream failed ${conn.errors} times`);
            }
          };
        };
        conn.reopen = () => {
          if (conn.reopenQueued || conn.done) return;
          conn.reopenQueued = true;
          setTimeout(() => { // coalesce the subscription changes of one task
            conn.reopenQueued = false;
            if (conn.done) return;
            if (conn.up) {
              const t = this._tracker;
              const settled = (s) => t.position(s) && !this._resyncing.has(s) && !t.recovering(s);
              conn.quiet = new Set(this.subjects.filter(settled));
              conn.reopening = true;
              conn.up = false;
            }
            open();
          }, 0);
        };
        open();
      });
    }

    /** Query parameters of /events: subjects, positions to recover from, field deltas,
     * conflation, client id, token. */
    _sseParams() {
      const params = [];
      const conflations = new Set();
      const histories = new Set();
      const deltas = [];
      for (const [subject, options] of this._subscriptions) {
        params.push(["subject", subject]);
        if (options.delta) deltas.push(["delta", subject]); // per subject, unlike conflation
        conflations.add(options.conflation);
        const position = this._resyncing.has(subject) ? null : this._tracker.position(subject);
        if (position) params.push(["position", `${subject} ${position.epoch}:${position.seq}`]);
        else histories.add(options.history);
      }
      // delta=true when every subject asks (a shorter URL), else one delta=<subject> each
      if (deltas.length === this._subscriptions.size) params.push(["delta", "true"]);
      else params.push(...deltas);
      // One stream carries one conflation period and one history depth: use them when every
      // subject agrees, otherwise none (never conflate or replace a snapshot unasked).
      const [conflation] = conflations;
      if (conflations.size === 1 && conflation > 0) params.push(["conflation", String(conflation)]);
      const [history] = histories;
      if (histories.size === 1 && history > 0) params.push(["history", String(history)]);
      // the stream's client id: presence lists it, as it does for a WebSocket subscription
      if (this._clientId != null) params.push(["client_id", this._clientId]);
      if (this._token) params.push(["token", this._token]);
      return params;
    }

    /** Parse one WebSocket message or SSE event: a frame, or a batch (JSON array) of frames. */
    _receive(conn, text, onWelcome) {
      let parsed;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        if (!conn.wasUp && conn.kind === "websocket") {
          return conn.finish(OTHER_SERVER, `invalid first frame: ${err.message}`);
        }
        return this._log(`ignoring an unreadable frame: ${err.message}`);
      }
      for (const frame of Array.isArray(parsed) ? parsed : [parsed]) {
        if (conn.done || !frame || typeof frame !== "object") continue;
        if (frame.type === "welcome") onWelcome(frame);
        else if (!conn.up) {
          if (conn.kind !== "websocket") continue; // SSE: frames of a stream being replaced
          return conn.finish(OTHER_SERVER, `expected a welcome frame, got ${frame.type}`);
        } else this._handleFrame(conn, frame);
      }
    }

    _onUp(conn, welcome) {
      conn.up = conn.wasUp = true;
      conn.upAt = now();
      conn.errors = 0;
      conn.welcome = this._welcome = welcome;
      this._server = conn.server;
      this.counters.welcomes += 1;
      this._pool.reset();
      this._tracker.cancelRecoveries();
      this._startReports(conn);
      this._log(`connected to ${conn.server} (${welcome.server}, session ${welcome.session}, ${conn.kind})`);
      this._emit(statusEvent(Status.SERVER_UP, { server: String(conn.server), detail: welcome.server }));
      this._wake();
    }

    _onSseUp(conn, welcome) {
      if (conn.reopening) { // a reopen for a subscription change: not a reconnect
        conn.reopening = false;
        conn.up = true;
        conn.upAt = now();
        conn.welcome = this._welcome = welcome;
        this.counters.welcomes += 1;
        this._wake();
        return;
      }
      this._resyncing.clear();
      this._onUp(conn, welcome);
    }

    _resubscribeAll(conn) {
      this._resyncing.clear();
      const items = [];
      for (const [subject, options] of this._subscriptions) {
        items.push(this._resubscribeItem(subject, options));
      }
      if (items.length) this._sendSubscribe(conn, items);
    }

    _resubscribeItem(subject, options) {
      const position = this._tracker.position(subject);
      const item = position
        ? { subject, recover: position, history: 0, conflation: options.conflation }
        : { subject, history: options.history, conflation: options.conflation };
      if (options.delta) item.delta = true;
      return item;
    }

    _retrySubscribe(conn, subjects) {
      setTimeout(() => {
        const items = [];
        for (const subject of Array.from(subjects).sort()) {
          const options = this._subscriptions.get(subject);
          if (options) items.push(this._resubscribeItem(subject, options));
        }
        if (items.length && conn.up) this._sendSubscribe(conn, items);
      }, 500 + 1000 * this._random());
    }

    _sendSubscribe(conn, items) {
      if (this._clientId != null) items = items.map((item) => ({ ...item, client_id: this._clientId }));
      for (let i = 0; i < items.length; i += SUBJECTS_PER_FRAME) {
        const chunk = items.slice(i, i + SUBJECTS_PER_FRAME);
        const id = this._ids++;
        this._subRequests.set(id, new Set(chunk.map((item) => item.subject)));
        if (!conn.send({ op: "subscribe", id, subjects: chunk })) return; // renewed on reconnect
      }
    }

    _watchdog(conn) {
      const t = now();
      if (!conn.up) {
        if (!conn.idle && t - conn.downSince > this._openTimeout && conn.kind === "sse") {
          conn.finish(OTHER_SERVER, `no welcome within ${fmt(this._openTimeout)} s`);
        } else if (!conn.wasUp && t - conn.lastRx > this._openTimeout && conn.kind === "websocket") {
          conn.finish(OTHER_SERVER, `no welcome within ${fmt(this._openTimeout)} s`);
        }
        return;
      }
      const keepalive = conn.welcome.keepalive;
      if (!(keepalive > 0)) return;
      if (t - conn.lastRx >= DEAD_FACTOR * keepalive) {
        conn.finish(OTHER_SERVER, `no frame from the server for ${fmt(DEAD_FACTOR * keepalive)} s`);
      } else if (conn.kind === "websocket" && this._reports && this._deliveryTimers(conn, t)) {
        // a clock ping went out: it is also the keepalive's ping
      } else if (conn.kind === "websocket" && t - conn.lastTx >= keepalive) {
        conn.send({ op: "ping" });
      }
    }

    /** Clock pings and reports when due (true when a ping was sent). */
    _deliveryTimers(conn, t) {
      if (t >= this._nextReport) {
        const report = this.delivery.report(t - this._periodStart);
        this._periodStart = t;
        this._nextReport = t + this._reportInterval;
        if (report) conn.send(report);
      }
      if (t < this._nextPing) return false;
      const id = this._ids++;
      if (this._clockPings.size >= 2 * EARLY_CLOCK_PINGS) this._clockPings.delete(this._clockPings.keys().next().value);
      this._clockPings.set(id, this._clock() * 1000);
      this._pingsSent += 1;
      this._nextPing = t + (this._pingsSent < EARLY_CLOCK_PINGS ? 1 : this._reportInterval);
      conn.send({ op: "ping", id });
      return true;
    }

    _startReports(conn) {
      if (!this._reports || conn.kind !== "websocket") return;
      this.delivery.clearClock();
      this._clockPings.clear();
      this._pingsSent = 0;
      const t = now();
      this._nextPing = t; // the watchdog sends the first at once
      if (this._nextReport === Infinity) {
        this._nextReport = t + this._reportInterval;
        this._periodStart = t;
      }
    }

    _pong(frame) {
      const t0 = frame.id != null ? this._clockPings.get(frame.id) : undefined;
      if (t0 === undefined) return;
      this._clockPings.delete(frame.id);
      if (typeof frame.time === "number") this.delivery.addSample(t0, frame.time, this._clock() * 1000);
    }

    /** What one message says of the delivery: its latency (seconds or null), a duplicate, a
     * gap, a resync (client/protocol.py _measure). */
    _measure(frame, decision) {
      if (!this._reports) return null;
      const subject = frame.subject;
      let latency = null;
      if (decision.action === "deliver") {
        if (frame.kind === "update" && frame.ingress > 0) {
          const micros = this.delivery.latency(subject, frame.ingress, this._clock() * 1000);
          latency = micros == null ? null : micros / 1e6;
        }
        if (decision.reason === "new epoch adopted") this.delivery.count(subject, "resyncs");
      } else if (decision.action === "drop") {
        if (decision.reason.startsWith("duplicate")) this.delivery.count(subject, "duplicates");
      } else {
        this.delivery.count(subject, "gaps");
        if (decision.action === "resync") this.delivery.count(subject, "resyncs");
      }
      return latency;
    }

    // --- frames from the server ----------------------------------------------------------------

    _handleFrame(conn, frame) {
      switch (frame.type) {
        case "message": return this._handleMessage(conn, frame);
        case "subscribed": return this._handleSubscribed(conn, frame);
        case "publish_result":
          return this._resolve(frame.id, publishResult(
            Object.values(PublishStatus).includes(frame.result) ? frame.result : PublishStatus.FAILED,
            frame.subject, {
              epoch: frame.epoch ?? null, seq: frame.seq ?? null, reason: frame.reason ?? null,
              duplicate: frame.duplicate === true,
            }));
        case "error": return this._handleError(conn, frame);
        case "presence": return this._answerPresence(frame.id, "resolve", Object.freeze({
          subject: frame.subject, subscribers: frame.subscribers, truncated: frame.truncated === true,
          clients: (frame.clients || []).map((c) => Object.freeze(
            { session: c.session, clientId: c.client_id, member: c.member })),
        }));
        case "closing": // SSE: the close code a WebSocket would get; the stream ends next
          if (conn.kind !== "sse") return undefined;
          return conn.finish(ruleForClose(frame.code ?? null),
            `closed by the server: ${frame.code ?? ""} ${frame.reason || ""}`.trim(),
            frame.code ?? null, frame.reason || null);
        case "keepalive":
          this.counters.keepalives += 1;
          return undefined;
        case "pong": return this._pong(frame);
        default: return undefined; // unsubscribed, unknown (forward compatible)
      }
    }

    _answerPresence(id, how, value) {
      const waiting = id != null ? this._presences.get(id) : null;
      if (waiting) waiting[how](value);
      return undefined;
    }

    _handleMessage(conn, frame) {
      const options = this._subscriptions.get(frame.subject);
      if (!options) return;
      const decision = this._tracker.onMessage(frame);
      const latency = this._measure(frame, decision);
      if (decision.action === "deliver" && frame.subject === PRESENCE_SUBJECT && this.onPresence) {
        const f = frame.fields || {};
        return this._call(this.onPresence, Object.freeze({
          event: f.event, subject: f.subject, session: f.session, clientId: f.client_id || "",
          member: f.on, subscribers: Number(f.subscribers), id: f.id, ts: Number(f.ts),
        }), "onPresence");
      }
      if (decision.action === "deliver") {
        const fields = options.delta ? this._merged(frame) : frame.fields || {};
        const message = Object.freeze({
          subject: frame.subject, content: frame.content, fields,
          type: frame.kind, epoch: frame.epoch, seq: frame.seq, qos: frame.qos,
          retained: frame.retained, ts: frame.ts, conflated: frame.conflated === true, latency,
        });
        return this._call(this.onMessage, message, "onMessage");
      }
      if (decision.action === "drop") return this._log(`${frame.subject} #${frame.seq} dropped: ${decision.reason}`);
      this._log(`${frame.subject}: ${decision.reason} -> ${decision.action}`);
      if (decision.action === "resync") this._resyncing.add(frame.subject);
      if (conn.kind === "sse") return conn.reopen(); // positions go in the URL
      const item = { subject: frame.subject, history: 0, conflation: options.conflation };
      if (options.delta) item.delta = true;
      if (decision.action === "recover") item.recover = decision.recover;
      this._sendSubscribe(conn, [item]);
    }

    /** A delta subscription's full field set after `frame`: a snapshot replaces what is held,
     * anything else (a delta, a whole update, recovered history) is merged into it. */
    _merged(frame) {
      let held = this._fields.get(frame.subject);
      if (!held || frame.kind === "snapshot") {
        held = {};
        this._fields.set(frame.subject, held);
      }
      Object.assign(held, frame.fields || {});
      return { ...held }; // the application's copy
    }

    _handleSubscribed(conn, frame) {
      const waiting = frame.id != null ? this._subRequests.get(frame.id) : null;
      if (waiting) {
        waiting.delete(frame.subject);
        if (!waiting.size) this._subRequests.delete(frame.id);
      }
      if (!this._subscriptions.has(frame.subject)) return;
      this._tracker.onSubscribed(frame);
      if (this._reports && frame.status === "allow") {
        if (frame.recovery === "recovered" || frame.recovery === "up_to_date") {
          this.delivery.count(frame.subject, "recovered");
        } else if (frame.recovery === "new_epoch" || frame.recovery === "failed") {
          this.delivery.count(frame.subject, "recovery_failed");
          this.delivery.count(frame.subject, "resyncs");
        }
      }
      let status = Status.SUBSCRIBE_ALLOW;
      let detail = null;
      if (frame.status !== "allow") {
        this._subscriptions.delete(frame.subject);
        [status, detail] = [Status.SUBSCRIBE_DENY, frame.reason || "denied"];
      } else if (frame.recovery === "recovered" || frame.recovery === "up_to_date") {
        [status, detail] = [Status.DATA_SYNC, frame.recovery];
      } else if (frame.recovery === "new_epoch" || frame.recovery === "failed") {
        [status, detail] = [Status.DATA_RESYNC, frame.recovery];
      } else if (this._resyncing.has(frame.subject)) {
        [status, detail] = [Status.DATA_RESYNC, "gap_resync"];
      }
      this._resyncing.delete(frame.subject);
      if (status === Status.DATA_SYNC && conn.quiet && conn.quiet.delete(frame.subject)) return;
      this._emit(statusEvent(status, { server: String(conn.server), subject: frame.subject, detail }));
    }

    _handleError(conn, frame) {
      const text = `${frame.code}: ${frame.message}`;
      if (frame.id != null && this._presences.has(frame.id)) {
        return this._answerPresence(frame.id, "reject", presenceError(frame.code, text));
      }
      if (frame.id != null && this._pending.has(frame.id)) {
        const result = ERROR_RESULTS[frame.code] || PublishStatus.FAILED;
        return this._resolve(frame.id, publishResult(result, "", { reason: text }));
      }
      const waiting = frame.id != null ? this._subRequests.get(frame.id) : null;
      if (waiting) {
        this._subRequests.delete(frame.id);
        if (frame.code === "engine_unavailable") {
          // a cluster without quorum: keep the subscriptions, subscribe again in 0.5-1.5 s
          this._retrySubscribe(conn, waiting);
          for (const subject of Array.from(waiting).sort()) {
            this._emit(statusEvent(Status.ERROR, { server: String(conn.server), subject, detail: text }));
          }
          return;
        }
        for (const subject of Array.from(waiting).sort()) {
          const event = { server: String(conn.server), subject, detail: text };
          if (this._tracker.recovering(subject) && frame.code !== "denied") {
            // a refused gap recovery: keep the subscription, the next gap retries
            this._tracker.cancelRecoveries([subject]);
            this._emit(statusEvent(Status.ERROR, event));
            continue;
          }
          this._subscriptions.delete(subject);
          this._tracker.forget(subject);
          this._resyncing.delete(subject);
          this._emit(statusEvent(Status.SUBSCRIBE_DENY, event));
        }
        return;
      }
      this._log(`server error ${text}`);
      this._emit(statusEvent(Status.ERROR, { server: String(conn.server), detail: text }));
    }

    // --- publishing ----------------------------------------------------------------------------

    async _publish(message, timeout) {
      const { subject } = message;
      const deadline = now() + timeout;
      const failed = (reason, extra = {}) => publishResult(PublishStatus.FAILED, subject, {
        reason, msgId: message.msg_id, ...extra,
      });
      while (true) {
        if (this._stopped || this._closing) return failed("the client is closed");
        if (this._sseMode()) return this._publishHttp(message, deadline);
        const conn = this._conn;
        if (!conn || !conn.up) {
          if (!(await this._waitReady(deadline - now()))) {
            const last = this._lastFailure ? ` (last failure: ${this._lastFailure})` : "";
            return failed(`not connected within ${timeout} s${last}`);
          }
          continue;
        }
        const tooLarge = this._tooLarge(message);
        if (tooLarge) return tooLarge;
        const id = this._ids++;
        const answer = new Promise((resolve) => this._pending.set(id, resolve));
        if (!conn.send({ op: "publish", id, ...message })) { // closing: wait for the next connection
          this._pending.delete(id);
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        let timer;
        const expiry = new Promise((resolve) => {
          timer = setTimeout(resolve, Math.max(0, deadline - now()) * 1000, null);
        });
        const result = await Promise.race([answer, expiry]);
        clearTimeout(timer);
        this._pending.delete(id);
        if (result === null) return failed(`no answer within ${timeout} s`, { outcomeUnknown: true });
        if (result.outcomeUnknown && !(this._stopped || this._closing)) continue; // same msg_id again
        return publishResult(result.result, result.subject || subject, {
          epoch: result.epoch, seq: result.seq, reason: result.reason, duplicate: result.duplicate,
          msgId: message.msg_id, outcomeUnknown: result.outcomeUnknown,
        });
      }
    }

    _tooLarge(message) {
      const max = this._welcome ? this._welcome.max_message_size : null;
      if (max == null) return null;
      let size = utf8Length(message.content);
      for (const [name, value] of Object.entries(message.fields)) size += utf8Length(name) + utf8Length(value);
      if (size <= max) return null;
      return publishResult(PublishStatus.TOO_LARGE, message.subject, {
        reason: `message of ${size} bytes exceeds the server's max_message_size ${max}`,
      });
    }

    /** Publish by POST /publish (SSE transport): 200 ok, 403 denied, 413 too large, else failed. */
    async _publishHttp(message, deadline) {
      const tooLarge = this._tooLarge(message);
      if (tooLarge) return tooLarge;
      const server = this._server || this._pool.choose();
      const headers = { "content-type": "application/json" };
      if (this._token) headers.authorization = `Bearer ${this._token}`;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), Math.max(0, deadline - now()) * 1000);
      const failed = (reason) => publishResult(PublishStatus.FAILED, message.subject, {
        reason, msgId: message.msg_id, outcomeUnknown: true,
      });
      try {
        const response = await fetch(server.httpUrl("/publish"), {
          method: "POST", headers, body: JSON.stringify(message), signal: abort.signal, cache: "no-store",
        });
        let body = {};
        try {
          body = await response.json();
        } catch (err) { /* not JSON: keep the status alone */ }
        if (response.ok && body.result === "ok") {
          return publishResult(PublishStatus.OK, message.subject, {
            epoch: body.epoch, seq: body.seq, duplicate: body.duplicate === true, msgId: message.msg_id,
          });
        }
        const result = HTTP_RESULTS[response.status] || PublishStatus.FAILED;
        const reason = body.code ? `${body.code}: ${body.detail || body.title || ""}` : `HTTP ${response.status}`;
        return publishResult(result, message.subject, { reason, msgId: message.msg_id });
      } catch (err) {
        return failed(abort.signal.aborted ? "no answer in time" : `cannot reach ${server}: ${describe(err)}`);
      } finally {
        clearTimeout(timer);
      }
    }

    // --- helpers -------------------------------------------------------------------------------

    /** Resolves true once connected (or stopped), false after `timeout` seconds (null: never). */
    _waitReady(timeout) {
      if (this.connected || this._stopped) return Promise.resolve(true);
      if (timeout != null && timeout <= 0) return Promise.resolve(false);
      return new Promise((resolve) => {
        let timer = null;
        const waiter = (value) => {
          clearTimeout(timer);
          this._waiters.delete(waiter);
          resolve(value);
        };
        if (timeout != null) timer = setTimeout(() => waiter(false), timeout * 1000);
        this._waiters.add(waiter);
      });
    }

    _wake() {
      for (const waiter of Array.from(this._waiters)) waiter(true);
    }

    _resolve(id, result) {
      const resolve = id != null ? this._pending.get(id) : null;
      if (resolve) {
        this._pending.delete(id);
        resolve(result);
      }
    }

    _failPending(reason) {
      const pending = Array.from(this._pending.values());
      this._pending.clear();
      pending.forEach((resolve) => resolve(publishResult(PublishStatus.FAILED, "", { reason, outcomeUnknown: true })));
    }

    _stop(event) {
      this._stopped = true;
      this._stopEvent = event;
      this._failPending("the client is closed");
      this._wake();
      this._emit(event);
    }

    _downEvent(server, end, retryIn) {
      return statusEvent(Status.SERVER_DOWN, {
        server: String(server), detail: end.detail, closeCode: end.code, closeReason: end.reason, retryIn,
      });
    }

    _emit(event) {
      this._log(`status ${[event.status, event.subject, event.detail].filter(Boolean).join(" ")}`);
      this._call(this.onStatus, event, "onStatus");
    }

    _call(callback, arg, name) {
      if (!callback) return;
      try {
        callback(arg);
      } catch (err) {
        console.error(`pushgrid: ${name} callback raised`, err);
      }
    }

    _log(text) {
      if (this._debug) console.debug(`pushgrid: ${text}`);
    }

    _checkOpen() {
      if (this._closing || this._stopped) throw new Error("the client is closed");
    }
  }

  return {
    VERSION, PushgridClient, ConnectFailed, Status, MessageType, PublishStatus,
    ServerAddress, ServerPool, parseServer, parseServers, Backoff, backoffPolicy, DEFAULT_BACKOFF,
    ruleForClose, RecoveryTracker, subjectError, msgIdError, DeliveryReporter, bucketOf, LATENCY_UPPER,
  };
});
