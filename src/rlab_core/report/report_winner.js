/* rlab dashboard: what the run hands over (shares report.js's scope): where best/ lies,
   and the whole change from the seed to the chosen node. */
  // a path as text the user can select with one click, and a button that copies it
  function copyable(label, path) {
    var code = h("code", { class: "path", text: path, title: "click to select" });
    var button = h("button", { class: "copy", type: "button", text: "copy", title: "copy " + label + "'s path" });
    button.addEventListener("click", function () {
      function done(ok) { button.textContent = ok ? "copied" : "select + Ctrl-C"; setTimeout(function () { button.textContent = "copy"; }, 1500); }
      function fallback() {
        var range = document.createRange(), sel = window.getSelection();
        range.selectNodeContents(code); sel.removeAllRanges(); sel.addRange(range);
        var ok = false;
        try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
        done(ok);
      }
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(path).then(function () { done(true); }, fallback);
      else fallback();
    });
    return h("div", { class: "handover-row", "data-path": label }, [h("span", { class: "handover-label", text: label }), code, button]);
  }
  function handoverView() {
    var E = D.exported || {}, box = $("handover");
    if (!E.src && !E.submission) {
      box.appendChild(h("div", { class: "muted", text: D.status.stopped
        ? "nothing exported to best/ (no node was evaluated, or the export failed)"
        : "best/ (the winner's source and submission) is written when the run stops: " + E.best_dir }));
      return;
    }
    var head = "The winner" + (E.node ? " (" + E.node + ")" : "") + ", exported to best/";
    if (E.node && D.best && E.node !== D.best) head += " when the run last stopped; it now prefers " + D.best + ", exported when it stops again";
    box.appendChild(h("div", { class: "handover-head", text: head }));
    if (E.src) box.appendChild(copyable("source", E.src));
    if (E.submission) box.appendChild(copyable("submission", E.submission));
    if (E.manifest) box.appendChild(copyable("manifest", E.manifest));
  }
  function seedDiffView() {
    var V = D.seed_to_best, box = $("seed-diff"), hint = $("seed-diff-hint");
    if (!V) { box.appendChild(h("p", { class: "muted", text: "no node evaluated yet" })); return; }
    hint.textContent = "";
    hint.appendChild(h("span", {}, ["from seed ", link(V.seed), " to ★ ", link(V.best), " · " + V.steps + " step" + (V.steps === 1 ? "" : "s") +
      " on the winner's path"]));
    if (V.missing) { box.appendChild(h("p", { class: "bad", text: V.missing })); return; }
    if (!V.diff) { box.appendChild(h("p", { class: "muted", text: V.seed === V.best ? "the winner is the seed itself: nothing changed" : "no text file changed" })); return; }
    box.appendChild(h("p", { class: "diffstat" }, [V.files.length + " file" + (V.files.length === 1 ? "" : "s") + " changed  ",
      h("span", { class: "good", text: "+" + V.added }), " ", h("span", { class: "bad", text: "−" + V.removed }), "  " + V.files.join(", ")]));
    box.appendChild(codeBlock(V.diff, true));
  }
