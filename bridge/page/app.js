// askctl's page: a person's surface on the reference bridge. It speaks only
// the documented WebSocket protocol (GET /ws, see the bridgeapi package):
// events in, ask_user_response out. No build step, no dependencies.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);

  // el builds an element: attributes (on* are listeners), then children.
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
    return e;
  };

  const OTHER = "\u0000other"; // the value of an "Other" choice

  const page = {
    ws: null,
    view: "", // a session id (its own connection, with takeover), or "" for every session
    retry: 0,
    syncs: 0, // replays heard in full (data-synced on <html>)
    replayed: null, // the questions replayed since the socket opened, until the replay ends
    taken: false,
    sessions: new Map(), // id → session_status event
    cards: new Map(), // question id → card
  };

  // A card is one request: 1 to 4 questions, answered together.
  // state: pending | sending | answered | skipped | expired | withdrawn |
  // gone | taken | late | error
  function card(ev) {
    const qid = ev.question_id;
    const c = { id: qid, session: ev.session_id, questions: ev.questions || [], state: "pending", acked: false, heard: null, late: false, endText: "", picks: [], deadline: 0 };
    if (ev.timeout_seconds) {
      const t = Date.parse(ev.time) || Date.now();
      c.deadline = t + ev.timeout_seconds * 1000;
    }
    const titleID = "t-" + qid;
    c.el = el("article", { class: "card", id: "card-" + qid, "data-qid": qid, "data-session": c.session, "data-asked-at": ev.time || "", "data-state": "pending", "aria-labelledby": titleID });
    c.timer = el("span", { class: "countdown", role: "timer", "aria-label": "time left" });
    c.el.append(el("div", { class: "meta" },
      el("span", { id: titleID, text: (c.questions.length > 1 ? c.questions.length + " questions" : "A question") + " from session " + c.session }),
      c.timer));
    c.questions.forEach((q, i) => {
      c.picks[i] = [];
      c.el.append(questionFields(c, q, i));
    });
    c.reason = el("input", { type: "text", class: "reason", "aria-label": "Reason for skipping (optional)", placeholder: "Reason for skipping (optional)", maxlength: 2000 });
    c.sendBtn = el("button", { type: "button", class: "send", text: "Send", "aria-label": "Send the answer" + (c.questions.length > 1 ? "s" : ""), onclick: () => send(c) });
    c.skipBtn = el("button", { type: "button", class: "skip", text: "Skip", "aria-label": "Skip the question" + (c.questions.length > 1 ? "s" : ""), onclick: () => skip(c) });
    c.el.append(el("div", { class: "actions" }, c.sendBtn, c.reason, c.skipBtn));
    c.status = el("p", { class: "status", role: "status", "aria-live": "polite" });
    c.el.append(c.status);
    c.reason.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        e.stopPropagation();
        skip(c);
      }
    });
    tick(c);
    return c;
  }

  // questionFields is one question: a radio group (single-select) or a
  // group of checkboxes (multiSelect, answered in click order), and Other.
  function questionFields(c, q, i) {
    const multi = !!q.multiSelect;
    const name = c.id + "-" + i;
    const fs = el("fieldset", { class: "q", "data-index": i, role: multi ? "group" : "radiogroup", "aria-labelledby": name + "-legend" });
    fs.append(el("legend", { id: name + "-legend" },
      q.header ? el("span", { class: "chip", title: q.header, text: q.header }) : null,
      el("span", { class: "qtext", text: q.question })));
    const opts = q.options || [];
    const choose = (value, input) => {
      const p = c.picks[i];
      if (multi) {
        const at = p.indexOf(value);
        if (input.checked && at < 0) p.push(value);
        if (!input.checked && at >= 0) p.splice(at, 1);
      } else {
        c.picks[i] = input.checked ? [value] : [];
      }
      showOrder(c, i, fs);
    };
    opts.forEach((o, j) => {
      // Named by its label alone; the description describes it.
      const labelID = name + "-l" + j;
      const input = el("input", { type: multi ? "checkbox" : "radio", name, value: o.label, "data-key": j + 1, "aria-labelledby": labelID });
      input.addEventListener("change", () => choose(o.label, input));
      const descID = o.description ? name + "-d" + j : null;
      if (descID) input.setAttribute("aria-describedby", descID);
      fs.append(el("label", { class: "opt" },
        input,
        el("span", { class: "key", "aria-hidden": "true", text: String(j + 1) }),
        el("span", { class: "label", id: labelID, text: o.label }),
        o.description ? el("span", { class: "desc", id: descID, text: o.description }) : null,
        multi ? el("span", { class: "order", "aria-hidden": "true" }) : null));
    });
    const other = el("input", { type: multi ? "checkbox" : "radio", name, value: OTHER, "data-key": opts.length + 1, class: "other" });
    const text = el("textarea", { class: "other-text", rows: 1, "aria-label": "Your own answer to: " + q.question, placeholder: "Other: type your own answer", maxlength: 100000 });
    other.addEventListener("change", () => {
      choose(OTHER, other);
      if (other.checked) text.focus();
    });
    text.addEventListener("input", () => {
      const want = text.value.trim() !== "";
      if (want !== other.checked) {
        other.checked = want;
        choose(OTHER, other);
      }
    });
    fs.append(el("label", { class: "opt other" },
      other,
      el("span", { class: "key", "aria-hidden": "true", text: String(opts.length + 1) }),
      el("span", { class: "label", text: "Other" })));
    fs.append(text);
    c["text" + i] = text;
    return fs;
  }

  // showOrder numbers a multiSelect question's picks in click order.
  function showOrder(c, i, fs) {
    fs.querySelectorAll(".opt").forEach((lab) => {
      const input = lab.querySelector("input");
      const o = lab.querySelector(".order");
      if (!o) return;
      const at = c.picks[i].indexOf(input.value);
      o.textContent = at >= 0 && c.picks[i].length > 1 ? "#" + (at + 1) + " picked" : "";
    });
  }

  // answers is the request's answers, or the first question without one.
  function answers(c) {
    const out = {};
    for (let i = 0; i < c.questions.length; i++) {
      const q = c.questions[i];
      const vals = c.picks[i].map((v) => (v === OTHER ? c["text" + i].value : v));
      if (vals.length === 0 || vals.some((v) => v.trim() === "")) return { missing: i };
      out[q.question] = q.multiSelect ? vals : vals[0];
    }
    return { answers: out };
  }

  function send(c) {
    if (!open(c)) return;
    const a = answers(c);
    if (a.missing !== undefined) {
      const q = c.questions[a.missing];
      setState(c, "error", "Answer every question first: " + q.question, true);
      const fs = c.el.querySelectorAll("fieldset")[a.missing];
      (fs.querySelector("input:checked") || fs.querySelector("input")).focus();
      return;
    }
    transmit(c, { question_id: c.id, answers: a.answers });
  }

  function skip(c) {
    if (!open(c)) return;
    transmit(c, { question_id: c.id, cancelled: true, reason: c.reason.value.trim() || undefined });
  }

  // open tells whether the card can still be answered from this page.
  function open(c) {
    return c.state === "pending" || c.state === "error";
  }

  function transmit(c, data) {
    if (!page.ws || page.ws.readyState !== WebSocket.OPEN) {
      setState(c, "error", "Not connected to the bridge; try again when it reconnects.", true);
      return;
    }
    c.acked = false;
    c.heard = null;
    setState(c, "sending", "Sending…");
    page.ws.send(JSON.stringify({ type: "ask_user_response", data }));
  }

  // setState changes a card's state and what it says; ended cards move to
  // Done, with their controls off.
  function setState(c, state, text, announce) {
    c.state = state;
    c.el.dataset.state = state;
    c.status.textContent = text || "";
    const live = state === "pending" || state === "error";
    c.el.querySelectorAll("input, textarea, button").forEach((x) => (x.disabled = !live));
    if (announce && text) say(text);
    if (!live && state !== "sending") {
      c.timer.textContent = "";
      if (c.el.parentNode !== $("done")) {
        $("done").prepend(c.el);
        $("done-section").hidden = false;
        while ($("done").children.length > 30) $("done").lastChild.remove();
      }
    } else if (c.el.parentNode !== $("questions")) {
      $("questions").append(c.el);
    }
    $("empty").hidden = $("questions").children.length > 0;
  }

  // ended settles a card as an event tells: the text says whether this page
  // answered it, and, when this page's answer came after, that it was not
  // sent.
  function ended(c, state, text) {
    c.endText = text;
    c.el.dataset.ended = state; // how the question ended, whatever this page did
    if (c.late) setState(c, "late", text + " " + TOO_LATE, true);
    else setState(c, state, text, true);
  }
  const TOO_LATE = "Your answer came too late and was not sent.";

  // waiting tells whether this page sent an answer or a skip and the bridge
  // has not said yet whether it took it: an event that settles the card
  // then waits for that reply, which says whose answer it was.
  const waiting = (c) => c.state === "sending" && !c.acked;

  function say(text) {
    $("announce").textContent = "";
    setTimeout(() => ($("announce").textContent = text), 30);
  }

  function tick(c) {
    if (!c.deadline || !open(c)) return;
    const left = Math.max(0, Math.round((c.deadline - Date.now()) / 1000));
    const m = Math.floor(left / 60), s = left % 60;
    c.timer.textContent = left > 0 ? "expires in " + m + ":" + String(s).padStart(2, "0") : "expiring…";
    c.timer.classList.toggle("low", left <= 30);
  }
  setInterval(() => page.cards.forEach(tick), 1000);

  const describe = (answers) =>
    Object.entries(answers || {}).map(([q, a]) => (Object.keys(answers).length > 1 ? q + " " : "") + "→ " + a).join("; ");

  // on handles one message from the bridge.
  function on(m) {
    const c = m.question_id ? page.cards.get(m.question_id) : null;
    if (c && m.time && /^ask_user_(answered|skipped|timeout|withdrawn|resumed)$/.test(m.type) && !c.el.dataset.endedAt) {
      c.el.dataset.endedAt = m.time; // when the bridge says it ended
    }
    switch (m.type) {
      case "ask_user_question": {
        if (page.replayed) page.replayed.add(m.question_id);
        if (c && open(c)) return; // a replay of one shown already
        if (c) c.el.remove();
        const n = card(m);
        page.cards.set(n.id, n);
        $("questions").append(n.el);
        $("empty").hidden = true;
        say("New question from " + n.session + ": " + n.questions.map((q) => q.question).join(" "));
        if (!document.activeElement || document.activeElement === document.body) n.el.querySelector("input").focus();
        return;
      }
      case "ask_user_answered":
        if (!c) return;
        if (waiting(c)) c.heard = m;
        else ended(c, "answered", (c.acked ? "Answered: " : m.rule ? "Answered by the policy's " + m.rule + ": " : "Answered elsewhere: ") + describe(m.answers));
        return;
      case "ask_user_resumed":
        if (!c) return;
        if (waiting(c)) c.heard = m;
        else ended(c, "answered", "Answered after the agent had stopped: its session was resumed with the answer.");
        return;
      case "ask_user_held":
        if (c && open(c)) c.status.textContent = "Partly answered elsewhere: " + describe(m.answers);
        return;
      case "ask_user_skipped":
        if (!c) return;
        if (waiting(c)) c.heard = m;
        else ended(c, "skipped", (c.acked ? "Skipped" : m.rule ? "Skipped by the policy's " + m.rule : "Skipped elsewhere") + (m.reason ? ": " + m.reason : "."));
        return;
      case "ask_user_timeout":
        if (c) ended(c, "expired", "Expired: nobody answered in time, and the agent was told.");
        return;
      case "ask_user_withdrawn":
        if (c) ended(c, "withdrawn", "Withdrawn: " + (m.reason || "the agent no longer asks."));
        return;
      case "session_status":
        session(m);
        return;
      case "ask_user_ack":
        if (!c || c.state !== "sending") return;
        c.acked = true;
        c.status.textContent = "Sent.";
        if (c.heard) on(c.heard);
        return;
      case "error":
        if (!c && !m.question_id && /askctl_sync/.test(m.error || "")) {
          // The replay is over: a card it did not name ended while this
          // page was away (answered in another tab, or timed out), even
          // if its session waits on another question now.
          if (page.replayed) {
            for (const o of page.cards.values()) {
              if (open(o) && !page.replayed.has(o.id)) setState(o, "gone", "No longer waiting: it was settled while this page was away.");
            }
            page.replayed = null;
          }
          document.documentElement.dataset.synced = String(++page.syncs);
          return;
        }
        if (!c) {
          banner("The bridge refused a message: " + m.error);
          return;
        }
        if (m.code === "resolved") {
          // Settled before this page's answer came: the event that
          // settled it says how (it may come before or after this).
          c.late = true;
          setState(c, "late", (c.endText || "Already settled.") + " " + TOO_LATE, true);
          if (c.heard) on(c.heard);
          return;
        }
        if (m.code === "session_taken") {
          setState(c, "taken", "This session is open in another tab or window.", true);
          return;
        }
        setState(c, "error", "Refused: " + m.error, true);
        return;
      case "session_taken":
        takenOver();
        return;
    }
  }

  // session keeps the session list, and ends the cards of a session that
  // waits for nobody (settled while this page was away). A session that
  // waits names one question only, and may have more (the MCP route asks
  // several at once), so its other cards stay.
  function session(m) {
    page.sessions.set(m.session_id, m);
    for (const c of page.cards.values()) {
      if (c.session === m.session_id && open(c) && !m.waiting_for_user) {
        setState(c, "gone", "No longer waiting: it was settled while this page was away.");
      }
    }
    renderSessions();
  }

  function renderSessions() {
    const ul = $("sessions");
    ul.textContent = "";
    if (page.view) {
      ul.append(el("li", {}, el("a", { href: "#", text: "← every session" })));
    }
    const all = [...page.sessions.values()];
    const shown = all.slice(-50).reverse(); // the newest first
    if (all.length > shown.length) ul.append(el("li", { class: "st", text: (all.length - shown.length) + " older sessions not shown" }));
    for (const s of shown) {
      const status = s.status + (s.exit_code !== undefined && s.exit_code !== null ? " (" + s.exit_code + ")" : "");
      ul.append(el("li", { "aria-current": s.session_id === page.view ? "page" : false, "data-session": s.session_id, "data-status": s.status, "data-waiting": s.waiting_for_user ? "true" : "false", "data-pending": s.pending_question_id || "" },
        el("a", { class: "sid", href: "#session=" + encodeURIComponent(s.session_id), text: s.session_id }), " ",
        el("span", { class: "st", text: status }), " ",
        s.waiting_for_user ? el("span", { class: "waiting", text: "waiting for you" }) : null,
        s.detail ? el("span", { class: "prompt", text: s.detail }) : null));
    }
  }

  function banner(text, button) {
    const b = $("banner");
    b.textContent = text;
    if (button) b.append(button);
    b.hidden = !text;
  }

  function takenOver() {
    page.taken = true;
    document.documentElement.dataset.taken = "true";
    for (const c of page.cards.values()) if (open(c)) setState(c, "taken", "This session is open in another tab or window.");
    banner("This session was opened in another tab or window, which now answers it.",
      el("button", { type: "button", text: "Answer here again", onclick: () => { page.taken = false; delete document.documentElement.dataset.taken; banner(""); connect(); } }));
    if (page.ws) page.ws.close();
  }

  function conn(text, ok) {
    const c = $("conn");
    c.textContent = text;
    c.className = "conn " + (ok ? "ok" : "bad");
  }

  // connect opens the socket, and reopens it after a drop: the bridge
  // replays every pending question on connect.
  function connect() {
    if (page.ws) {
      page.ws.onclose = null;
      page.ws.close();
    }
    const key = localStorage.getItem("askctl.key");
    if (!key) {
      loggedOut("Not logged in.");
      return;
    }
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const url = proto + "//" + location.host + "/ws" + (page.view ? "?session_id=" + encodeURIComponent(page.view) : "");
    // The key goes as a subprotocol: a browser sets no other header on a
    // WebSocket, and a URL would show it.
    const ws = new WebSocket(url, ["askctl", "askctl.key." + key]);
    page.ws = ws;
    ws.onopen = () => {
      page.retry = 0;
      page.replayed = new Set(); // the questions the bridge replays, up to the sync's reply
      page.opened = true;
      conn("connected", true);
      // The bridge replays what is pending before it reads a message, so
      // the reply to this one (an error: no such message type) marks the
      // end of the replay: the page then shows everything there is.
      ws.send(JSON.stringify({ type: "askctl_sync" }));
      // An answer in flight when the socket dropped may or may not have
      // been taken: the bridge's replay and statuses now say.
      for (const c of page.cards.values()) if (c.state === "sending") setState(c, "pending", "The connection dropped while sending; if the question is still here, send again.");
    };
    ws.onmessage = (e) => {
      let m;
      try {
        m = JSON.parse(e.data);
      } catch {
        return;
      }
      on(m);
    };
    ws.onclose = () => {
      if (page.ws !== ws || page.taken) return;
      const wait = Math.min(5000, 250 * 2 ** page.retry++);
      conn("reconnecting…", false);
      if (page.retry >= 4) {
        // The browser does not say why a socket was refused: a bridge that
        // is down, or a key it no longer takes (its token changed).
        banner(page.opened ? "The bridge does not answer; trying again." : "The bridge refuses this page's login, or it is not running: run askctl login and open the link it prints.");
      }
      setTimeout(() => {
        if (page.ws === ws) connect();
      }, wait);
    };
  }

  function loggedOut(why) {
    conn("not logged in", false);
    banner(why + " Run askctl login on the machine the bridge runs on, and open the link it prints (askctl serve prints one when it starts).");
  }

  $("logout").addEventListener("click", (e) => {
    e.preventDefault();
    // The bridge revokes the key, so it opens nothing even if it was copied.
    const key = localStorage.getItem("askctl.key");
    if (key) fetch("/api/logout", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key }) }).catch(() => {});
    localStorage.removeItem("askctl.key");
    if (page.ws) {
      page.ws.onclose = null;
      page.ws.close();
      page.ws = null;
    }
    for (const c of page.cards.values()) c.el.remove();
    page.cards.clear();
    page.sessions.clear();
    renderSessions();
    $("empty").hidden = false;
    loggedOut("Logged out.");
  });

  function route() {
    const m = /^#session=(.+)$/.exec(location.hash);
    page.view = m ? decodeURIComponent(m[1]) : "";
    page.taken = false;
    delete document.documentElement.dataset.taken;
    banner("");
    $("view").textContent = page.view ? "session " + page.view : "every session";
    for (const c of page.cards.values()) c.el.remove();
    page.cards.clear();
    page.sessions.clear();
    $("done-section").hidden = true;
    $("empty").hidden = false;
    renderSessions();
    connect();
  }

  // The card the keys act on: the one holding focus, else the first that
  // waits.
  function activeCard() {
    const f = document.activeElement && document.activeElement.closest && document.activeElement.closest(".card");
    if (f) return page.cards.get(f.dataset.qid);
    for (const c of page.cards.values()) if (open(c) && c.el.parentNode === $("questions")) return c;
    return null;
  }

  // The question the number keys pick in: the one holding focus, else the
  // first without an answer.
  function activeQuestion(c) {
    const f = document.activeElement && document.activeElement.closest && document.activeElement.closest("fieldset");
    if (f && c.el.contains(f)) return Number(f.dataset.index);
    const i = c.picks.findIndex((p) => p.length === 0);
    return i >= 0 ? i : c.questions.length - 1;
  }

  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    const typing = t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text");
    // Keys act on a card when the focus is in it, or nowhere: Enter on a
    // link still follows it.
    if (t !== document.body && !(t.closest && t.closest(".card"))) return;
    const c = activeCard();
    if (!c || !open(c)) return;
    if (e.key === "Escape") {
      e.preventDefault();
      skip(c);
      return;
    }
    if (e.key === "Enter" && !e.shiftKey && t.tagName !== "BUTTON") {
      e.preventDefault();
      send(c);
      return;
    }
    if (typing || !/^[1-9]$/.test(e.key)) return;
    const i = activeQuestion(c);
    const fs = c.el.querySelectorAll("fieldset")[i];
    const input = fs.querySelector('input[data-key="' + e.key + '"]');
    if (!input) return;
    e.preventDefault();
    input.click();
    if (input.value === OTHER) return; // its text field has focus
    input.focus();
    if (!c.questions[i].multiSelect && i + 1 < c.questions.length) {
      // On to the next question.
      c.el.querySelectorAll("fieldset")[i + 1].querySelector("input").focus();
    }
  });

  window.addEventListener("hashchange", route);
  route();
})();
