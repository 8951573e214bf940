// askctl's browser adapter: this script runs in every document of a tab
// the harness drives. It finds a web UI's questions by the profile's map
// (CSS for containers, ARIA roles and accessible names for controls, as a
// screen reader would) and acts as a person: it clicks options, types,
// presses Send or Skip. It reports what the page shows to the harness
// (window.__askctlPush) whenever the page changes. The map arrives as
// window.__askctlMap, set before this runs.
"use strict";
(() => {
  const M = window.__askctlMap;
  if (!M || window.__askctl) return;
  const role = (e) => e.computedRole || e.getAttribute("role") || "";
  const name = (e) => (e.computedName || e.getAttribute("aria-label") || e.textContent || "").trim();
  const re = (s) => new RegExp(s);
  const all = (root, sel) => Array.from(root.querySelectorAll(sel));
  // Controls and groups only: computing every element's role is slow.
  const CANDIDATES = "input, button, textarea, select, fieldset, a, [role], [contenteditable]";
  const byRole = (root, roles, nameRe) =>
    all(root, CANDIDATES).filter((e) => roles.includes(role(e)) && (!nameRe || nameRe.test(name(e))));
  const text = (root, sel) => {
    const e = sel && root.querySelector(sel);
    return e ? e.textContent.trim() : "";
  };

  // The page's WebSockets pass through here, so that the harness can take
  // the network away from this tab as a person's laptop loses it, the tab
  // left open (offline), and give it back (online): the page must then
  // reconnect by itself. Offline, an open socket fails as a cut one does
  // (an error, then a close of code 1006, and nothing heard after; the
  // bridge sees it closed), and a new one fails as it does with no network,
  // never reaching the bridge.
  // Offline outlives the document: a page that reloads while offline
  // (a dev server's client does) stays offline.
  const OFFLINE = "__askctl.offline";
  const stored = () => {
    try {
      return sessionStorage.getItem(OFFLINE) === "1";
    } catch {
      return false;
    }
  };
  const store = (down) => {
    try {
      if (down) sessionStorage.setItem(OFFLINE, "1");
      else sessionStorage.removeItem(OFFLINE);
    } catch {
      // no storage: offline lasts this document
    }
  };
  const net = { down: stored(), sockets: new Set(), made: 0, opened: 0 };
  const Native = window.WebSocket;
  if (Native) {
    window.WebSocket = class WebSocket extends Native {
      constructor(url, protocols) {
        net.made++;
        if (net.down) return unreachable(String(url), new.target);
        if (protocols === undefined) super(url);
        else super(url, protocols);
        net.sockets.add(this);
        // First of the socket's listeners: after a cut, only the cut's
        // own events reach the page's.
        const mute = (e) => {
          if (this.__cut && !e.__askctl) e.stopImmediatePropagation();
        };
        for (const t of ["open", "message", "error", "close"]) this.addEventListener(t, mute);
        this.addEventListener("open", () => {
          if (!this.__cut) net.opened++;
          push();
        });
        this.addEventListener("close", () => net.sockets.delete(this));
      }
    };
  }
  // cutOff tells a socket's listeners and handlers that it failed: an
  // error, then a close of code 1006 (a connection lost, not closed).
  function cutOff(s, fire) {
    setTimeout(() => {
      const err = new Event("error");
      err.__askctl = true;
      fire(err);
      const end = new CloseEvent("close", { code: 1006, reason: "", wasClean: false });
      end.__askctl = true;
      fire(end);
    }, 100);
  }
  // unreachable is a socket made with no network: it fails, as a real
  // one would, and the bridge never hears of it.
  function unreachable(url, kind) {
    const s = new EventTarget();
    Object.setPrototypeOf(s, kind.prototype); // a page's own subclass too
    const on = {};
    const props = {
      url: { value: url }, protocol: { value: "" }, extensions: { value: "" }, bufferedAmount: { value: 0 },
      binaryType: { value: "blob", writable: true }, readyState: { value: Native.CONNECTING, writable: true },
      send: { value: () => { throw new DOMException("Still in CONNECTING state.", "InvalidStateError"); } },
      close: { value: () => { if (s.readyState === Native.CONNECTING) s.readyState = Native.CLOSING; } },
    };
    for (const t of ["open", "message", "error", "close"]) props["on" + t] = { get: () => on[t] || null, set: (f) => { on[t] = f; } };
    Object.defineProperties(s, props);
    cutOff(s, (e) => {
      if (e.type === "close") s.readyState = Native.CLOSED;
      s.dispatchEvent(e);
      if (typeof on[e.type] === "function") {
        try {
          on[e.type].call(s, e);
        } catch (err) {
          // Reported as a handler's error is, and the close still comes.
          setTimeout(() => {
            throw err;
          }, 0);
        }
      }
    });
    return s;
  }
  // offline cuts the page's open sockets; with none open it changes
  // nothing (the harness reports the operation unsupported).
  function offline() {
    const open = [...net.sockets].filter((s) => !s.__cut && s.readyState <= Native.OPEN);
    if (open.length === 0) return { cut: 0, made: net.made, opened: net.opened };
    net.down = true;
    store(true);
    for (const s of open) {
      s.__cut = true;
      s.close();
      Object.defineProperty(s, "readyState", { value: Native.CLOSED });
      cutOff(s, (e) => s.dispatchEvent(e));
    }
    return { cut: open.length, made: net.made, opened: net.opened };
  }
  // online lets sockets through again. It returns the page's ready mark,
  // read in the same turn: offline, the page heard no replay since the
  // cut, so the next change of the mark is the replay after it is back.
  function online() {
    net.down = false;
    store(false);
    return { made: net.made, opened: net.opened, ready: attr(M.ready) };
  }

  // reclaim presses the page's button that takes its session back after
  // another tab took it over. It returns what online does, read in the
  // same turn: the page heard no replay since it was taken over (its
  // socket closed), so the next change of the mark is the replay after.
  function reclaim() {
    if (!M.reclaim) return { unsupported: "reclaim", error: "the profile's map names no button that takes the session back (map.reclaim)" };
    const b = byRole(document, ["button"], re(M.reclaim))[0];
    if (!b) return { error: "the page shows no button named " + M.reclaim + " (is it taken over?)" };
    if (b.disabled) return { error: "the page's button " + JSON.stringify(name(b)) + " is disabled" };
    b.click();
    return { ok: true, made: net.made, opened: net.opened, ready: attr(M.ready) };
  }

  // attr reads "SELECTOR@ATTRIBUTE" (no eval: pages forbid it).
  function attr(spec) {
    if (!spec) return "";
    const i = spec.lastIndexOf("@");
    const e = document.querySelector(spec.slice(0, i));
    return (e && e.getAttribute(spec.slice(i + 1))) || "";
  }

  function requests() {
    return all(document, M.request).filter((e) => e.getAttribute(M.id));
  }

  function request(qid) {
    return requests().find((e) => e.getAttribute(M.id) === qid) || null;
  }

  // questions reads a request's questions as the page shows them.
  function questions(card) {
    return byRole(card, M.question_roles).map((q) => {
      const opts = byRole(q, ["radio", "checkbox"]).filter((o) => !re(M.other).test(name(o)));
      return {
        question: text(q, M.text),
        header: text(q, M.header),
        multiSelect: opts.some((o) => role(o) === "checkbox"),
        options: opts.map((o) => {
          const d = o.getAttribute("aria-describedby");
          const de = d && document.getElementById(d);
          return { label: name(o), description: de ? de.textContent.trim() : "" };
        }),
      };
    });
  }

  // snapshot is what the page shows now.
  // Snapshots are numbered across the tab's documents (a reload starts a
  // new one), so the harness can drop one overtaken by a later one.
  const base = Math.round(performance.timeOrigin * 1000);
  // When the page first showed each request, and how it ended: the times
  // the harness reports (a snapshot reaches it a little later).
  const seenAt = new Map(), endedAt = new Map();
  const stamp = (m, id) => {
    if (!m.has(id)) m.set(id, Date.now());
    return m.get(id);
  };
  let seq = 0;
  function snapshot() {
    return {
      seq: base + ++seq,
      ready: attr(M.ready),
      opened: net.opened,
      taken: !!(M.taken && document.querySelector(M.taken)),
      requests: requests().map((card) => ({
        id: card.getAttribute(M.id),
        state: card.getAttribute(M.state) || "",
        ended: (M.ended && card.getAttribute(M.ended)) || "",
        seen_ms: stamp(seenAt, card.getAttribute(M.id)),
        asked_at: (M.asked_at && card.getAttribute(M.asked_at)) || "",
        ended_at: (M.ended_at && card.getAttribute(M.ended_at)) || "",
        ended_ms: M.ended && card.getAttribute(M.ended) ? stamp(endedAt, card.getAttribute(M.id)) : 0,
        status: text(card, M.status),
        session: (M.session_attr && card.getAttribute(M.session_attr)) || "",
      })),
      sessions: M.sessions ? all(document, M.sessions).map((s) => ({
        id: s.getAttribute("data-session"), status: s.getAttribute("data-status"),
        waiting: s.getAttribute("data-waiting") === "true", pending: s.getAttribute("data-pending") || "",
      })) : [],
    };
  }

  // A page shows a question's text with its white space folded (HTML), so
  // the text asked is found as folded.
  const fold = (s) => s.replace(/\s+/g, " ").trim();
  function questionOf(card, text0) {
    return byRole(card, M.question_roles).find((q) => fold(text(q, M.text)) === fold(text0)) || null;
  }

  // answer gives answers (question text → labels, or one free text) and
  // presses Send. It refuses what a person could not do here.
  // settled tells a request the page no longer takes answers for.
  function settled(card) {
    const k = kindOf(card);
    return k !== "pending" && k !== "error";
  }

  function kindOf(card) {
    const st = card.getAttribute(M.state) || "";
    return (M.states && M.states[st]) || st;
  }

  // refused is the page's refusal of what (an answer, a skip) on a card
  // it no longer takes it on: another tab's, once this one was taken over.
  function refused(card, what) {
    return { code: kindOf(card) === "taken" ? "session_taken" : "resolved", error: "the page no longer takes " + what + ": " + text(card, M.status) };
  }

  // A person's way to an answer varies (n, the count of the person's
  // answers and skips in the session, picks the way; odd for the first): on one way they
  // pick just what they answer, clicking Other before typing their own
  // words; on the other they change their mind — in a multiSelect question
  // they tick an option they do not keep and untick it once the rest are
  // ticked, in a single one they pick another first — and type their own
  // words straight into the box. Questions of one request alternate. A
  // page that sends as soon as an option is picked, with no Send, is not
  // one this adapter drives.
  function changesMind(n, i) {
    return ((n | 0) + i) % 2 === 1;
  }

  function answer(qid, answers, n) {
    const card = request(qid);
    if (!card) return { code: "not_found", error: "the page shows no question " + qid };
    if (settled(card)) return refused(card, "an answer");
    // Answers to some of the questions only: the person presses Send
    // before answering the rest, as people do. The page may refuse (most
    // pages send every question of a request together), hold the part, or
    // send it; whatever it says is the bridge's and the page's reply, and
    // the card must stay answerable.
    let i = 0;
    for (const [qt, vals] of Object.entries(answers)) {
      const q = questionOf(card, qt);
      // A person answers only what the page shows: a question it does not
      // show (a malformed answer's) is no gesture of theirs.
      if (!q) return { unsupported: "answer operation", error: "the page shows no question " + JSON.stringify(qt) + " to answer" };
      const opts = byRole(q, ["radio", "checkbox"]);
      // Open, by what the card says, yet nothing of it can be picked: the
      // page refuses the person without a word, which no operation it
      // lacks explains.
      if (opts.length > 0 && opts.every((x) => x.disabled)) {
        return { code: "invalid", error: "the page shows the question " + JSON.stringify(qt) + " as open (" + kindOf(card) + "), but every option of it is disabled: " + text(card, M.status) };
      }
      const isOther = (x) => re(M.other).test(name(x));
      // Start from nothing picked, then pick in the order given.
      for (const o of opts) if (o.checked && role(o) === "checkbox") o.click();
      const mind = changesMind(n, i++);
      const decoy = mind ? opts.find((x) => !isOther(x) && !vals.includes(name(x))) : null;
      const decoyAt = decoy ? ((n | 0) >> 1) % Math.max(1, vals.length) : -1;
      for (let k = 0; k < vals.length; k++) {
        if (k === decoyAt && !decoy.checked) decoy.click();
        const v = vals[k];
        const o = opts.find((x) => name(x) === v && !isOther(x));
        if (o) {
          if (!o.checked) o.click();
          continue;
        }
        const other = opts.find(isOther);
        const box = byRole(q, ["textbox"])[0];
        if (!other || !box) return { unsupported: "free text", error: "the page offers no own words for " + JSON.stringify(qt) };
        if (!mind && !other.checked) other.click();
        box.focus();
        box.value = v;
        box.dispatchEvent(new Event("input", { bubbles: true }));
        if (!other.checked) other.click(); // a page that does not tick Other as one types
      }
      if (decoy && decoy.checked && role(decoy) === "checkbox") decoy.click();
    }
    const send = byRole(card, ["button"], re(M.send))[0];
    if (!send) return { unsupported: "answer", error: "no button named " + M.send };
    if (send.disabled) return refused(card, "an answer");
    send.click();
    return { ok: true };
  }

  // skip presses Skip, with the reason typed in its field. On the way a
  // person changes their mind (see answer), they had begun to answer: an
  // option of the first question is picked, which a skip must not send.
  function skip(qid, reason, n) {
    const card = request(qid);
    if (!card) return { code: "not_found", error: "the page shows no question " + qid };
    if (settled(card)) return refused(card, "a skip");
    const btn = byRole(card, ["button"], re(M.skip))[0];
    if (!btn) return { unsupported: "skip", error: "no button named " + M.skip };
    if (btn.disabled) return refused(card, "a skip");
    const box = byRole(card, ["textbox"], re(M.reason))[0];
    if (reason && !box) return { unsupported: "skip reason", error: "no field named " + M.reason };
    if (changesMind(n, 0)) {
      const q = byRole(card, M.question_roles)[0];
      const o = q && byRole(q, ["radio", "checkbox"]).find((x) => !re(M.other).test(name(x)) && !x.disabled);
      if (o && !o.checked) o.click();
      // A page may take Skip away once something is picked: a person
      // would see that, and so does the case.
      if (btn.disabled) return { unsupported: "skip after a pick", error: "the page disables " + M.skip + " once an option is picked" };
    }
    if (box) {
      box.value = reason || "";
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }
    btn.click();
    return { ok: true };
  }

  window.__askctl = { snapshot, questions: (qid) => { const c = request(qid); return c ? questions(c) : null; }, answer, skip, offline, online, reclaim, sockets: () => ({ made: net.made, opened: net.opened }) };

  // Tell the harness whenever the page changes (once per burst).
  let queued = false;
  const push = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      if (window.__askctlPush) window.__askctlPush(JSON.stringify(snapshot())).catch(() => {});
    });
  };
  const start = () => {
    new MutationObserver(push).observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
    push();
  };
  if (document.documentElement) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
