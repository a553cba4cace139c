// Trace browser of the amemgym report. Model text is untrusted: it only ever reaches the page
// through textContent, never through innerHTML.
(function () {
  "use strict";
  var errors = document.getElementById("console-errors");
  function recordError(text) {
    // Written into the DOM so headless checks (--dump-dom) can see script failures.
    errors.textContent += text + "\n";
    errors.setAttribute("data-count", String(Number(errors.getAttribute("data-count") || 0) + 1));
  }
  window.addEventListener("error", function (e) { recordError("error: " + (e.message || e.type)); });
  document.addEventListener("securitypolicyviolation", function (e) {
    recordError("blocked by content security policy: " + e.violatedDirective);
  });
  window.addEventListener("unhandledrejection", function (e) { recordError("rejection: " + String(e.reason)); });
  var origError = console.error;
  console.error = function () {
    recordError("console.error: " + Array.prototype.join.call(arguments, " "));
    return origError.apply(console, arguments);
  };

  var data = JSON.parse(document.getElementById("report-data").textContent);
  var pickRun = document.getElementById("pick-run");
  var pickUser = document.getElementById("pick-user");
  var pickPeriod = document.getElementById("pick-period");
  var panel = document.getElementById("browser");
  if (!pickRun) {  // a page without the trace browser (a unit family's report): nothing to wire
    document.body.setAttribute("data-ready", "1");
    return;
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fill(select, items) {
    while (select.firstChild) select.removeChild(select.firstChild);
    items.forEach(function (item) {
      var opt = el("option", null, item[1]);
      opt.value = String(item[0]);
      select.appendChild(opt);
    });
  }
  function num(x) { return x === null || x === undefined ? "-" : Number(x).toFixed(3); }

  function parseHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) out[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]);
    });
    return out;
  }

  function renderState(p, box) {
    box.appendChild(el("h4", null, "True state at the end of the period"));
    if (!p.state) {
      box.appendChild(el("p", "warn", "True states unavailable (environment file not found or not matching)."));
      return;
    }
    var table = el("table", "state");
    var head = el("tr");
    ["variable", "value", "change this period"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(head);
    Object.keys(p.state).sort().forEach(function (name) {
      var row = el("tr");
      var upd = p.updates && p.updates[name];
      if (upd) row.className = "changed";
      row.appendChild(el("td", null, name));
      row.appendChild(el("td", null, p.state[name]));
      row.appendChild(el("td", null, upd ? (upd.old === null ? "(set)" : upd.old) + " \u2192 " + upd["new"] : ""));
      table.appendChild(row);
    });
    box.appendChild(table);
  }

  function renderConversation(p, box) {
    box.appendChild(el("h4", null, "Conversation"));
    if (!p.sessions.length) box.appendChild(el("p", "warn", "No recorded session in this period."));
    p.sessions.forEach(function (s) {
      var sess = el("div", "session");
      sess.appendChild(el("div", "session-head", "Session " + s.session + (s.time ? " \u00b7 " + s.time : "")));
      if (s.resimulated || s.unresolved_leaks) {
        sess.appendChild(el("div", "guard", "leak guard: " + (s.resimulated || 0) + " simulator turn(s) redrawn" +
          (s.unresolved_leaks ? ", " + s.unresolved_leaks + " replaced by a neutral follow-up" : "")));
      }
      s.messages.forEach(function (m) {
        var msg = el("div", "msg " + (m.role === "user" ? "user" : "assistant"));
        msg.appendChild(el("div", "role", m.role));
        msg.appendChild(el("div", "content", m.content));
        sess.appendChild(msg);
      });
      box.appendChild(sess);
    });
  }

  function renderEvolution(ev, box) {
    // Self-evolution: the policy this period ran with and what the evolver made of it. Policies and
    // changes are model text, so they go through textContent like everything else.
    var sec = el("div", "evolution");
    sec.appendChild(el("h4", null, "Memory policy (self-evolution)"));
    var meta = "version " + (ev.policy_version === null || ev.policy_version === undefined ? "?" : ev.policy_version) +
      " \u00b7 feedback " + (ev.feedback_kind || "?") + " \u00b7 cycle " + (ev.status || "?");
    if (ev.reason) meta += " (" + ev.reason + ")";
    if (ev.recall !== null && ev.recall !== undefined) {
      meta += " \u00b7 memory recall " + num(ev.recall) + " (" + ev.supported + "/" + ev.revealed + " facts)";
    }
    sec.appendChild(el("p", "evo-meta", meta));
    sec.appendChild(el("pre", "policy", ev.policy === null ? "(none)" : ev.policy));
    if (ev.changes.length) {
      var list = el("ul", "changes");
      ev.changes.forEach(function (c) { list.appendChild(el("li", null, c)); });
      sec.appendChild(list);
    }
    if (ev.next_policy !== null && ev.next_policy !== ev.policy) {
      var next = el("details");
      next.appendChild(el("summary", null, "policy for the next period (version " + ev.next_policy_version + ")"));
      next.appendChild(el("pre", "policy next", ev.next_policy));
      sec.appendChild(next);
    }
    box.appendChild(sec);
  }

  function renderQuestion(q) {
    var box = el("div", "question " + (q.score === 1 ? "right" : "wrong"));
    box.appendChild(el("div", "q-head", "Q" + q.index + ": " + q.query));
    if (q.options) {
      var list = el("ol", "options");
      q.options.forEach(function (text, i) {
        var item = el("li", null, text);
        var tags = [];
        if (i + 1 === q.gold) { item.classList.add("gold"); tags.push("gold"); }
        if (i + 1 === q.choice) { item.classList.add("chosen"); tags.push("agent's choice"); }
        if (tags.length) item.appendChild(el("span", "tag", " [" + tags.join(", ") + "]"));
        list.appendChild(item);
      });
      box.appendChild(list);
    } else if (q.prompt) {
      box.appendChild(el("pre", "prompt", q.prompt));
    }
    box.appendChild(el("div", "q-meta", "choice " + (q.choice === null ? "none" : q.choice) + " \u00b7 gold " + q.gold +
      " \u00b7 status " + q.status + " \u00b7 score " + num(q.score) + " \u00b7 upper bound " + num(q.ub_score)));
    var reply = el("details");
    reply.appendChild(el("summary", null, "agent's replies"));
    reply.appendChild(el("pre", "reply", q.reply));
    reply.appendChild(el("pre", "reply", q.probe_reply));
    box.appendChild(reply);
    if (q.probe.length) {
      var table = el("table", "probe");
      var head = el("tr");
      ["variable", "probe said", "truth", ""].forEach(function (h) { head.appendChild(el("th", null, h)); });
      table.appendChild(head);
      q.probe.forEach(function (pr) {
        var row = el("tr", pr.ok ? "ok" : "bad");
        row.appendChild(el("td", null, pr.variable));
        row.appendChild(el("td", null, pr.said === null || pr.said === undefined ? "(none)" : pr.said));
        row.appendChild(el("td", null, pr.truth === null ? "?" : pr.truth));
        row.appendChild(el("td", null, pr.ok ? "right" : "wrong"));
        table.appendChild(row);
      });
      box.appendChild(table);
    }
    return box;
  }

  function render() {
    var run = data.runs[Number(pickRun.value)];
    var user = run && run.users[Number(pickUser.value)];
    var p = user && user.periods[Number(pickPeriod.value)];
    while (panel.firstChild) panel.removeChild(panel.firstChild);
    if (!p) { panel.appendChild(el("p", "warn", "Nothing recorded.")); return; }
    panel.setAttribute("data-selected", run.label + "/" + user.id + "/" + p.period);
    var title = "Run " + run.label + (run.detail ? " (" + run.detail + ")" : "") + " \u00b7 user " + user.id +
      " \u00b7 period " + p.period;
    if (p.end) title += p.start ? " (" + p.start + " \u2013 " + p.end + ")" : " (until " + p.end + ")";
    panel.appendChild(el("h3", "selection", title));
    if (run.env_note) panel.appendChild(el("p", "warn", "True states not shown: " + run.env_note + "."));
    if (p.cell) {
      panel.appendChild(el("p", "cell", "overall " + num(p.cell.overall) + " \u00b7 upper bound " +
        num(p.cell.upper_bound) + " \u00b7 random " + num(p.cell.random) + " \u00b7 memory score " +
        num(p.cell.memory_score) + " \u00b7 failures write " + p.cell.write_failures + ", read " +
        p.cell.read_failures + ", utilization " + p.cell.utilization_failures +
        (p.cell.memory_recall !== undefined ? " \u00b7 memory recall " + num(p.cell.memory_recall) : "")));
    }
    var cols = el("div", "cols");
    var left = el("div", "col");
    var right = el("div", "col");
    renderConversation(p, left);
    renderState(p, right);
    right.appendChild(el("h4", null, "Agent memory at the snapshot"));
    right.appendChild(el("pre", "memory", p.evaluated ? (p.memory === null ? "(empty)" : p.memory) : "(not evaluated)"));
    if (p.evolution) renderEvolution(p.evolution, right);
    cols.appendChild(left);
    cols.appendChild(right);
    panel.appendChild(cols);
    panel.appendChild(el("h4", null, "Evaluation"));
    if (!p.evaluated) panel.appendChild(el("p", "warn", "This period was not evaluated."));
    p.questions.forEach(function (q) { panel.appendChild(renderQuestion(q)); });
  }

  function chooseRun(index) {
    var run = data.runs[index];
    fill(pickUser, run.users.map(function (u, i) { return [i, u.id]; }));
    chooseUser(0);
  }
  function chooseUser(index) {
    var run = data.runs[Number(pickRun.value)];
    var user = run.users[index];
    pickUser.value = String(index);
    fill(pickPeriod, (user ? user.periods : []).map(function (p, i) { return [i, "period " + p.period]; }));
  }
  function updateHash() {
    var run = data.runs[Number(pickRun.value)];
    var user = run && run.users[Number(pickUser.value)];
    var h = "#run=" + pickRun.value + "&user=" + encodeURIComponent(user ? user.id : "") + "&period=" + pickPeriod.value;
    try { history.replaceState(null, "", h); } catch (e) { /* file:// may refuse; the view still works */ }
  }
  function applyHash() {
    var h = parseHash();
    var r = Number(h.run || 0);
    if (!(r >= 0 && r < data.runs.length)) r = 0;
    pickRun.value = String(r);
    chooseRun(r);
    var users = data.runs[r].users;
    var u = users.findIndex(function (x) { return x.id === h.user; });
    if (u < 0) u = 0;
    chooseUser(u);
    var periods = users[u] ? users[u].periods.length : 0;
    var p = Number(h.period || 0);
    pickPeriod.value = String(p >= 0 && p < periods ? p : 0);
    render();
  }

  fill(pickRun, data.runs.map(function (r, i) { return [i, r.label]; }));
  pickRun.addEventListener("change", function () { chooseRun(Number(pickRun.value)); render(); updateHash(); });
  pickUser.addEventListener("change", function () { chooseUser(Number(pickUser.value)); render(); updateHash(); });
  pickPeriod.addEventListener("change", function () { render(); updateHash(); });
  window.addEventListener("hashchange", applyHash);
  if (data.runs.length) applyHash();
  document.body.setAttribute("data-ready", "1");
})();
