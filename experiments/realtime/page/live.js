// spit-env live game: one game against a bot over a websocket to the server that served this page.
// The table is drawn by the replay page's drawing (table.js); the rules are the server's: this page
// sends keys and clicks and draws the states it gets. Overlays (start, paused, help, the stop
// dialog, the end) sit on a stack: the top one takes every key, and a key that closes it does
// nothing else.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const { fmtClock, esc, plural } = window.SpitTable;
  const OVERLAYS = ["start", "paused", "dialog", "help", "end", "closed"];
  const L = {
    hello: null, T: null, slot: [0, 1], state: null, overlays: ["start"], selected: -1, started: false, paused: false,
    gameMs: 0, recvAt: 0, autoPaused: false, log: [], end: null, ws: null, counts: {},
  };
  const count = (name) => { L.counts[name] = (L.counts[name] || 0) + 1; document.body.dataset[name] = L.counts[name]; };
  const send = (msg) => { if (L.ws && L.ws.readyState === WebSocket.OPEN) L.ws.send(JSON.stringify(msg)); };
  const human = () => (L.hello ? L.hello.human : 0);
  // the page's own view of start and pause: only its requests change them, so it need not wait
  // for the server's next state to act on the next key
  const running = () => L.started && !L.paused && !(L.state && L.state.over);

  // --- overlays ----------------------------------------------------------------------------------
  const top = () => L.overlays[L.overlays.length - 1] || "";
  function showOverlays() {
    OVERLAYS.forEach((name) => { $("overlay-" + name).hidden = !L.overlays.includes(name); });
    document.body.dataset.overlay = top();
    // before the start and while paused the clock stands still: so does what one may plan
    document.body.classList.toggle("hide-cards", L.overlays.includes("paused") || L.overlays.includes("start"));
  }
  function open(name) {
    if (L.overlays.includes(name)) return;
    // a help panel or a dialog over a running game pauses it while it is open
    if ((name === "help" || name === "dialog") && running()) { send({ type: "pause" }); L.paused = true; L.autoPaused = true; }
    L.overlays.push(name);
    showOverlays();
  }
  function close(name) {
    L.overlays = L.overlays.filter((o) => o !== name);
    if ((name === "help" || name === "dialog") && L.autoPaused && !L.overlays.some((o) => o === "help" || o === "dialog")) {
      L.autoPaused = false;
      L.paused = false;
      send({ type: "resume" });
    }
    showOverlays();
  }
  const closeAll = () => { L.overlays = []; showOverlays(); };

  function start() { close("start"); L.started = true; send({ type: "start" }); }
  function pause() { if (running()) { send({ type: "pause" }); L.paused = true; open("paused"); } }
  function resume() { close("paused"); if (L.paused) { L.paused = false; send({ type: "resume" }); } }
  function stop() { L.autoPaused = false; close("dialog"); send({ type: "stop" }); }

  // --- keys --------------------------------------------------------------------------------------
  const GAME_KEYS = new Set();
  function keyName(e) {
    if (e.key === "ArrowLeft") return "left";
    if (e.key === "ArrowRight") return "right";
    if (e.key === " " || e.key === "Spacebar") return "space";
    if (e.key === "Escape") return "escape";
    if (e.key === "Enter") return "enter";
    if (e.key === "?") return "help";
    return e.key.length === 1 ? e.key.toLowerCase() : e.key;
  }
  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const key = keyName(e);
    const o = top();
    const handled = (f) => { e.preventDefault(); if (f) f(); };
    if (o === "help") return handled(key === "escape" || key === "help" ? () => close("help") : null);
    if (o === "dialog") {
      if (key === "y" || key === "enter") return handled(stop);
      return handled(key === "n" || key === "escape" ? () => close("dialog") : null);
    }
    if (o === "closed") return handled(null);
    if (key === "help") return handled(() => open("help"));
    if (o === "start") return handled(key === "space" || key === "enter" ? start : null);
    if (o === "paused") return handled(key === "space" || key === "escape" ? resume : null);
    // the end's own keys are no game keys: a key meant for the last card starts nothing
    if (o === "end") {
      if (key === "enter") return handled(() => send({ type: "rematch" }));
      return handled(key === "escape" ? () => close("end") : null);
    }
    if (L.state && L.state.over) { // the end screen closed: the final table
      if (key === "enter") return handled(() => send({ type: "rematch" }));
      if (key === "escape") return handled(() => open("end"));
      return handled(null);
    }
    if (key === "space") return handled(pause);
    if (key === "escape") return handled(() => open("dialog"));
    if (GAME_KEYS.has(key)) return handled(() => { L.selected = -1; send({ type: "key", key }); });
  }

  // --- clicks: a card of yours, then a pile or an empty place; a pile alone slaps it --------------
  function onClick(e) {
    if (top() || !running()) return;
    const place = e.target.closest("#places" + L.slot[human()] + " .place");
    const pile = e.target.closest(".pile");
    if (place) {
      const s = Number(place.dataset.place);
      if (!place.dataset.cards) { // an empty place: fill it from the card chosen
        if (L.selected >= 0) send({ type: "move", stock: L.selected, to: "empty" });
        L.selected = -1;
      } else L.selected = L.selected === s ? -1 : s;
    } else if (pile) {
      const own = Number(pile.dataset.pile) === L.slot[human()];
      if (L.selected >= 0) send({ type: "move", stock: L.selected, to: own ? "own" : "opp" });
      else send({ type: "slap", pile: own ? "own" : "opp" });
      L.selected = -1;
    } else return;
    markSelected();
  }
  function markSelected() {
    document.querySelectorAll(".place.selected").forEach((el) => el.classList.remove("selected"));
    const box = $("places" + L.slot[human()]);
    if (L.selected >= 0 && box.children[L.selected]) box.children[L.selected].classList.add("selected");
    document.body.dataset.selected = L.selected;
  }

  // --- messages ----------------------------------------------------------------------------------
  function say(text, kind) {
    const el = $("message");
    el.className = kind || "";
    el.textContent = text;
  }

  function onHello(h) {
    L.hello = h;
    L.slot = h.human === 0 ? [0, 1] : [1, 0];
    L.T = window.SpitTable.create({ view: h.view, names: () => h.names, slot: L.slot, hidden: () => false, scoring: h.scoring,
      pileName: (c) => (c === h.human ? "your pile" : h.names[c] + "'s pile"), you: h.human });
    L.state = null; L.end = null; L.log = []; L.selected = -1; L.autoPaused = false; L.started = false; L.paused = false;
    const bot = 1 - h.human;
    $("matchup").innerHTML = '<b class="p0">you</b> vs <b class="p1">' + esc(h.names[bot]) + "</b> \u00b7 " +
      esc(h.latency[bot]) + " \u00b7 game " + h.game;
    [0, 1].forEach((p) => {
      const seat = $("seat" + L.slot[p]);
      seat.querySelector(".name").textContent = h.names[p];
      seat.querySelector(".latency").textContent = h.latency[p];
    });
    $("start-opponent").textContent = h.opponent;
    $("start-motor").textContent = h.latency[h.human].replace(" motor time", "");
    GAME_KEYS.clear();
    Object.values(h.keys).forEach((keys) => [...keys].forEach((k) => GAME_KEYS.add(k)));
    GAME_KEYS.add("left"); GAME_KEYS.add("right");
    const rows = [["fits", "play where it fits (your pile first)"], ["own", "onto your pile"],
      ["opp", "onto " + h.names[bot] + "'s pile"], ["fill", "into an empty place / turn up"]];
    const table = rows.map(([k, text]) => "<tr><td>" + [...h.keys[k]].map((c) => "<kbd>" + esc(c.toUpperCase()) + "</kbd>").join(" ") +
      "</td><td>" + esc(text) + "</td></tr>").join("") + "<tr><td><kbd>&larr;</kbd> <kbd>&rarr;</kbd></td><td>slap your pile / theirs</td></tr>";
    $("keymap").innerHTML = table;
    $("help-keymap").innerHTML = table;
    L.overlays = ["start"];
    showOverlays();
    renderLog();
    say("");
    document.body.dataset.game = h.game;
    document.body.dataset.ready = "1";
  }

  function onState(m) {
    L.state = m;
    L.gameMs = m.game_ms === null ? 0 : m.game_ms;
    L.recvAt = performance.now();
    const snap = m.snapshot;
    for (let p = 0; p < 2; p++) {
      L.T.renderSpit(p, snap);
      L.T.renderSeat(p, snap);
      L.T.renderPile(p, snap);
    }
    renderPlaces();
    if (m.events.length) {
      L.T.flashEvents(m.events);
      m.events.forEach((ev) => { if (ev.type !== "illegal") L.log.push(ev); });
      L.log = L.log.slice(-11);
      renderLog();
      const news = m.events.filter((ev) => ["round_end", "slap", "game_end", "spit"].includes(ev.type)).pop();
      if (news) banner(news);
    }
    if (m.messages.length) say(m.messages[m.messages.length - 1], "refused");
    $("round").textContent = snap.phase === "over" ? plural(snap.round, "round") + " played" : "round " + (snap.round + 1);
    $("phase").textContent = m.holding || snap.phase === "slap" ? "SLAP! \u2190 your pile \u00b7 \u2192 theirs" : snap.phase;
    $("phase").classList.toggle("slap", m.holding || snap.phase === "slap");
    $("btn-pause").textContent = L.paused ? "Go on" : "Pause";
    $("btn-pause").disabled = !m.started || m.over;
    const ds = document.body.dataset;
    ds.gameMs = m.game_ms === null ? "" : Math.round(m.game_ms);
    ds.started = m.started ? "1" : "0";
    ds.paused = m.paused ? "1" : "0";
    ds.over = m.over ? "1" : "0";
    ds.phase = snap.phase;
    count("states");
    renderTime();
  }

  function inFlight(p) {
    if (!L.state) return null;
    const ms = L.state.moves.filter((m) => m.player === p && m.outcome === "in_flight");
    return ms.length ? ms[ms.length - 1] : null;
  }

  function renderPlaces() {
    const snap = L.state.snapshot;
    for (let p = 0; p < 2; p++) {
      const m = inFlight(p);
      L.T.renderPlaces(p, snap, m && (m.kind === "play" || m.kind === "fill") ? m.stock : -1);
    }
    if (L.state.hints) {
      const box = $("places" + L.slot[human()]);
      L.state.hints.forEach((h, s) => { if (h && box.children[s]) box.children[s].classList.add("hint"); });
    }
    markSelected();
  }

  function banner(ev) {
    const el = $("banner");
    el.className = ev.type;
    el.innerHTML = L.T.eventHtml(ev, null);
    void el.offsetWidth;
    el.classList.add("show");
  }

  function renderLog() {
    const log = $("log");
    log.textContent = "";
    L.log.slice().reverse().forEach((ev) => {
      const li = document.createElement("li");
      li.className = ev.type;
      li.innerHTML = '<span class="t">' + fmtClock(ev.clock_ms) + "</span>" + L.T.eventHtml(ev, null);
      log.appendChild(li);
    });
    if (!L.log.length) log.innerHTML = "<li>the game starts with both players' spit cards</li>";
  }

  function now() { // game time on the page: the server's, run on between two states (at most
    // 250 ms) when the server's clock is the wall clock
    if (!L.state || !running() || !L.hello.runs_on) return L.gameMs;
    return L.gameMs + Math.min(250, performance.now() - L.recvAt);
  }

  function renderTime() {
    if (!L.state) return;
    const t = Math.max(0, now());
    const hands = [inFlight(0), inFlight(1)];
    for (let p = 0; p < 2; p++) L.T.renderHand(p, L.state.snapshot, hands[p], t);
    L.T.renderTargets(hands);
    const moves = [[], []];
    L.state.moves.forEach((m) => moves[m.player].push(m));
    L.T.drawLanes($("lanes"), moves, L.state.marks, t);
    const started = L.state.started && L.state.game_ms !== null;
    $("clock").textContent = started && L.gameMs < 0 ? "get ready\u2026 " + Math.ceil(-L.gameMs / 1000) : fmtClock(t);
  }
  function frame() { if (running()) renderTime(); requestAnimationFrame(frame); }

  // --- the end: the result and the fitted profile beside the presets -----------------------------
  function onEnd(m) {
    L.end = m;
    // "You win" / "A draw"; a player's name keeps its spelling ("racer@club wins")
    $("end-result").textContent = /^(you|a draw)/.test(m.result) ? m.result.charAt(0).toUpperCase() + m.result.slice(1) : m.result;
    const s = m.summary;
    $("end-summary").textContent = s.moves ? "This game: " + plural(s.moves, "timed move") + ", your latency (reaction + motor time) median " +
      Math.round(s.median_ms) + " ms, mean " + Math.round(s.mean_ms) + " ms." : "No moves of yours to time in this game.";
    if (m.fit) {
      const f = m.fit;
      const gaps = Object.entries(m.distance).map(([n, d]) => n + " " + d.toFixed(2)).join(", ");
      $("end-profile").textContent = "Your profile over " + plural(f.n, "move") + " (this sitting): a log-normal from " +
        Math.round(f.shift_ms) + " ms, mean " + Math.round(f.mean_ms) + " ms, sd " + Math.round(f.std_ms) +
        " ms. Closest preset: " + m.closest + " (largest gap between the distribution functions: " + gaps + ").";
      wrapAtFolders($("end-commands"), m.profile_path ? "Saved: " + m.profile_path + "\nA bot at your speed:\n  " + m.commands.join("\n  ") : "");
    } else {
      $("end-profile").textContent = "No profile yet: " + m.why_not + ". A rematch adds its moves.";
      $("end-commands").textContent = "";
    }
    $("end-saved").textContent = "";
    L.overlays = L.overlays.filter((o) => o === "help");
    L.overlays.unshift("end");
    L.autoPaused = false;
    showOverlays();
    drawDensity(m);
    document.body.dataset.ended = m.game;
  }

  // text whose lines may break after each "/" and "," (a <wbr> there), so that a long path wraps at
  // its folders instead of inside a name; the text itself (copied, or read) is unchanged
  function wrapAtFolders(e, text) {
    e.textContent = "";
    text.split(/(?<=[/,])/).forEach((part, i) => {
      if (i) e.appendChild(document.createElement("wbr"));
      e.appendChild(document.createTextNode(part));
    });
  }

  function drawDensity(m) {
    const { ctx, w, h } = window.SpitTable.sizeCanvas($("density"));
    const d = m.density;
    const xs = d.ms, xmax = xs[xs.length - 1];
    const names = Object.keys(d).filter((k) => k !== "ms" && d[k]);
    const ymax = Math.max(...names.map((n) => Math.max(...d[n])));
    const left = 40, right = 12, topPad = 24, bottom = 30;
    const X = (x) => left + (x / xmax) * (w - left - right);
    const Y = (y) => h - bottom - (y / ymax) * (h - topPad - bottom);
    ctx.fillStyle = "#101c15";
    ctx.fillRect(0, 0, w, h);
    const colors = { you: "#4fc3f7", pro: "#ef9a9a", club: "#a5d6a7", novice: "#ffcc80" };
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#7f9a8a";
    const step = xmax > 2400 ? 500 : xmax > 1200 ? 200 : 100;
    const ticks = [];  // each tick's label, centred on its tick and kept inside the canvas
    for (let x = 0; x <= xmax; x += step) {
      ctx.fillRect(X(x), h - bottom, 1, 4);
      const label = x + (x === 0 ? " ms" : ""), tw = ctx.measureText(label).width;
      const tx = Math.min(Math.max(X(x) - tw / 2, 2), w - 2 - tw);
      ctx.fillText(label, tx, h - bottom + 16);
      ticks.push({ label, x0: tx, x1: tx + tw });
    }
    $("density").dataset.ticks = JSON.stringify({ width: w, ticks });
    ctx.fillRect(left, h - bottom, w - left - right, 1);
    names.forEach((n) => {
      ctx.beginPath();
      xs.forEach((x, i) => (i ? ctx.lineTo(X(x), Y(d[n][i])) : ctx.moveTo(X(x), Y(d[n][i]))));
      ctx.strokeStyle = colors[n] || "#ccc";
      ctx.lineWidth = n === "you" ? 3 : 1.5;
      ctx.setLineDash(n === "you" ? [] : [5, 3]);
      ctx.stroke();
      if (n === "you") {
        ctx.lineTo(X(xmax), Y(0)); ctx.lineTo(X(0), Y(0)); ctx.closePath();
        ctx.fillStyle = "rgba(79,195,247,.18)"; ctx.fill();
      }
    });
    ctx.setLineDash([]);
    ctx.fillStyle = "rgba(79,195,247,.8)";
    (m.latencies_ms || []).forEach((x) => { if (x <= xmax) ctx.fillRect(X(x) - 0.5, h - bottom - 7, 1.2, 7); });
    let lx = left + 6;
    names.forEach((n) => {
      ctx.fillStyle = colors[n] || "#ccc";
      ctx.fillRect(lx, 9, 14, 3);
      ctx.fillStyle = "#dfe9e2";
      const label = n === "you" ? "you (fitted)" : n;
      ctx.fillText(label, lx + 18, 14);
      lx += 30 + ctx.measureText(label).width;
    });
    ctx.fillStyle = "#7f9a8a";
    ctx.fillText("density of the latency, decision to landing (ticks: your moves)", lx + 10, 14);
  }

  // --- the connection ----------------------------------------------------------------------------
  function connect() {
    const ws = new WebSocket("ws://" + location.host + "/ws");
    L.ws = ws;
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type === "hello") onHello(m);
      else if (m.type === "state") onState(m);
      else if (m.type === "end") onEnd(m);
      else if (m.type === "refused") { say(m.reason, "refused"); count("refused"); }
      else if (m.type === "queued") { say(m.text, "queued"); count("queued"); }
      else if (m.type === "saved") { wrapAtFolders($("end-saved"), "Saved the replay: " + m.paths.join(", ")); count("saved"); }
      else if (m.type === "error") { say(m.error, "refused"); count("errors"); }
    };
    ws.onclose = () => { L.overlays = ["closed"]; showOverlays(); document.body.dataset.closed = "1"; };
  }

  function init() {
    document.addEventListener("keydown", onKey);
    // a button clicked keeps no focus: Space and Enter are the game's, not the button's
    document.addEventListener("click", (e) => { const b = e.target.closest("button"); if (b) b.blur(); });
    document.addEventListener("keyup", (e) => { if (e.key === " " && e.target.closest("button")) e.preventDefault(); });
    $("table").addEventListener("click", onClick);
    $("btn-start").addEventListener("click", start);
    $("btn-resume").addEventListener("click", resume);
    $("btn-pause").addEventListener("click", () => (L.paused ? resume() : pause()));
    $("btn-help").addEventListener("click", () => open("help"));
    $("btn-help-close").addEventListener("click", () => close("help"));
    $("btn-stop-yes").addEventListener("click", stop);
    $("btn-stop-no").addEventListener("click", () => close("dialog"));
    $("btn-rematch").addEventListener("click", () => send({ type: "rematch" }));
    $("btn-save").addEventListener("click", () => send({ type: "save" }));
    $("btn-end-close").addEventListener("click", () => close("end"));
    window.addEventListener("resize", () => { renderTime(); if (L.end && top() === "end") drawDensity(L.end); });
    showOverlays();
    connect();
    requestAnimationFrame(frame);
  }
  init();
})();
