/* rlab dashboard: draws the run embedded in #rlab-data. Run text is only ever set as
   textContent (never parsed as markup); nothing is fetched from the network.
   html.py wraps this file and report_detail.js in one function scope. */
  var D = JSON.parse(document.getElementById("rlab-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = { improved: "#16a34a", improved_off_path: "#65a30d", evaluated: "#64748b", failed: "#dc2626",
    repaired: "#d97706", recovered_failure: "#9333ea", running: "#0891b2" };
  var ACCENT = "#4338ca";
  var byId = {}, kids = {}, selected = null, onPath = {};
  D.nodes.forEach(function (n) { byId[n.id] = n; kids[n.id] = []; });
  // tree_rows is creation order with subtrees contiguous, so each child list is in creation order
  D.tree_rows.forEach(function (r) { var p = byId[r.id].parent_id; if (p && byId[p]) kids[p].push(r.id); });
  D.winner_path.forEach(function (id) { onPath[id] = true; });
  var higher = D.run.higher_is_better, metric = D.run.primary_metric;

  // ------------------------------------------------------------------ helpers
  function build(el, attrs, children) {
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") el.textContent = String(v);
      else if (k === "on") Object.keys(v).forEach(function (e) { el.addEventListener(e, v[e]); });
      else el.setAttribute(k, String(v));
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    });
    return el;
  }
  function h(tag, attrs, children) { return build(document.createElement(tag), attrs, children); }
  function s(tag, attrs, children) { return build(document.createElementNS(NS, tag), attrs, children); }
  function $(id) { return document.getElementById(id); }
  function num(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v) {
    if (!num(v)) return "–";
    var a = Math.abs(v);
    return a >= 1000 ? v.toFixed(1) : a >= 100 ? v.toFixed(2) : a >= 1 ? v.toFixed(4) : v.toFixed(5);
  }
  function signed(v) { return num(v) ? (v > 0 ? "+" : v < 0 ? "−" : "±") + fmt(Math.abs(v)) : "–"; }
  // a score with its bootstrap standard error, as the terminal writes it (se: preformatted text)
  function pm(v, se) { return num(v) && se ? fmt(v) + " ± " + se : fmt(v); }
  var VERDICT = { "better": "good", "within noise": "noise", "worse": "bad", "unmeasured": "muted" };
  function verdict(g) { return g ? h("span", { class: "verdict " + (VERDICT[g.verdict] || ""), text: g.text, title: g.detail }) : null; }
  function pct(v) { return num(v) ? (v >= 0 ? "+" : "−") + Math.abs(v).toFixed(2) + " %" : "–"; }
  function secs(v) {
    if (!num(v)) return "–";
    if (v < 60) return v.toFixed(v < 10 ? 2 : 1) + " s";
    var m = Math.floor(v / 60), r = Math.round(v % 60);
    return m < 60 ? m + "m " + String(r).padStart(2, "0") + "s" : Math.floor(m / 60) + "h " + String(m % 60).padStart(2, "0") + "m";
  }
  function int(v) { return num(v) ? Math.round(v).toLocaleString("en-US") : "–"; }
  function usd(v) { return num(v) ? "$" + v.toFixed(v < 1 ? 4 : 2) : "–"; }
  function chip(outcome) { return h("span", { class: "chip o-" + outcome, text: D.outcome_labels[outcome] || outcome }); }
  // why a node failed, in a word or two; the stage and the journal's sentence on hover
  function cause(f) { return h("span", { class: "cause", text: f.cause, title: f.cause_detail }); }
  function better(a, b) { return b === null || (higher ? a > b : a < b); }
  function card(label, value, note, cls, valueCls) {
    return h("div", { class: "card " + (cls || "") }, [h("div", { class: "label", text: label }),
      h("div", { class: "value " + (valueCls || ""), text: value }), note ? h("div", { class: "note", text: note, title: note }) : null]);
  }
  function kv(pairs) {
    var dl = h("dl", { class: "kv" });
    pairs.forEach(function (p) { if (p) { dl.appendChild(h("dt", { text: p[0] })); dl.appendChild(h("dd", { text: p[1] })); } });
    return dl;
  }
  function link(id) { return h("a", { text: id, on: { click: function () { select(id, true); } } }); }
  var tip = $("tooltip");
  function showTip(ev, lines) {
    tip.textContent = "";
    lines.forEach(function (l, i) { tip.appendChild(h("div", { style: i ? "" : "font-weight:600", text: l })); });
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 400) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  }
  function hideTip() { tip.hidden = true; }

  // ------------------------------------------------------------------ header and cards
  function header() {
    var r = D.run;
    $("run-title").textContent = (r.task || r.id) + " — " + r.id;
    $("run-sub").textContent = [metric + (higher ? " ↑ higher is better" : " ↓ lower is better"),
      "agent " + (r.agent || "?"), "strategy " + (r.strategy || "?"), r.created || ""].filter(Boolean).join("  ·  ");
    var iso = D.isolation || {};
    if (iso.warning) {
      var sub = $("run-sub");
      sub.parentNode.appendChild(h("div", { class: "bad warning", text: "WARNING: " + iso.warning }));
    }
    var st = $("run-state");
    st.textContent = D.status.stopped ? "stopped" : "in progress";
    st.className = "pill " + (D.status.stopped ? "done" : "live");
    st.title = D.status.stop_reason || "the journal has no stop event yet: the run is going, or was killed";
    var H = D.headline, cards = $("cards");
    cards.appendChild(card("Seed", H.seed ? pm(H.seed.score, H.seed_se_text) : "–", H.seed ? H.seed.id + " · starting point" : "no seed evaluated"));
    cards.appendChild(card("Best (validation)", H.best ? pm(H.best.score, H.best_se_text) : "–",
      H.best ? "★ " + H.best.id + " · " + H.best.hypothesis : "no node evaluated", "best"));
    var g = H.gain;
    cards.appendChild(card("Gain over seed", g ? signed(g.delta) : "–",
      g ? pct(g.relative_pct) + (higher ? " (higher is better)" : " better (lower is better)") : "needs a seed and a best node",
      "", g ? (g.better ? "good" : g.delta === 0 ? "" : "bad") : ""));
    var f = D.final;
    if (f) {
      var extra = f.test_error ? "test predictions unusable: " + f.test_error
        : [f.interval_text, f.gap_text, "node " + f.node + " · val " + pm(f.val_primary, f.val_se_text !== "-" ? f.val_se_text : null)]
          .filter(Boolean).join(" · ") + (f.audit_clean === false ? " · audit findings!" : " · audit clean") +
        (f.forced ? " · forced" : "");
      cards.appendChild(card("Test (rlab final)", num(f.test_primary) ? pm(f.test_primary, f.test_se_text !== "-" ? f.test_se_text : null) : "–",
        extra, "test", f.test_error ? "bad" : ""));
    } else {
      cards.appendChild(card("Test", "–", "scored once by `rlab final`"));
    }
    if (H.baselines.length) {
      var rows = h("div", { class: "rows" });
      H.baselines.forEach(function (b) {
        rows.appendChild(h("div", {}, [h("span", { text: b.name }), h("span", { class: "mono", text: fmt(b.score) +
          (b.gain ? "  (best " + pct(b.gain.relative_pct) + ")" : "") })]));
      });
      cards.appendChild(h("div", { class: "card" }, [h("div", { class: "label", text: "Reference baselines" }), rows]));
    }
    var it = D.budget.iterations;
    cards.appendChild(card("Iterations", it.used + (num(it.max) ? " / " + it.max : ""),
      D.status.stop_reason || "not stopped yet", "", ""));
  }

  function legend(el, extra) {
    ["improved", "improved_off_path", "evaluated", "failed", "repaired", "recovered_failure"].forEach(function (o) {
      el.appendChild(h("span", {}, [h("i", { class: "sw", style: "background:" + COLORS[o] }), D.outcome_labels[o]]));
    });
    (extra || []).forEach(function (x) { el.appendChild(x); });
  }

  // ------------------------------------------------------------------ the decision tree
  var ROW = 30, LANE = 16, PAD = 12;
  // rows and lanes come from report/tree_layout.py: creation order, subtrees contiguous, a
  // last child in its parent's lane and the others one lane right, so no connectors cross
  function treeView() {
    var order = [], row = {}, lane = {}, lanes = 1;
    D.tree_rows.forEach(function (r, i) { order.push(r.id); row[r.id] = i; lane[r.id] = r.lane; lanes = Math.max(lanes, r.lane + 1); });
    var width = PAD + lanes * LANE, box = $("tree");
    function X(id) { return PAD + lane[id] * LANE; }
    function Y(id) { return row[id] * ROW + ROW / 2; }
    var svg = s("svg", { class: "lanes", width: width, height: order.length * ROW, "aria-hidden": "true" });
    // each connector runs down its parent's lane (the trunk) and, into a child one lane to
    // the right, turns in an elbow just above the child's row; the winner's path goes on top
    var edges = order.filter(function (id) { var p = byId[id].parent_id; return p && byId[p]; });
    edges.sort(function (a, b) { return (onPath[a] && onPath[byId[a].parent_id] ? 1 : 0) - (onPath[b] && onPath[byId[b].parent_id] ? 1 : 0); });
    edges.forEach(function (id) {
      var n = byId[id], p = n.parent_id;
      var x1 = X(p), y1 = Y(p), x2 = X(id), y2 = Y(id), hot = onPath[id] && onPath[p];
      var d = x1 === x2 ? "M" + x1 + " " + y1 + " V" + y2
        : "M" + x1 + " " + y1 + " V" + (y2 - ROW * 0.7) + " Q" + x1 + " " + y2 + " " + x2 + " " + y2;
      svg.appendChild(s("path", { d: d, fill: "none", stroke: hot ? ACCENT : "#cbd5e1", "stroke-width": hot ? 3 : 1.6,
        "stroke-dasharray": n.kind === "debug" ? "4 3" : null, class: "edge" + (hot ? " winner" : ""), "data-from": p, "data-to": id }));
    });
    order.forEach(function (id) {
      var n = byId[id], c = COLORS[n.outcome] || "#999", x = X(id), y = Y(id), shape;
      if (n.kind === "seed") shape = s("rect", { x: x - 6, y: y - 6, width: 12, height: 12, rx: 3, fill: c });
      else shape = s("circle", { cx: x, cy: y, r: 6, fill: n.outcome === "running" ? "#fff" : c, stroke: n.outcome === "running" ? c : null,
        "stroke-dasharray": n.outcome === "running" ? "3 2" : null, "stroke-width": 2 });
      shape.setAttribute("class", "tdot");
      shape.setAttribute("data-id", id);
      shape.setAttribute("data-lane", lane[id]);
      if (onPath[id]) svg.appendChild(s("circle", { cx: x, cy: y, r: 9.5, fill: "none", stroke: ACCENT, "stroke-width": 2 }));
      svg.appendChild(shape);
    });
    box.appendChild(svg);
    order.forEach(function (id) {
      var n = byId[id], f = n.failure;
      box.appendChild(h("div", { class: "tnode" + (onPath[id] ? " path" : ""), "data-id": id, role: "treeitem",
        style: "padding-left:" + (width + 8) + "px", title: n.hypothesis + (f ? "\n" + f.cause + " — " + f.cause_detail : ""),
        on: { click: function () { select(id, true); } } }, [
        h("span", { class: "tid" }, [id, D.best === id ? h("span", { class: "star", text: " ★" }) : null]),
        h("span", { class: "tscore" }, [f ? cause(f) : pm(n.primary, n.se_text)]),
        h("span", { class: "tchip" }, [chip(n.outcome)]),
        h("span", { class: "tkind", text: n.kind }),
        h("span", { class: "thyp", text: n.hypothesis })]));
    });
    legend($("legend"), [h("span", {}, [h("i", { class: "sw line", style: "background:" + ACCENT }), "winner's path"]),
      h("span", { text: "■ seed  ┆ repair" })]);
  }

  // ------------------------------------------------------------------ the experiment table
  var sortKey = "iteration", sortDesc = false;
  function columns() {
    var cols = [
      { key: "iteration", label: "iter", num: true, get: function (n) { return n.iteration; }, show: String },
      { key: "id", label: "node", get: function (n) { return n.id; } },
      { key: "parent", label: "parent", get: function (n) { return n.parent_id || ""; } },
      { key: "kind", label: "kind", get: function (n) { return n.kind; } },
      { key: "hypothesis", label: "hypothesis", get: function (n) { return n.hypothesis; } }];
    D.metrics.forEach(function (m, i) {
      cols.push({ key: "m:" + m, label: m + (i === 0 ? (higher ? " ↑ ± SE" : " ↓ ± SE") : ""), num: true,
        get: function (n) { return i === 0 ? n.primary : (n.metrics || {})[m]; },
        show: i === 0 ? null : fmt, cell: i === 0 ? function (n) { return pm(n.primary, n.se_text); } : null });
    });
    return cols.concat([
      { key: "gain", label: "vs parent", num: true, get: function (n) { return n.gain ? n.gain.delta : null; } },
      { key: "outcome", label: "status", get: function (n) { return n.outcome; } },
      { key: "wall", label: "wall", num: true, get: function (n) { return n.execution ? n.execution.wall_s : null; }, show: secs },
      { key: "tokens", label: "tokens", num: true, get: function (n) { return n.usage ? n.usage.total_tokens : null; }, show: int },
      { key: "cost", label: "cost", num: true, get: function (n) { return n.usage ? n.usage.cost_usd : null; }, show: usd }]);
  }
  function tableView() {
    var cols = columns(), table = $("table"), tr = h("tr");
    cols.forEach(function (c) {
      tr.appendChild(h("th", { "data-key": c.key, class: c.key === sortKey ? "sorted" + (sortDesc ? " desc" : "") : "",
        on: { click: function () { sortDesc = sortKey === c.key ? !sortDesc : false; sortKey = c.key; tableView(); } } }, [c.label]));
    });
    var col = cols.filter(function (c) { return c.key === sortKey; })[0];
    var rows = D.nodes.slice().sort(function (a, b) {
      var x = col.get(a), y = col.get(b);
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      var r = x < y ? -1 : x > y ? 1 : 0;
      return sortDesc ? -r : r;
    });
    var body = h("tbody");
    rows.forEach(function (n) {
      var row = h("tr", { "data-id": n.id, class: n.id === selected ? "selected" : "", on: { click: function () { select(n.id, true); } } });
      cols.forEach(function (c) {
        var v = c.get(n), cell;
        if (c.key === "outcome") cell = h("td", {}, [chip(n.outcome), n.failure ? h("div", {}, [cause(n.failure)]) : null]);
        else if (c.key === "gain") cell = h("td", { class: "num" }, [verdict(n.gain)]);
        else if (c.cell) cell = h("td", { class: "num", text: num(v) ? c.cell(n) : "–" });
        else if (c.key === "hypothesis") cell = h("td", { class: "hyp" }, [v, n.failure ? h("div", { class: "bad",
          text: "[" + n.failure.stage + "] " + n.failure.message.slice(0, 160) }) : null]);
        else if (c.key === "id") cell = h("td", { class: "mono", style: "white-space:nowrap" }, [v, D.best === v ? h("span", { class: "star", text: " ★" }) : null]);
        else cell = h("td", { class: c.num ? "num" : "mono", text: c.show ? c.show(v) : v });
        row.appendChild(cell);
      });
      body.appendChild(row);
    });
    table.textContent = "";
    table.appendChild(h("thead", {}, [tr]));
    table.appendChild(body);
  }

  // ------------------------------------------------------------------ selection and details
  function select(id, user) {
    if (!byId[id]) return;
    selected = id;
    document.querySelectorAll(".selected").forEach(function (e) { e.classList.remove("selected"); });
    document.querySelectorAll('[data-id="' + id + '"]').forEach(function (e) {
      if (e.classList.contains("tnode") || e.tagName === "TR") e.classList.add("selected");
    });
    document.querySelectorAll(".point").forEach(function (p) { p.classList.toggle("sel", p.getAttribute("data-id") === id); });
    detailView(byId[id]);
    if (user) { var t = document.querySelector('.tnode[data-id="' + id + '"]'); if (t && t.scrollIntoView) t.scrollIntoView({ block: "nearest" }); }
  }

  // ------------------------------------------------------------------ acceptance and finalists
  function selectionView() {
    var box = $("selection"), A = D.acceptance, F = D.finalists, f = D.final;
    box.appendChild(h("p", { text: A && A.text ? A.text : "acceptance: any validation gain counts (a run from before gains were judged against noise)" }));
    if (A && A.note) box.appendChild(h("p", { class: "bad", text: A.note }));
    if (!F || !F.rows.length) {
      box.appendChild(h("p", { class: "muted", text: "no finalists' seed replicates: the best node is the last one accepted" }));
      return;
    }
    var head = h("tr", {}, [h("th", { text: "node" })].concat(F.seeds.map(function (sd) { return h("th", { class: "num", text: "seed " + sd }); }),
      F.chosen ? [h("th", { class: "num", text: "mean ± spread" })] : []));
    var body = h("tbody");
    F.rows.forEach(function (r) {
      var cells = [h("td", { class: "mono" }, [link(r.node), r.node === F.chosen ? h("span", { class: "star", text: " ★" }) : null])];
      F.seeds.forEach(function (sd) {
        var sc = (r.scores || {})[sd], fl = (r.failures || {})[sd];
        cells.push(h("td", { class: "num" + (fl ? " bad" : ""), title: fl || null, text: num(sc) ? fmt(sc) : fl ? "failed" : "–" }));
      });
      if (F.chosen) cells.push(h("td", { class: "num", title: r.mean_text || null, text: pm(r.mean, r.spread_text) }));
      body.appendChild(h("tr", { "data-node": r.node }, cells));
    });
    box.appendChild(h("div", { class: "table-wrap" }, [h("table", { class: "experiments finalists" }, [h("thead", {}, [head]), body])]));
    box.appendChild(h("p", { class: "rule", text: F.chosen ? "★ " + F.chosen + ": " + F.rule : "seed replicates so far: no choice yet" }));
    if (f && f.selection_rule && f.selection_rule !== F.rule) box.appendChild(h("p", { class: "muted", text: "rlab final: " + f.selection_rule }));
  }

  // ------------------------------------------------------------------ run facts
  function meter(label, b, show) {
    var used = b.used, max = b.max, frac = num(max) && max > 0 ? Math.min(1, used / max) : null;
    return [h("div", { text: label + ": " + show(used) + (num(max) ? " of " + show(max) : " (no limit)") }),
      frac !== null ? h("div", { class: "meter" }, [h("span", { style: "width:" + (frac * 100).toFixed(1) + "%" })]) : null];
  }
  function factsView() {
    var B = D.budget, facts = $("facts"), iso = D.isolation || {};
    facts.appendChild(h("div", {}, [h("h3", { text: "Budget used" })].concat(
      meter("iterations", B.iterations, String), meter("wall-clock", B.time_s, secs),
      meter("tokens", B.tokens, int), meter("cost", B.cost_usd, usd))));
    facts.appendChild(h("div", {}, [h("h3", { text: "Stop" }),
      h("p", { text: D.status.stop_reason || "not stopped: the run is in progress (or was killed; `rlab resume` continues it)" }),
      D.status.in_flight.length ? h("p", { class: "bad", text: "running now: " + D.status.in_flight.join(", ") }) : null,
      h("h3", { text: "Isolation" }),
      iso.warning ? h("p", { class: "bad", text: iso.warning }) : null,
      kv(Object.keys(iso).map(function (k) { return [k, String(iso[k])]; }))]));
    var run = D.run, cfg = D.config, C = D.candidates || {};
    facts.appendChild(h("div", {}, [h("h3", { text: "Run" }), kv([["agent", run.agent || "?"], ["strategy", run.strategy || "?"],
      ["sandbox", run.sandbox || "?"], ["created", run.created || "?"],
      ["candidate timeout", num(C.timeout_s) ? (C.timeout_s < 60 && C.timeout_s % 1 === 0 ? C.timeout_s + " s" : secs(C.timeout_s)) : "the task's default"],
      ["candidate memory", num(C.memory_mb) ? int(C.memory_mb) + " MiB" : "the task's default"],
      ["workers", num(C.workers) ? String(C.workers) + (C.parallel_order ? " (" + C.parallel_order + ")" : "") : "?"]].concat(
      Object.keys(cfg).map(function (k) { return [k, cfg[k] === null ? "–" : String(cfg[k])]; }),
      Object.keys(D.machine).map(function (k) { return [k, String(D.machine[k])]; })))]));
    facts.appendChild(h("div", {}, [h("h3", { text: "Versions" }),
      kv(Object.keys(D.versions).map(function (k) { return [k, String(D.versions[k])]; }))]));
    $("footer").textContent = "rlab " + D.rlab_version + " · generated " + D.generated_at + " · " + D.status.events +
      " journal events · " + run.path;
  }

  header();
  handoverView();
  treeView();
  chartView();
  seedDiffView();
  tableView();
  selectionView();
  factsView();
  var last = D.nodes.length ? D.nodes[D.nodes.length - 1].id : null;
  if (D.best || last) select(D.best || last, false);
  document.body.setAttribute("data-ready", "1");
