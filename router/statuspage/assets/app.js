// Anvil router status page.
//
// Everything shown comes from the router's existing admin endpoints, read with the operator's admin
// token: GET /admin/v1/capacity (tiers, members, states, ceilings, telemetry, passive health),
// GET /metrics (request counters and histograms, refusals, the pressure sample's age) and
// GET /admin/v1/decisions?format=json (the decision ring), and GET /admin/v1/config (the
// configuration in force and the last reload attempt; the admin token's only, so under an observer
// token the Config panel says "admin only"). Rates "over the last minute" are the
// difference between this page's own successive reads of the /metrics counters, over at most the last
// 60 seconds of reads: the router keeps no history for the page.
//
// Every value from the router reaches the page as text (textContent, createTextNode); no markup is
// ever built from data. The token lives in sessionStorage only and travels as a bearer header.
"use strict";

(function () {
  const TOKEN_KEY = "anvil.adminToken";
  const REFRESH_MS = 2000;
  const WINDOW_MS = 60000;
  const DECISIONS_READ = 200; // records read from the ring: enough to find each member's last outcome
  const DECISIONS_SHOWN = 25;
  const QUIESCE_REASON = "status-page";
  const CHANGES_SHOWN = 20; // change lines of the last reload shown in the Config panel

  // ---------------------------------------------------------------------------------------------
  // Pure helpers: parsing and arithmetic. Exposed on window.anvilStatus for the browser tests.

  // parseMetrics reads the Prometheus text format into an array of {name, labels, value}. Comment
  // lines are skipped; a line that does not parse is skipped rather than trusted.
  function parseMetrics(text) {
    const out = [];
    for (const raw of String(text).split("\n")) {
      const line = raw.trim();
      if (line === "" || line[0] === "#") continue;
      const s = parseSample(line);
      if (s !== null) out.push(s);
    }
    return out;
  }

  function parseSample(line) {
    let i = 0;
    while (i < line.length && /[A-Za-z0-9_:]/.test(line[i])) i++;
    if (i === 0) return null;
    const name = line.slice(0, i);
    const labels = {};
    if (line[i] === "{") {
      i++;
      for (;;) {
        while (line[i] === " " || line[i] === ",") i++;
        if (line[i] === "}") { i++; break; }
        const start = i;
        while (i < line.length && /[A-Za-z0-9_]/.test(line[i])) i++;
        const key = line.slice(start, i);
        if (key === "" || line[i] !== "=" || line[i + 1] !== "\"") return null;
        i += 2;
        let value = "";
        for (;;) {
          if (i >= line.length) return null;
          const c = line[i++];
          if (c === "\"") break;
          if (c === "\\") {
            const e = line[i++];
            value += e === "n" ? "\n" : e;
          } else {
            value += c;
          }
        }
        labels[key] = value;
      }
    }
    const fields = line.slice(i).trim().split(/\s+/);
    if (fields.length < 1 || fields[0] === "") return null;
    const value = Number(fields[0] === "+Inf" ? Infinity : fields[0] === "-Inf" ? -Infinity : fields[0]);
    if (Number.isNaN(value) && fields[0] !== "NaN") return null;
    return { name: name, labels: labels, value: value };
  }

  const SEP = "\u0000"; // joins IDs into map keys; IDs never contain it

  // snapshotOf keeps, from one /metrics read, the counters the page turns into rates and the
  // instantaneous pressure sample ages.
  function snapshotOf(samples, t) {
    const snap = { t: t, requests: new Map(), refusals: new Map(), attempts: new Map(), buckets: new Map(), ages: new Map() };
    const add = (m, k, v) => m.set(k, (m.get(k) || 0) + v);
    for (const s of samples) {
      const l = s.labels;
      switch (s.name) {
        case "anvil_router_requests_total":
          if (l.tier) add(snap.requests, l.tier + SEP + l.outcome, s.value);
          if (l.tier && l.member) add(snap.requests, l.tier + SEP + l.member + SEP + l.outcome, s.value);
          break;
        case "anvil_router_admission_refusals_total":
          add(snap.refusals, l.tier, s.value);
          break;
        case "anvil_router_upstream_attempts_total":
          add(snap.attempts, l.tier + SEP + (l.member || ""), s.value);
          break;
        case "anvil_router_request_duration_seconds_bucket":
          add(snap.buckets, l.tier + SEP + l.le, s.value);
          break;
        case "anvil_router_replica_member_pressure_sample_age_seconds":
          snap.ages.set(l.tier + SEP + l.member, s.value);
          break;
      }
    }
    return snap;
  }

  // delta is a counter's increase from older to newer; a counter that went down was reset (the
  // router restarted), so its whole new value is the increase.
  function delta(newer, older, key) {
    const n = newer.get(key) || 0;
    const o = older.get(key) || 0;
    return n >= o ? n - o : n;
  }

  // histogramQuantile is Prometheus' histogram_quantile over cumulative buckets [{le, count}]
  // sorted by le, the last one +Inf: linear interpolation inside the bucket that holds the rank,
  // the highest finite bound when the rank falls in +Inf, null without observations.
  function histogramQuantile(q, buckets) {
    if (buckets.length === 0) return null;
    const total = buckets[buckets.length - 1].count;
    if (!(total > 0)) return null;
    const rank = q * total;
    for (let i = 0; i < buckets.length; i++) {
      if (buckets[i].count >= rank) {
        if (buckets[i].le === Infinity) return i > 0 ? buckets[i - 1].le : null;
        const lower = i > 0 ? buckets[i - 1].le : 0;
        const before = i > 0 ? buckets[i - 1].count : 0;
        const inBucket = buckets[i].count - before;
        if (inBucket <= 0) return buckets[i].le;
        return lower + (buckets[i].le - lower) * ((rank - before) / inBucket);
      }
    }
    return null;
  }

  // rates compares two snapshots: per tier the requests, successes, refusals and latency buckets,
  // per member the upstream attempts (requests routed to it).
  function rates(newer, older, tierIDs, memberKeys) {
    const out = { seconds: (newer.t - older.t) / 1000, tiers: new Map(), members: new Map() };
    for (const tier of tierIDs) {
      let requests = 0;
      let success = 0;
      for (const key of newer.requests.keys()) {
        const parts = key.split(SEP);
        if (parts.length !== 2 || parts[0] !== tier) continue;
        const d = delta(newer.requests, older.requests, key);
        requests += d;
        if (parts[1] === "success") success += d;
      }
      const buckets = [];
      for (const key of newer.buckets.keys()) {
        const [t, le] = key.split(SEP);
        if (t === tier) buckets.push({ le: le === "+Inf" ? Infinity : Number(le), count: delta(newer.buckets, older.buckets, key) });
      }
      buckets.sort((a, b) => a.le - b.le);
      out.tiers.set(tier, {
        requests: requests,
        success: success,
        refusals: delta(newer.refusals, older.refusals, tier),
        p50: histogramQuantile(0.5, buckets),
        p99: histogramQuantile(0.99, buckets),
      });
    }
    for (const key of memberKeys) {
      out.members.set(key, delta(newer.attempts, older.attempts, key));
    }
    return out;
  }

  // decidedBy names what made a decision, from the record's route, strategy and outcome.
  function decidedBy(rec) {
    if (rec.outcome === "refused" && !rec.tier) return "request gate";
    if (rec.outcome === "not_admitted") return "admission";
    if (rec.route === "direct") return "direct";
    if (rec.strategy === "round_robin") return "round robin";
    if (rec.strategy === "capacity") return rec.replica_scheduler ? "capacity scheduler" : "capacity";
    return "—";
  }

  // freshnessOf is the selected member's telemetry freshness in a capacity decision's evidence.
  function freshnessOf(rec) {
    const d = rec.replica_scheduler;
    if (!d || !Array.isArray(d.scores)) return "—";
    for (const s of d.scores) {
      if (s.member_id === d.selected_member_id) return String(s.freshness);
    }
    return "—";
  }

  // lastOutcomes maps tier+member to the newest record's outcome and status (records oldest first).
  function lastOutcomes(records) {
    const out = new Map();
    for (const rec of records) {
      if (rec.tier && rec.member) out.set(rec.tier + SEP + rec.member, { outcome: rec.outcome, status: rec.status });
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Formatting. Every function returns plain text.

  const numberFormat = new Intl.NumberFormat("en-US");

  function fmtInt(v) { return v === null || v === undefined ? "—" : numberFormat.format(v); }

  function fmtSeconds(s) {
    if (s === null || s === undefined || !Number.isFinite(s)) return "—";
    if (s < 1) return Math.round(s * 1000) + " ms";
    return s.toFixed(s < 10 ? 2 : 1) + " s";
  }

  function fmtAge(s) {
    if (s === null || s === undefined || !Number.isFinite(s)) return "";
    return s < 10 ? s.toFixed(1) + " s" : Math.round(s) + " s";
  }

  function fmtDateTime(iso) {
    const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)/.exec(String(iso));
    return m ? m[1] + " " + m[2] + " UTC" : String(iso);
  }

  function fmtTime(iso) {
    const m = /T(\d\d:\d\d:\d\d)(\.\d{1,3})?/.exec(String(iso));
    return m ? m[1] + (m[2] || "") + " UTC" : String(iso);
  }

  function outcomeClass(outcome) {
    if (outcome === "success") return "ok";
    if (outcome === "refused" || outcome === "not_admitted" || outcome === "client_canceled") return "warn";
    return "bad";
  }

  // ---------------------------------------------------------------------------------------------
  // DOM helpers: elements from constant tags and classes, text from data.

  function el(tag, className, ...children) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  const TONES = new Set(["ok", "warn", "bad", "idle"]);

  // badge is a coloured label whose text says what the colour says.
  function badge(tone, text, kind) {
    const b = el("span", "badge " + (TONES.has(tone) ? tone : "idle"), text);
    if (kind) b.dataset.kind = kind;
    return b;
  }

  // gauge is active / ceiling as a meter and as text; without a ceiling only the count.
  function gauge(active, ceiling) {
    const wrap = el("span", "gauge");
    if (active === null || active === undefined) {
      wrap.appendChild(el("span", "num", "—"));
      return wrap;
    }
    if (ceiling > 0) {
      const m = document.createElement("meter");
      m.min = 0;
      m.max = ceiling;
      m.value = Math.min(active, ceiling);
      m.low = ceiling * 0.7;
      m.high = ceiling * 0.9;
      m.optimum = 0;
      m.title = active + " of " + ceiling;
      wrap.appendChild(m);
    }
    wrap.appendChild(el("span", "num", fmtInt(active) + " / " + (ceiling > 0 ? fmtInt(ceiling) : "no ceiling")));
    return wrap;
  }

  function stateBadges(state, draining, reason, passive) {
    const out = [];
    if (state === "unavailable") {
      out.push(badge("bad", "unavailable", "state"));
    } else if (draining) {
      out.push(badge("warn", "draining", "state"));
    } else if (state === "quiesced") {
      out.push(badge("warn", "quiesced", "state"));
    } else if (state === "admitting") {
      out.push(badge("ok", "admitting", "state"));
    } else {
      out.push(badge("idle", String(state), "state"));
    }
    if (reason) out.push(el("span", "reason", "reason: " + reason));
    if (passive && passive.state === "ejected") out.push(badge("bad", "ejected by passive health", "health"));
    if (passive && passive.state === "half_open") out.push(badge("warn", "half-open trial", "health"));
    return out;
  }

  function freshnessBadge(tel, age) {
    if (!tel) return [el("span", "muted", "—")];
    const tone = { fresh: "ok", stale: "warn", failed: "bad" }[tel.freshness] || "idle";
    const ageText = fmtAge(age);
    const text = String(tel.freshness) + (ageText ? " · " + ageText + " old" : "");
    return [badge(tone, text, "freshness")];
  }

  // ---------------------------------------------------------------------------------------------
  // Rendering. Cards and rows are kept by ID so the action buttons survive refreshes; data cells
  // are replaced with fresh text nodes each time.

  const cards = new Map(); // tier ID -> {root, cells, members: Map(member ID -> cells)}

  function setCell(cell, ...nodes) {
    cell.replaceChildren(...nodes.flat().map((n) => (typeof n === "string" ? document.createTextNode(n) : n)));
  }

  function actionButtons(tier, member) {
    const box = el("span", "actions");
    for (const [action, label] of [["quiesce", "Quiesce"], ["drain", "Drain"], ["readmit", "Readmit"]]) {
      const b = el("button", action === "readmit" ? "" : "danger", label);
      b.type = "button";
      b.dataset.action = action;
      b.dataset.tier = tier;
      if (member) b.dataset.member = member;
      b.setAttribute("aria-label", label + (member ? " member " + member + " of" : "") + " tier " + tier);
      box.appendChild(b);
    }
    return box;
  }

  function tierCard(t) {
    const root = el("section", "card tier");
    root.dataset.tier = t.id;
    const title = el("h2", "", el("span", "id", t.id));
    const meta = el("span", "meta");
    title.appendChild(meta);
    root.appendChild(title);
    const stats = el("dl", "stats");
    const cells = { meta: meta };
    for (const [key, label] of [["state", "state"], ["active", "active / ceiling"], ["queue", "queue"], ["refusals", "refusals (last min)"],
      ["success", "success rate (last min)"], ["p50", "latency p50"], ["p99", "latency p99"]]) {
      const dd = el("dd", key === "state" || key === "active" ? "" : "num");
      dd.dataset.field = key;
      stats.appendChild(el("div", "stat", el("dt", "", label), dd));
      cells[key] = dd;
    }
    root.appendChild(stats);
    root.appendChild(el("div", "tier-actions", actionButtons(t.id, "")));
    const members = new Map();
    if (t.kind === "replica") {
      const table = el("table", "grid members");
      const head = el("tr", "");
      for (const h of ["member", "state", "active / ceiling", "telemetry", "pressure (ppm)", "routed (last min)", "last outcome", "actions"]) {
        head.appendChild(el("th", /pressure|routed/.test(h) ? "num" : "", h));
      }
      table.appendChild(el("thead", "", head));
      const body = el("tbody", "");
      for (const m of t.members || []) {
        const row = el("tr", "");
        row.dataset.member = m.id;
        const mc = {};
        for (const [key, label] of [["id", "member"], ["state", "state"], ["active", "active / ceiling"], ["telemetry", "telemetry"],
          ["pressure", "pressure (ppm)"], ["routed", "routed (last min)"], ["outcome", "last outcome"]]) {
          const td = el("td", key === "pressure" || key === "routed" ? "num" : "");
          td.dataset.label = label;
          td.dataset.field = key;
          row.appendChild(td);
          mc[key] = td;
        }
        const act = el("td", "", actionButtons(t.id, m.id));
        act.dataset.label = "actions";
        row.appendChild(act);
        body.appendChild(row);
        members.set(m.id, mc);
      }
      table.appendChild(body);
      root.appendChild(el("div", "scroll", table));
    }
    return { root: root, cells: cells, members: members, shape: shapeOf(t) };
  }

  // shapeOf is what fixes a card's structure: a tier whose kind or membership changed is rebuilt.
  function shapeOf(t) {
    return t.kind + SEP + (t.members || []).map((m) => m.id).join(SEP);
  }

  // render draws one read: the capacity document, the parsed /metrics snapshots (newest and the
  // one a window earlier, or null) and the decision records (oldest first).
  function render(capacity, newer, older, records) {
    const tiers = Array.isArray(capacity && capacity.tiers) ? capacity.tiers : [];
    const tierIDs = tiers.map((t) => t.id);
    const memberKeys = [];
    for (const t of tiers) {
      for (const m of t.members || []) memberKeys.push(t.id + SEP + m.id);
      if (t.kind === "direct") memberKeys.push(t.id + SEP);
    }
    const r = newer && older && newer.t > older.t ? rates(newer, older, tierIDs, memberKeys) : null;
    const last = lastOutcomes(records || []);
    const container = document.getElementById("tiers");
    const seen = new Set();
    let prev = null;
    for (const t of tiers) {
      let card = cards.get(t.id);
      if (!card || card.shape !== shapeOf(t)) {
        if (card) card.root.remove();
        card = tierCard(t);
        cards.set(t.id, card);
      }
      seen.add(t.id);
      fillTier(card, t, r, newer, last);
      // The capacity JSON's order; a card already in place is not moved, so its buttons stay the
      // same elements under the pointer.
      const place = prev ? prev.nextSibling : container.firstChild;
      if (card.root !== place) container.insertBefore(card.root, place);
      prev = card.root;
    }
    for (const [id, card] of cards) {
      if (!seen.has(id)) {
        card.root.remove();
        cards.delete(id);
      }
    }
    renderDecisions(records || []);
    const note = document.getElementById("window-note");
    note.textContent = r
      ? "Rates and latencies cover the last " + Math.round(r.seconds) + " s of this page's reads of /metrics (at most one minute)."
      : "Rates and latencies appear after the page's second read of /metrics.";
  }

  function fillTier(card, t, r, newer, last) {
    const c = card.cells;
    setCell(c.meta, t.kind + (t.strategy ? " · " + t.strategy.replace("_", " ") : ""));
    const available = t.state !== "unavailable";
    setCell(c.state, stateBadges(t.state, t.draining, t.reason, null));
    setCell(c.active, gauge(available ? t.active_requests : null, t.max_concurrency));
    setCell(c.queue, t.queue ? fmtInt(t.queue.waiting) + " / " + fmtInt(t.queue.max_waiting) : "none");
    const tr = r && r.tiers.get(t.id);
    setCell(c.refusals, tr ? fmtInt(tr.refusals) : "…");
    setCell(c.success, tr ? (tr.requests > 0 ? (100 * tr.success / tr.requests).toFixed(1) + "% of " + fmtInt(tr.requests) : "no requests") : "…");
    setCell(c.p50, tr ? fmtSeconds(tr.p50) : "…");
    setCell(c.p99, tr ? fmtSeconds(tr.p99) : "…");
    for (const m of t.members || []) {
      const mc = card.members.get(m.id);
      if (!mc) continue;
      const key = t.id + SEP + m.id;
      setCell(mc.id, el("span", "id", m.id));
      setCell(mc.state, stateBadges(m.state, m.draining, m.reason, m.passive_health));
      setCell(mc.active, gauge(m.active_requests, m.max_concurrency));
      const age = newer ? newer.ages.get(key) : undefined;
      setCell(mc.telemetry, t.strategy === "capacity" ? freshnessBadge(m.telemetry, age) : [el("span", "muted", "not scraped (" + String(t.strategy || "").replace("_", " ") + ")")]);
      const ppm = m.telemetry && m.telemetry.freshness === "fresh" ? m.telemetry.pressure_ppm : null;
      setCell(mc.pressure, ppm === null || ppm === undefined ? "—" : fmtInt(ppm));
      setCell(mc.routed, r ? fmtInt(r.members.get(key)) : "…");
      const lo = last.get(key);
      setCell(mc.outcome, lo ? [badge(outcomeClass(lo.outcome), String(lo.outcome) + (lo.status ? " · " + lo.status : ""), "outcome")] : "—");
    }
  }

  // renderConfig fills the Config panel from GET /admin/v1/config and shows the red banner while
  // the last reload attempt was refused: a newer refusal replaces its text, a success clears it.
  function renderConfig(st) {
    const c = st || {};
    if (c.admin_only) {
      clearConfig();
      setCell(document.getElementById("config-source"), "admin only");
      return;
    }
    const digest = String(c.digest || "");
    setCell(document.getElementById("config-source"), c.source ? String(c.source) : "none (not started from a file)");
    const d = document.getElementById("config-digest");
    setCell(d, digest ? digest.slice(0, 12) + "…" : "—");
    d.title = digest; // the whole digest on hover, to compare with sha256sum
    setCell(document.getElementById("config-generation"), fmtInt(c.generation));
    setCell(document.getElementById("config-loaded"), c.loaded_at ? fmtDateTime(c.loaded_at) : "—");
    const last = c.last_reload;
    setCell(document.getElementById("config-last"), last
      ? [badge(last.result === "refused" ? "bad" : "ok", String(last.result), "reload"), document.createTextNode(fmtDateTime(last.time))]
      : "none since start");
    const changes = Array.isArray(last && last.changes) ? last.changes : [];
    document.getElementById("config-changes").replaceChildren(...changes.slice(0, CHANGES_SHOWN).map((ch) => el("li", "", String(ch))),
      ...(changes.length > CHANGES_SHOWN ? [el("li", "muted", "and " + (changes.length - CHANGES_SHOWN) + " more")] : []));
    const banner = document.getElementById("reload-refused");
    const refused = last && last.result === "refused";
    banner.textContent = refused
      ? "The last config reload (" + fmtDateTime(last.time) + ") was refused: " + String(last.error || "no reason given") +
        ". The running configuration (generation " + fmtInt(c.generation) + ") keeps serving."
      : "";
    banner.hidden = !refused;
  }

  function clearConfig() {
    for (const id of ["config-source", "config-digest", "config-generation", "config-loaded", "config-last", "config-changes"]) {
      document.getElementById(id).replaceChildren();
    }
    document.getElementById("config-digest").title = "";
    const banner = document.getElementById("reload-refused");
    banner.textContent = "";
    banner.hidden = true;
  }

  function renderDecisions(records) {
    const body = document.querySelector("#decisions tbody");
    const rows = [];
    for (let i = records.length - 1; i >= 0 && rows.length < DECISIONS_SHOWN; i--) {
      const rec = records[i];
      const tr = el("tr", "");
      const cells = [
        ["time", fmtTime(rec.start)], ["alias", rec.alias || "—"], ["tier", rec.tier || "—"], ["member", rec.member || "—"],
      ];
      for (const [label, text] of cells) {
        const td = el("td", "", String(text));
        td.dataset.label = label;
        tr.appendChild(td);
      }
      const oc = el("td", "", badge(outcomeClass(rec.outcome), String(rec.outcome) + (rec.status ? " · " + rec.status : ""), "outcome"));
      oc.dataset.label = "outcome";
      tr.appendChild(oc);
      const by = el("td", "", decidedBy(rec));
      by.dataset.label = "decided by";
      tr.appendChild(by);
      const fr = el("td", "", freshnessOf(rec));
      fr.dataset.label = "freshness";
      tr.appendChild(fr);
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    document.getElementById("decisions-empty").hidden = rows.length > 0;
  }

  // ---------------------------------------------------------------------------------------------
  // The router: every call carries the token as a bearer header and nothing else.

  let token = null;
  let history = []; // metrics snapshots of the last window, oldest first
  let timer = null;
  let refreshing = false;
  let paused = false; // a transition dialog is open, or a test asked
  let rendered = 0;
  let lastRead = null;

  class AuthError extends Error {}

  async function call(method, path, body, accept) {
    const headers = { Authorization: "Bearer " + token, Accept: accept || "application/json" };
    const init = { method: method, headers: headers, cache: "no-store", credentials: "omit", redirect: "error", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    if (resp.status === 401) throw new AuthError("the router refused the admin token");
    const text = await resp.text();
    if (!resp.ok) {
      let msg = "";
      try {
        const e = JSON.parse(text).error;
        msg = e.message + " (" + e.code + ")";
        if (e.active_requests !== undefined) msg += ", " + e.active_requests + " still active";
      } catch (_) {
        msg = "HTTP " + resp.status;
      }
      const err = new Error(method + " " + path.split("?")[0] + ": " + msg);
      err.status = resp.status;
      throw err;
    }
    return text;
  }

  async function read() {
    const [capacity, metrics, decisions, config] = await Promise.all([
      call("GET", "/admin/v1/capacity"),
      call("GET", "/metrics", undefined, "text/plain;version=0.0.4"),
      call("GET", "/admin/v1/decisions?format=json&n=" + DECISIONS_READ),
      // The normalized config is the admin token's: an observer's page says so in the panel.
      call("GET", "/admin/v1/config").catch((e) => {
        if (e.status === 403) return JSON.stringify({ admin_only: true });
        throw e;
      }),
    ]);
    return { capacity: JSON.parse(capacity), metrics: metrics, decisions: JSON.parse(decisions), config: JSON.parse(config), t: Date.now() };
  }

  async function refresh() {
    if (refreshing || token === null) return;
    refreshing = true;
    clearTimeout(timer);
    timer = null;
    try {
      const got = await read();
      if (token === null) return; // signed out while reading
      lastRead = got;
      const snap = snapshotOf(parseMetrics(got.metrics), got.t);
      history.push(snap);
      history = history.filter((s) => snap.t - s.t <= WINDOW_MS);
      render(got.capacity, snap, history.length > 1 ? history[0] : null, got.decisions);
      renderConfig(got.config);
      showError("");
      document.getElementById("updated").textContent = "Updated " + new Date(got.t).toLocaleTimeString() + " · every " + REFRESH_MS / 1000 + " s while visible";
      rendered++;
    } catch (e) {
      if (e instanceof AuthError) {
        signOut("The router no longer accepts this token. Sign in again.");
        return;
      }
      showError("Could not read the router: " + e.message);
    } finally {
      refreshing = false;
      schedule();
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = null;
    if (token !== null && !document.hidden && !paused) timer = setTimeout(refresh, REFRESH_MS);
  }

  function showError(text) {
    const e = document.getElementById("error");
    e.textContent = text;
    e.hidden = text === "";
  }

  // ---------------------------------------------------------------------------------------------
  // Sign-in and sign-out.

  function showSignedIn(signedIn) {
    document.getElementById("signin").hidden = signedIn;
    document.getElementById("status").hidden = !signedIn;
    document.getElementById("signout").hidden = !signedIn;
  }

  async function signIn(candidate) {
    const err = document.getElementById("signin-error");
    err.hidden = true;
    token = candidate;
    try {
      await call("GET", "/admin/v1/capacity");
    } catch (e) {
      token = null;
      err.textContent = e instanceof AuthError
        ? "Wrong admin token: the router answered 401. Check ANVIL_ADMIN_TOKEN."
        : "Could not reach the router: " + e.message;
      err.hidden = false;
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, candidate);
    document.getElementById("token").value = "";
    showSignedIn(true);
    refresh();
  }

  function signOut(message) {
    token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    clearTimeout(timer);
    timer = null;
    history = [];
    lastRead = null;
    for (const card of cards.values()) card.root.remove();
    cards.clear();
    document.querySelector("#decisions tbody").replaceChildren();
    clearConfig();
    document.getElementById("updated").textContent = "";
    document.getElementById("result").hidden = true;
    showError("");
    showSignedIn(false);
    const err = document.getElementById("signin-error");
    err.textContent = message || "";
    err.hidden = !message;
    document.getElementById("token").focus();
  }

  // ---------------------------------------------------------------------------------------------
  // Transitions: a dry run first, its answer shown in a dialog, then the real call on confirmation.

  function scopeName(tier, member) {
    return member ? "member " + member + " of tier " + tier : "tier " + tier;
  }

  function describeScope(s) {
    if (!s) return "";
    let text = s.state;
    if (s.reason) text += " (reason " + s.reason + ")";
    text += ", " + s.active_requests + " active";
    if (s.draining) text += ", draining";
    return text;
  }

  function dialogAnswer(preview, action) {
    const yes = document.getElementById("confirm-yes");
    const question = document.getElementById("confirm-question");
    const actionable = preview.result === "would_change" || preview.result === "would_wait" || (action === "drain" && preview.result === "drained");
    yes.hidden = !actionable;
    question.textContent = actionable ? "Apply it?" : "Nothing would change.";
    return new Promise((resolve) => {
      const dlg = document.getElementById("confirm");
      const done = (ok) => {
        yes.onclick = null;
        document.getElementById("confirm-no").onclick = null;
        dlg.onclose = null;
        if (dlg.open) dlg.close();
        resolve(ok);
      };
      yes.onclick = () => done(true);
      document.getElementById("confirm-no").onclick = () => done(false);
      dlg.onclose = () => done(false);
      dlg.showModal();
      (actionable ? yes : document.getElementById("confirm-no")).focus();
    });
  }

  async function transition(action, tier, member) {
    const body = { action: action, tier: tier, dry_run: true };
    if (member) body.member_id = member;
    if (action === "quiesce") body.reason = QUIESCE_REASON;
    paused = true;
    clearTimeout(timer);
    try {
      const preview = JSON.parse(await call("POST", "/admin/v1/transition", body));
      document.getElementById("confirm-title").textContent = action[0].toUpperCase() + action.slice(1) + " " + scopeName(tier, member) + "?";
      document.getElementById("confirm-preview").textContent = "Dry run answered: " + preview.result + ".";
      const details = document.getElementById("confirm-details");
      details.replaceChildren(
        el("dt", "", "now"), el("dd", "", member ? describeMember(preview.snapshot, member) : describeScope(tierScope(preview.snapshot))),
        el("dt", "", "after"), el("dd", "", describeScope(preview.scope)));
      const yes = document.getElementById("confirm-yes");
      yes.textContent = "Confirm " + action;
      if (!(await dialogAnswer(preview, action))) {
        showResult(action + " " + scopeName(tier, member) + ": cancelled after the dry run; nothing changed.");
        return;
      }
      body.dry_run = false;
      if (action === "drain") showResult("Draining " + scopeName(tier, member) + " (waits for its in-flight requests)…");
      const answer = JSON.parse(await call("POST", "/admin/v1/transition", body));
      showResult(action + " " + scopeName(tier, member) + ": " + answer.result + ". Now " + describeScope(answer.scope) + ".");
    } catch (e) {
      if (e instanceof AuthError) {
        signOut("The router no longer accepts this token. Sign in again.");
        return;
      }
      showResult(action + " " + scopeName(tier, member) + " refused: " + e.message);
    } finally {
      paused = false;
      refresh();
    }
  }

  function tierScope(snapshot) {
    if (!snapshot) return null;
    return { state: snapshot.state, reason: snapshot.reason, active_requests: snapshot.active_requests, draining: snapshot.draining };
  }

  function describeMember(snapshot, member) {
    for (const m of (snapshot && snapshot.members) || []) {
      if (m.id === member) return describeScope(m);
    }
    return "";
  }

  function showResult(text) {
    document.getElementById("result-text").textContent = text;
    document.getElementById("result").hidden = false;
  }

  // ---------------------------------------------------------------------------------------------
  // Wiring.

  function start() {
    document.getElementById("signin-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const v = document.getElementById("token").value.trim();
      if (v !== "") signIn(v);
    });
    document.getElementById("signout").addEventListener("click", () => signOut(""));
    document.getElementById("tiers").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-action]");
      if (b) transition(b.dataset.action, b.dataset.tier, b.dataset.member || "");
    });
    document.addEventListener("visibilitychange", () => {
      if (document.hidden) {
        clearTimeout(timer);
        timer = null;
      } else {
        refresh();
      }
    });
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) {
      token = saved;
      showSignedIn(true);
      refresh();
    } else {
      showSignedIn(false);
    }
  }

  window.anvilStatus = Object.freeze({
    parseMetrics: parseMetrics,
    snapshotOf: snapshotOf,
    histogramQuantile: histogramQuantile,
    rates: rates,
    decidedBy: decidedBy,
    freshnessOf: freshnessOf,
    render: render,
    renderConfig: renderConfig,
    rendered: () => rendered,
    idle: () => !refreshing && timer === null, // no read running and none scheduled
    lastRead: () => lastRead,
    pause: () => { paused = true; clearTimeout(timer); timer = null; },
    resume: () => { paused = false; refresh(); },
  });

  start();
})();
