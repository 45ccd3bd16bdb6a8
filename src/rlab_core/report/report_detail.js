/* rlab dashboard: the panel of the selected node (shares report.js's scope). */
  function evaluatedAncestor(n) {
    var p = n.parent_id;
    while (p && byId[p]) { if (num(byId[p].primary)) return byId[p]; p = byId[p].parent_id; }
    return null;
  }
  function codeBlock(text, diff) {
    var pre = h("pre", { class: "code" });
    if (!diff) { pre.textContent = text; return pre; }
    text.split("\n").forEach(function (line) {
      var c = /^(\+\+\+|---)/.test(line) ? "meta" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : line.slice(0, 2) === "@@" ? "hunk" : "";
      pre.appendChild(h("span", { class: c, text: line + "\n" }));
    });
    return pre;
  }
  var TIMING = [["agent_s", "agent", "#818cf8"], ["edit_s", "edit", "#a5b4fc"], ["sandbox_start_s", "sandbox start", "#fbbf24"],
    ["candidate_s", "candidate", "#34d399"], ["scoring_s", "scoring", "#60a5fa"], ["bookkeeping_s", "bookkeeping", "#cbd5e1"]];
  function detailView(n) {
    var box = $("detail"), anc = evaluatedAncestor(n), t = n.timing, u = n.usage, x = n.execution;
    box.textContent = "";
    box.appendChild(h("h2", {}, [h("span", { class: "mono", text: n.id }), chip(n.outcome),
      D.best === n.id ? h("span", { class: "star", text: "★ best" }) : null,
      h("span", { class: "muted", style: "font-size:13px;font-weight:400", text: n.kind + (num(n.iteration) ? " · iteration " + n.iteration : "") })]));
    var rel = [];
    if (n.parent_id) rel.push("parent ", link(n.parent_id), "  ");
    if (n.repair_of) rel.push("repairs ", link(n.repair_of), "  ");
    if (kids[n.id] && kids[n.id].length) { rel.push("children "); kids[n.id].forEach(function (k) { rel.push(link(k), " "); }); }
    if (rel.length) box.appendChild(h("div", { class: "muted" }, rel));
    box.appendChild(h("p", { class: "hyp", text: n.hypothesis }));
    if (n.rationale) box.appendChild(h("p", { class: "muted", text: n.rationale }));
    if (n.failure) box.appendChild(h("div", { class: "failure" }, [h("b", { text: n.failure.cause }), " · " + n.failure.cause_detail +
      (n.closed_reason ? "\nbranch closed: " + n.closed_reason : "")]));
    if (num(n.primary)) {
      box.appendChild(h("h3", { text: "Validation metrics" }));
      var pairs = D.metrics.filter(function (m) { return m in (n.metrics || {}) || m === metric; }).map(function (m) {
        return [m + (m === metric ? " (primary)" : ""), m === metric ? pm(n.primary, n.se_text) : fmt(n.metrics[m])];
      });
      if (n.se_text) pairs.push(["standard error", n.se_text + " (bootstrap" + (n.resample_unit ? " over " + n.resample_unit : "") + ")"]);
      box.appendChild(kv(pairs));
      var gains = h("dl", { class: "kv gains" });
      function gainRow(label, g) {
        gains.appendChild(h("dt", { text: label }));
        gains.appendChild(h("dd", { class: "verdict " + (VERDICT[g.verdict] || ""), text: g.detail }));
      }
      if (n.gain) gainRow("vs " + n.gain.against, n.gain);
      else if (anc) { gains.appendChild(h("dt", { text: "vs " + anc.id })); gains.appendChild(h("dd", { text: signed(n.primary - anc.primary) })); }
      if (n.versus_best) gainRow("vs best " + n.versus_best.against, n.versus_best);
      if (n.accepted === true || n.accepted === false) {
        gains.appendChild(h("dt", { text: "accepted" }));
        gains.appendChild(h("dd", { text: n.accepted ? "yes: it became the run's best" :
          "no: the run's best stayed " + (n.best_after ? n.best_after.id : "another node") }));
      }
      if (gains.childNodes.length) { box.appendChild(h("h3", { text: "Gain (+ is better)" })); box.appendChild(gains); }
    }
    if (x) {
      box.appendChild(h("h3", { text: "Execution" }));
      box.appendChild(kv([["exit code", x.exit_code === null ? "killed" : String(x.exit_code)], ["wall", secs(x.wall_s)], ["cpu", secs(x.cpu_s)],
        ["peak memory", num(x.peak_memory_mb) ? x.peak_memory_mb.toFixed(0) + " MiB" : "–"],
        x.killed_by ? ["killed by", x.killed_by] : null, ["isolation", x.isolation]]));
    }
    if (t) {
      box.appendChild(h("h3", { text: "Timing · " + secs(t.total_s) }));
      var bar = h("div", { class: "timebar" }), legendRow = [];
      TIMING.forEach(function (p) {
        var v = t[p[0]] || 0;
        if (t.total_s > 0 && v > 0) bar.appendChild(h("span", { title: p[1] + " " + secs(v), style: "background:" + p[2] + ";width:" + (100 * v / t.total_s).toFixed(2) + "%" }));
        if (v > 0) legendRow.push([p[1], secs(v)]);
      });
      box.appendChild(bar);
      box.appendChild(kv(legendRow));
    }
    if (u) {
      box.appendChild(h("h3", { text: "Tokens and cost" }));
      box.appendChild(kv([["input", int(u.input_tokens)], ["output", int(u.output_tokens)], ["cached", int(u.cached_tokens)], ["cost", usd(u.cost_usd)]]));
    }
    if (n.diff) {
      box.appendChild(h("h3", { text: "Diff" + (n.changed_files && n.changed_files.length ? " · " + n.changed_files.join(", ") : "") }));
      box.appendChild(codeBlock(n.diff, true));
    }
    if (n.log_tail) {
      box.appendChild(h("h3", { text: "Log tail" }));
      box.appendChild(codeBlock(n.log_tail, false));
    }
  }

