/* rlab dashboard: the validation score per iteration (shares report.js's scope): points
   with their standard errors, the best-so-far line, the seed baseline, and the failed
   nodes as crosses labelled with their causes. */
  function ticks(lo, hi, n) {
    var span = hi - lo || Math.abs(hi) || 1, step = Math.pow(10, Math.floor(Math.log10(span / n))), err = span / n / step;
    step *= err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(12));
    return out;
  }
  function chartView() {
    var box = $("chart"), W = Math.max(box.clientWidth || 800, 360), H = 300, L = 64, R = 16, T = 14, B = 44;
    var pts = D.nodes.filter(function (n) { return num(n.primary); });
    var fails = D.nodes.filter(function (n) { return n.primary === null && n.outcome !== "running" && num(n.iteration); });
    var svg = s("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": "validation score per iteration" });
    box.appendChild(svg);
    if (!pts.length) { svg.appendChild(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle", text: "no evaluated node yet" })); return; }
    var xs = D.nodes.filter(function (n) { return num(n.iteration); }).map(function (n) { return n.iteration; });
    var xmax = Math.max(1, Math.max.apply(null, xs)), ys = [];
    pts.forEach(function (n) {
      var e = num(n.standard_error) ? n.standard_error : 0;
      ys.push(n.primary - e, n.primary + e);
    });
    var seed = D.headline.seed;  // the baseline: the best seed's validation score
    if (seed && num(seed.score)) ys.push(seed.score);
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys), pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.01 || 0.01;
    lo -= pad; hi += pad;
    // failed nodes get a strip of their own under the plot: a cross and its cause each
    var STRIP = fails.length ? 40 : 0, P = H - B - STRIP;
    function px(x) { return L + (x / xmax) * (W - L - R); }
    function py(y) { return T + (1 - (y - lo) / (hi - lo)) * (P - T); }
    var yt = ticks(lo, hi, 5), dec = yt.length > 1 ? Math.max(0, Math.min(8, -Math.floor(Math.log10(yt[1] - yt[0]) + 1e-9))) : 3;
    yt.forEach(function (v) {
      if (v < lo || v > hi) return;
      svg.appendChild(s("line", { class: "grid-line", x1: L, x2: W - R, y1: py(v), y2: py(v) }));
      svg.appendChild(s("text", { x: L - 8, y: py(v) + 4, "text-anchor": "end", text: v.toFixed(dec) }));
    });
    ticks(0, xmax, Math.min(xmax, 12)).filter(function (v) { return v === Math.round(v); }).forEach(function (v) {
      svg.appendChild(s("text", { x: px(v), y: H - B + 16, "text-anchor": "middle", text: v }));
    });
    svg.appendChild(s("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
    svg.appendChild(s("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
    svg.appendChild(s("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", text: "iteration (seeds at 0)" }));
    svg.appendChild(s("text", { x: 14, y: (T + P) / 2, "text-anchor": "middle",
      transform: "rotate(-90 14 " + (T + P) / 2 + ")", text: metric + (higher ? " ↑" : " ↓") }));
    if (STRIP) {
      svg.appendChild(s("line", { class: "strip-line", x1: L, x2: W - R, y1: P, y2: P }));
      svg.appendChild(s("text", { x: L - 8, y: P + 16, "text-anchor": "end", class: "strip-label", text: "failed" }));
    }
    if (seed && num(seed.score)) {
      var sy = py(seed.score), sg = s("g", { class: "seed-line", "data-id": seed.id });
      sg.appendChild(s("line", { class: "seed-baseline", x1: L, x2: W - R, y1: sy, y2: sy }));
      sg.appendChild(s("text", { x: W - R - 4, y: sy - 5, "text-anchor": "end",
        text: "seed " + seed.id + " " + pm(seed.score, D.headline.seed_se_text) }));
      svg.appendChild(sg);
    }
    // the run's best after each node: the last node accepted (a gain within noise never moves it)
    var best = null, d = "";
    pts.forEach(function (n, i) {
      var prev = best;
      if (n.best_after && num(n.best_after.score)) best = n.best_after.score;
      else if (better(n.primary, best)) best = n.primary;
      d += i === 0 ? "M" + px(n.iteration) + " " + py(best) : " H" + px(n.iteration) + (best !== prev ? " V" + py(best) : "");
    });
    d += " H" + px(xmax);
    svg.appendChild(s("path", { class: "best-line", d: d }));
    var gap = (W - L - R) / xmax;  // pixels between iterations: room for the cause labels
    fails.forEach(function (n, i) {
      var x = px(n.iteration), y = P + 11, g = s("g", { class: "fail-mark", "data-id": n.id }), f = n.failure;
      g.appendChild(s("path", { d: "M" + (x - 4) + " " + (y - 4) + " L" + (x + 4) + " " + (y + 4) + " M" + (x + 4) + " " + (y - 4) + " L" + (x - 4) + " " + (y + 4),
        stroke: COLORS[n.outcome] || COLORS.failed }));
      if (f) {
        g.setAttribute("aria-label", n.id + " failed: " + f.cause + " — " + f.cause_detail);
        if (gap >= 36) g.appendChild(s("text", { class: "fail-cause", x: x, y: y + (gap < 80 && i % 2 ? 24 : 15),
          "text-anchor": "middle", text: f.cause }));
      }
      hover(g, n);
      svg.appendChild(g);
    });
    pts.forEach(function (n) {  // ±1 standard error, under the points
      if (!num(n.standard_error) || n.standard_error <= 0) return;
      var x = px(n.iteration), y1 = py(n.primary - n.standard_error), y2 = py(n.primary + n.standard_error);
      var g = s("g", { class: "err-bar", "data-id": n.id });
      g.appendChild(s("path", { d: "M" + x + " " + y1 + " V" + y2 + " M" + (x - 4) + " " + y1 + " H" + (x + 4) + " M" + (x - 4) + " " + y2 + " H" + (x + 4),
        stroke: COLORS[n.outcome] || "#999" }));
      hover(g, n);
      svg.appendChild(g);
    });
    pts.forEach(function (n) {
      var c = s("circle", { class: "point", "data-id": n.id, cx: px(n.iteration), cy: py(n.primary), r: D.best === n.id ? 7 : 5,
        fill: COLORS[n.outcome] || "#999" });
      hover(c, n);
      svg.appendChild(c);
    });
    var win = D.best && byId[D.best];
    if (win && num(win.primary) && num(win.iteration)) {
      var bx = px(win.iteration), right = bx > W - 160;
      svg.appendChild(s("text", { class: "best-label", x: bx + (right ? -12 : 12), y: py(win.primary) - 10,
        "text-anchor": right ? "end" : "start", text: "★ " + win.id + "  " + pm(win.primary, win.se_text) }));
    }
    $("chart-legend").appendChild(h("span", {}, [h("i", { class: "sw line", style: "background:" + ACCENT }), "best so far (accepted nodes)"]));
    $("chart-legend").appendChild(h("span", { text: "I ±1 standard error" }));
    if (seed && num(seed.score)) $("chart-legend").appendChild(h("span", {}, [h("i", { class: "sw line dashed" }), "seed baseline"]));
    $("chart-legend").appendChild(h("span", { text: "● evaluated node   × failed node, with its cause (colour = status)" }));
  }
  function hover(el, n) {
    el.addEventListener("mousemove", function (ev) {
      var f = n.failure;
      showTip(ev, [n.id + "  ·  " + (num(n.primary) ? metric + " " + pm(n.primary, n.se_text) : "failed" + (f ? ": " + f.cause : "")) +
        "  ·  " + (D.outcome_labels[n.outcome] || n.outcome), n.gain ? "vs " + n.gain.against + ": " + n.gain.text : "",
        f ? f.cause_detail : "", n.hypothesis].filter(Boolean));
    });
    el.addEventListener("mouseleave", hideTip);
    el.addEventListener("click", function () { select(n.id, true); });
  }

