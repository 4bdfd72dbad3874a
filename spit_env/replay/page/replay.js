// spit-env replay viewer: draws the recorded snapshots of one game. It knows no rule of Spit:
// the table is the snapshot of the step shown, moves / races / marks come from the page data.
(() => {
  "use strict";
  const DATA = JSON.parse(document.getElementById("spit-replay-data").textContent);
  const REC = DATA.record;
  const VIEW = DATA.view;
  const FRAMES = [REC.initial].concat(REC.steps.map((s) => s.snapshot));
  const N = FRAMES.length;
  const CLOCKS = FRAMES.map((f) => f.clock_ms);
  const T_END = CLOCKS[N - 1];
  const NAMES = REC.players.map((p) => p.name);
  const KINDS = VIEW.kinds;
  const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32];
  const COLORS = ["#4fc3f7", "#ffb74d"];
  const KIND_COLORS = { fill: "#ba68c8", flip: "#9575cd", slap: "#ffd54f", wait: "#3f5a4b" };
  const $ = (id) => document.getElementById(id);
  const GUTTER = 92; // px left of both timelines, for the players' names
  const icon = (d) => '<svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true"><path fill="currentColor" d="' + d + '"/></svg>';
  const ICON_PLAY = icon("M7 4v16l13-8z");
  const ICON_PAUSE = icon("M6 4h4.5v16H6zM13.5 4H18v16h-4.5z");

  const S = { frame: -1, t: 0, playing: false, speed: 3, hidden: false, lastWall: null, moveKeys: ["", ""] };

  // --- data derived once -------------------------------------------------------------------------
  const MOVES = [[], []]; // per player, in decision order (one hand: they never overlap)
  VIEW.moves.forEach((m) => MOVES[m.player].push(m));
  function moveAt(p, t) { // the move of player p decided at or before t and not landed by t
    const ms = MOVES[p];
    let lo = 0, hi = ms.length - 1, found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ms[mid].start_ms <= t) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    const m = found >= 0 ? ms[found] : null;
    return m && (m.end_ms > t || m.outcome === "in_flight") ? m : null;
  }
  const MARKS_AT = new Map(); // frame index -> marks seen first there
  VIEW.marks.forEach((m) => {
    if (!MARKS_AT.has(m.step)) MARKS_AT.set(m.step, []);
    MARKS_AT.get(m.step).push(m);
  });
  const NOTABLE = VIEW.marks.filter((m) => m.kind !== "bounce");
  const PRIORITY = { game_end: 6, round_end: 5, slap: 4, race: 3, illegal: 2, spit: 1, bounce: 0 };

  // --- formatting --------------------------------------------------------------------------------
  const pad = (n, w) => String(n).padStart(w, "0");
  function fmtClock(ms) {
    ms = Math.max(0, Math.round(ms));
    return Math.floor(ms / 60000) + ":" + pad(Math.floor(ms / 1000) % 60, 2) + "." + pad(ms % 1000, 3);
  }
  const fmtMs = (ms) => Math.round(ms).toLocaleString("en-US") + " ms";
  const cardText = (id) => (id >= 0 ? VIEW.cards[id].label : "?");
  const pileName = (c) => NAMES[c] + "'s pile";
  const esc = (s) => String(s).replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]));
  const who = (p) => '<span class="p' + p + '">' + esc(NAMES[p]) + "</span>";
  const plural = (n, one) => n + " " + one + (n === 1 ? "" : "s");
  function frameAt(t) { // the last frame whose clock is <= t
    let lo = 0, hi = N - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (CLOCKS[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function absPile(player, action) {
    const c = VIEW.actions[action].pile;
    return c < 0 ? -1 : c === 0 ? player : 1 - player;
  }

  // --- cards -------------------------------------------------------------------------------------
  function cardEl(id, faceUp, extra) {
    const el = document.createElement("div");
    el.dataset.card = id;
    if (!faceUp && !S.hidden) {
      el.className = "card face-down" + (extra ? " " + extra : "");
      el.title = "face down";
      return el;
    }
    const c = VIEW.cards[id];
    el.className = "card" + (c.red ? " red" : "") + (faceUp ? "" : " revealed") + (extra ? " " + extra : "");
    el.title = c.label + (faceUp ? "" : " (face down)");
    const corner = '<span class="r">' + c.rank + '</span><span class="s">' + c.suit + "</span>";
    el.innerHTML = '<div class="corner">' + corner + '</div><div class="pip">' + c.suit +
      '</div><div class="corner br">' + corner + "</div>";
    return el;
  }

  // --- the table ---------------------------------------------------------------------------------
  const GAP = () => parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--gap")) || 13;
  const CARD_H = () => parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--card-h")) || 84;

  function renderPlaces(p, snap) {
    const box = $("places" + p);
    box.textContent = "";
    const gap = GAP(), h = CARD_H();
    const m = moveAt(p, S.t);
    const leaving = m && (m.kind === "play" || m.kind === "fill") ? m.stock : -1;
    snap.stocks[p].forEach((place, s) => {
      const el = document.createElement("div");
      el.className = "place" + (place.length ? "" : " empty") + (s === leaving ? " leaving" : "");
      el.dataset.player = p;
      el.dataset.place = s;
      el.dataset.cards = place.map((x) => x[0]).join(",");
      el.dataset.up = place.map((x) => (x[1] ? 1 : 0)).join(",");
      const n = place.length;
      place.forEach(([id, up], k) => {
        const card = cardEl(id, up, k === n - 1 ? "top" : "");
        const depth = (n - 1 - k) * gap; // cards underneath peek out away from the centre
        card.style.top = (p === 0 ? depth : 4 * gap - depth) + "px";
        card.style.zIndex = k + 1;
        el.appendChild(card);
      });
      if (!n) el.style.setProperty("--empty-top", (p === 0 ? 0 : 4 * gap) + "px");
      el.title = "stock " + (s + 1) + ": " + plural(n, "card");
      el.style.height = (h + 4 * gap) + "px";
      box.appendChild(el);
    });
  }

  function renderPile(c, snap) {
    const el = $("pile" + c);
    const pile = snap.centre[c];
    el.textContent = "";
    el.dataset.cards = pile.join(",");
    el.classList.toggle("none", pile.length === 0);
    if (pile.length >= 3) el.appendChild(cardEl(pile[pile.length - 3], true, "under2"));
    if (pile.length >= 2) el.appendChild(cardEl(pile[pile.length - 2], true, "under"));
    if (pile.length >= 1) el.appendChild(cardEl(pile[pile.length - 1], true, "top"));
    $("pile" + c + "-label").textContent = pile.length
      ? pileName(c) + " \u00b7 " + plural(pile.length, "card") : NAMES[c] + ": no pile";
  }

  function renderSpit(p, snap) {
    const el = $("spit" + p);
    const spit = snap.spit[p];
    el.textContent = "";
    el.dataset.count = spit.length;
    el.dataset.cards = spit.join(",");
    if (!spit.length) {
      el.innerHTML = '<div class="none">no spit cards</div>';
    } else {
      const shown = Math.min(spit.length, 4);
      for (let k = shown - 1; k >= 0; k--) {
        const card = cardEl(spit[k], false, k === 0 ? "next" : "");
        card.style.left = (20 + (k - (shown - 1) / 2) * 6 * (p === 0 ? 1 : -1)) + "px";
        card.style.top = (k * 2) + "px";
        el.appendChild(card);
      }
    }
    const count = document.createElement("div");
    count.className = "count";
    count.textContent = plural(spit.length, "spit card");
    el.appendChild(count);
  }

  function moveText(p, action, card) {
    const a = VIEW.actions[action];
    const kind = KINDS[a.kind];
    if (kind === "play") return cardText(card) + " \u2192 " + pileName(absPile(p, action));
    if (kind === "fill") return cardText(card) + " \u2192 an empty place";
    if (kind === "flip") return "turn up stock " + (a.stock + 1);
    if (kind === "slap") return "slap " + pileName(absPile(p, action));
    return "waiting";
  }

  function renderHand(p, snap) {
    // the move in flight at the time shown: from the moves (a decision made at this very clock is
    // in the next snapshot only), with its decision and landing times
    const el = $("hand" + p);
    const m = moveAt(p, S.t);
    if (!m) {
      el.className = "hand";
      el.innerHTML = snap.phase === "over" ? "" : '<span class="free">hand free</span>';
      return;
    }
    const lands = m.lands_ms !== undefined ? m.lands_ms : m.end_ms;
    const frac = Math.min(1, Math.max(0, (S.t - m.start_ms) / Math.max(1, lands - m.start_ms)));
    el.className = "hand" + (m.kind === "wait" ? " waiting" : "");
    el.textContent = "";
    if (m.card >= 0) el.appendChild(cardEl(m.card, true, "small"));
    else {
      const ghost = document.createElement("div");
      ghost.className = "ghost";
      ghost.textContent = m.kind === "wait" ? "\u2026" : m.kind === "slap" ? "SLAP" : "FLIP";
      el.appendChild(ghost);
    }
    const text = document.createElement("div");
    text.className = "move-text";
    text.innerHTML = '<div class="what">' + esc(moveText(p, m.action, m.card)) + "</div>" +
      '<div class="when">decided ' + fmtClock(m.start_ms) + ", lands " + fmtClock(lands) +
      " (in " + fmtMs(Math.max(0, lands - S.t)) + ")</div>" +
      '<div class="bar"><i style="width:' + (frac * 100).toFixed(1) + '%"></i></div>';
    el.appendChild(text);
  }

  function renderTargets() {
    const targets = [[], []];
    for (let p = 0; p < 2; p++) {
      const m = moveAt(p, S.t);
      if (m && m.kind === "play") targets[m.pile].push(p);
    }
    for (let c = 0; c < 2; c++) {
      const el = $("pile" + c);
      el.classList.toggle("target-p0", targets[c].includes(0));
      el.classList.toggle("target-p1", targets[c].includes(1));
      el.classList.toggle("race", targets[c].length === 2);
    }
  }

  function renderSeat(p, snap) {
    const seat = $("seat" + p);
    const stock = snap.stocks[p].reduce((n, place) => n + place.length, 0);
    const spit = snap.spit[p].length;
    let counts = "stock <b>" + stock + "</b> \u00b7 spit <b>" + spit + "</b> \u00b7 held <b>" + (stock + spit) + "</b>";
    if (REC.config.scoring === "points") counts += " \u00b7 score <b>" + snap.scores[p] + "</b>";
    seat.querySelector(".counts").innerHTML = counts;
  }

  function flash(el, cls) {
    el.classList.remove(cls);
    void el.offsetWidth; // restart the animation
    el.classList.add(cls);
  }

  function showEvents(fromFrame, toFrame) {
    // flashes for the last step only, the banner for the most important mark passed
    const step = REC.steps[toFrame - 1];
    if (step) {
      step.events.forEach((ev) => {
        if (ev.type === "play") flash($("pile" + ev.pile), "flash-p" + ev.player);
        if (ev.type === "spit") flash($("pile" + ev.pile), "flash-spit");
        if (ev.type === "bounce") {
          const stock = VIEW.actions[ev.action].stock;
          const place = $("places" + ev.player).children[stock];
          if (place) flash(place, "bounce");
        }
      });
    }
    let best = null;
    for (let f = Math.max(fromFrame + 1, toFrame - 40); f <= toFrame; f++) {
      (MARKS_AT.get(f) || []).forEach((m) => {
        if (m.clock_ms < S.t - 1500) return; // passed a while ago (a jump): not news
        if (!best || PRIORITY[m.kind] >= PRIORITY[best.kind]) best = m;
      });
    }
    if (best) {
      const banner = $("banner");
      banner.className = best.kind;
      banner.textContent = best.text;
      void banner.offsetWidth;
      banner.classList.add("show");
    }
  }

  // --- the event log -----------------------------------------------------------------------------
  function eventHtml(ev) {
    const p = ev.player;
    switch (ev.type) {
      case "play": return who(p) + " plays " + cardText(ev.card) + " on " + esc(pileName(ev.pile));
      case "bounce": {
        const m = MOVES[p].find((x) => x.end_ms === ev.clock_ms && x.outcome === "bounce");
        const race = m && m.race_ms !== undefined
          ? " \u2014 lost the race to " + cardText(m.race_card) + " by " + fmtMs(m.race_ms) : "";
        return who(p) + "'s " + cardText(ev.card) + " bounces off " + esc(pileName(ev.pile)) + race;
      }
      case "fill": return who(p) + " moves " + cardText(ev.card) + " to an empty place";
      case "flip": return who(p) + " turns up stock " + (VIEW.actions[ev.action].stock + 1);
      case "spit": return who(p) + " spits " + cardText(ev.card) + " (" + esc(VIEW.spit_reasons[ev.value] || "spit") + ")";
      case "slap": return who(p) + " slaps first and takes " + esc(pileName(ev.pile));
      case "round_end": return "round over" + (p >= 0 ? ": " + who(p) + (ev.value === VIEW.round_end_emptied
        ? " emptied its stocks" : " counts as first") : ": stall-out");
      case "game_end": return "game over: " + (ev.value === VIEW.game_end_truncated ? "truncated"
        : p >= 0 ? who(p) + " wins" : "a draw");
      case "illegal": return who(p) + " sent an illegal move (" + esc(VIEW.actions[ev.action].name) + ")";
      default: return esc(ev.type);
    }
  }

  function renderLog() {
    const log = $("log");
    log.textContent = "";
    let shown = 0;
    for (let k = S.frame - 1; k >= 0 && shown < 11; k--) {
      const evs = REC.steps[k].events;
      for (let i = evs.length - 1; i >= 0 && shown < 11; i--) {
        const ev = evs[i];
        const li = document.createElement("li");
        li.className = ev.type + (k === S.frame - 1 ? " now" : "");
        if (ev.type === "bounce") {
          const m = MOVES[ev.player].find((x) => x.end_ms === ev.clock_ms && x.outcome === "bounce");
          if (m && m.race_ms !== undefined) li.classList.add("race");
        }
        li.innerHTML = '<span class="t">' + fmtClock(ev.clock_ms) + "</span>" + eventHtml(ev);
        li.dataset.frame = k + 1;
        li.addEventListener("click", () => { pause(); goto(k + 1); });
        log.appendChild(li);
        shown++;
      }
    }
    if (!shown) log.innerHTML = "<li>game start: both players spit</li>";
  }

  // --- canvases ----------------------------------------------------------------------------------
  let overviewBase = null;
  function sizeCanvas(cv) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(200, cv.clientWidth);
    const h = parseInt(cv.getAttribute("height"), 10);
    if (cv.width !== Math.round(w * dpr)) {
      cv.width = Math.round(w * dpr);
      cv.height = Math.round(h * dpr);
      cv.style.height = h + "px";
    }
    const ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { ctx, w, h };
  }

  function niceStep(span, px) {
    const target = span / Math.max(1, px / 90);
    const steps = [100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000];
    return steps.find((s) => s >= target) || 600000;
  }

  function drawOverviewBase() {
    const cv = $("overview");
    const { w, h } = sizeCanvas(cv);
    const off = document.createElement("canvas");
    const dpr = window.devicePixelRatio || 1;
    off.width = cv.width; off.height = cv.height;
    const ctx = off.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const X = (t) => GUTTER + (T_END > 0 ? (t / T_END) * (w - GUTTER - 2) : 0);
    const lane = [52, 16]; // y of player 0 (bottom) and player 1 (top) lanes, 18 px tall
    ctx.fillStyle = "#101c15";
    ctx.fillRect(0, 0, w, h);
    ctx.font = "10px system-ui, sans-serif";
    for (let p = 0; p < 2; p++) {
      ctx.fillStyle = "rgba(255,255,255,.04)";
      ctx.fillRect(GUTTER, lane[p], w - GUTTER, 18);
      MOVES[p].forEach((m) => {
        const x0 = X(m.start_ms), x1 = Math.max(X(m.end_ms), x0 + 0.6);
        if (m.kind === "wait") { ctx.fillStyle = "rgba(120,150,132,.35)"; ctx.fillRect(x0, lane[p] + 12, x1 - x0, 6); return; }
        if (m.outcome === "play") { ctx.fillStyle = COLORS[p]; ctx.fillRect(X(m.end_ms) - 0.5, lane[p], 1.2, 12); }
        else if (m.outcome === "fill" || m.outcome === "flip") { ctx.fillStyle = KIND_COLORS[m.outcome]; ctx.fillRect(X(m.end_ms) - 0.5, lane[p] + 3, 1.2, 9); }
      });
    }
    // rounds, spits, slaps, races
    let round = 1;
    VIEW.marks.forEach((m) => {
      const x = X(m.clock_ms);
      if (m.kind === "spit") { ctx.fillStyle = "#64b5f6"; ctx.fillRect(x - 0.5, 38, 1.5, 11); }
      else if (m.kind === "round_end" || m.kind === "game_end") {
        ctx.fillStyle = "rgba(250,250,250,.85)"; ctx.fillRect(x - 0.5, 12, 1.5, 60);
        if (m.kind === "round_end") {
          ctx.fillStyle = "#dfe9e2"; ctx.fillText("R" + round, x + 3, 10); round++;
        }
      } else if (m.kind === "slap") {
        ctx.fillStyle = "#ffd54f"; ctx.beginPath();
        ctx.moveTo(x, 37); ctx.lineTo(x + 5, 43); ctx.lineTo(x, 49); ctx.lineTo(x - 5, 43); ctx.closePath(); ctx.fill();
      } else if (m.kind === "race" || m.kind === "bounce") {
        const y = m.player === 1 ? lane[1] + 18 : lane[0];
        ctx.fillStyle = m.kind === "race" ? "#ff5252" : "#ff8a80";
        ctx.beginPath();
        if (m.player === 1) { ctx.moveTo(x - 3.5, y + 6); ctx.lineTo(x + 3.5, y + 6); ctx.lineTo(x, y); }
        else { ctx.moveTo(x - 3.5, y - 6); ctx.lineTo(x + 3.5, y - 6); ctx.lineTo(x, y); }
        ctx.closePath(); ctx.fill();
      }
    });
    // time axis
    const step = niceStep(T_END, w);
    ctx.fillStyle = "#7f9a8a";
    for (let t = 0; t <= T_END; t += step) {
      const x = X(t);
      ctx.fillRect(x, 73, 1, 4);
      const label = step < 1000 ? (t / 1000).toFixed(1) + "s" : fmtClock(t).replace(/\.\d+$/, "");
      if (x < w - 30) ctx.fillText(label, x + 2, 85);
    }
    nameGutter(ctx, lane[1] + 13, lane[0] + 13);
    overviewBase = off;
  }

  function drawOverview() {
    const cv = $("overview");
    if (!overviewBase || overviewBase.width !== Math.round(Math.max(200, cv.clientWidth) * (window.devicePixelRatio || 1))) drawOverviewBase();
    const { ctx, w, h } = sizeCanvas(cv);
    ctx.save();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(overviewBase, 0, 0);
    ctx.restore();
    const x = GUTTER + (T_END > 0 ? (S.t / T_END) * (w - GUTTER - 2) : 0);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(x - 1, 0, 2, h - 14);
    ctx.beginPath(); ctx.moveTo(x - 5, 0); ctx.lineTo(x + 5, 0); ctx.lineTo(x, 6); ctx.closePath(); ctx.fill();
  }

  function drawLanes() {
    const { ctx, w, h } = sizeCanvas($("lanes"));
    const before = 2800, after = 1200;
    const t0 = S.t - before, t1 = S.t + after;
    const X = (t) => GUTTER + ((t - t0) / (t1 - t0)) * (w - GUTTER);
    const lane = [60, 10]; // 38 px tall lanes
    ctx.fillStyle = "#101c15";
    ctx.fillRect(0, 0, w, h);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (let p = 0; p < 2; p++) {
      ctx.fillStyle = "rgba(255,255,255,.04)";
      ctx.fillRect(GUTTER, lane[p], w - GUTTER, 38);
      for (const m of MOVES[p]) {
        if (m.end_ms < t0 || m.start_ms > t1) continue;
        const x0 = X(m.start_ms), x1 = Math.max(X(m.end_ms), x0 + 2);
        const y = lane[p] + 6, hh = 26;
        let fill = m.kind === "play" ? COLORS[p] : KIND_COLORS[m.kind] || "#777";
        if (m.outcome === "cancelled") fill = "#55645b";
        ctx.globalAlpha = m.kind === "wait" ? 0.9 : 0.85;
        ctx.fillStyle = fill;
        if (m.kind === "wait") ctx.fillRect(x0, y + 9, x1 - x0 - 1, 8);
        else ctx.fillRect(x0, y, x1 - x0 - 1, hh);
        ctx.globalAlpha = 1;
        if (m.outcome === "bounce") {
          ctx.strokeStyle = "#ff5252"; ctx.lineWidth = 2;
          ctx.strokeRect(x0 + 1, y + 1, x1 - x0 - 3, hh - 2);
          ctx.beginPath(); ctx.moveTo(x1 - 9, y + 8); ctx.lineTo(x1 - 3, y + 18); ctx.moveTo(x1 - 3, y + 8); ctx.lineTo(x1 - 9, y + 18); ctx.stroke();
          if (m.race_ms !== undefined) {
            const xr = X(m.end_ms - m.race_ms);
            const yb = p === 1 ? y + hh + 4 : y - 4;
            ctx.strokeStyle = "#ff5252"; ctx.lineWidth = 1.5;
            ctx.beginPath(); ctx.moveTo(xr, yb); ctx.lineTo(x1, yb); ctx.stroke();
            ctx.fillStyle = "#ff8a80";
            ctx.fillText("lost by " + m.race_ms + " ms", Math.min(xr, x1 - 70), p === 1 ? yb + 8 : yb - 7);
          }
        }
        if (m.kind !== "wait" && x1 - x0 > 44) {
          // the piles are named as everywhere on the page: "<player>'s pile"
          let label = m.kind === "play" ? cardText(m.card) + " \u2192 " + pileName(m.pile)
            : m.kind === "fill" ? "fill " + cardText(m.card)
            : m.kind === "slap" ? "slap " + pileName(m.pile) : m.kind;
          if (m.outcome === "cancelled") label += " (cancelled)";
          ctx.fillStyle = "#0c130f";
          ctx.save(); ctx.beginPath(); ctx.rect(x0, y, x1 - x0 - 1, hh); ctx.clip();
          ctx.fillText(label, x0 + 5, y + hh / 2 + 1);
          ctx.restore();
        }
      }
    }
    // marks in the window
    for (const m of VIEW.marks) {
      if (m.clock_ms < t0 || m.clock_ms > t1 || m.kind === "race" || m.kind === "bounce") continue;
      const x = X(m.clock_ms);
      ctx.fillStyle = m.kind === "spit" ? "#64b5f6" : m.kind === "slap" ? "#ffd54f" : "#fafafa";
      ctx.fillRect(x - 0.5, 2, 1.5, h - 18);
    }
    // axis and now
    ctx.fillStyle = "#7f9a8a";
    ctx.textBaseline = "alphabetic";
    const step = 500;
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      if (t < 0) continue;
      const x = X(t);
      ctx.fillRect(x, h - 14, 1, 4);
      ctx.fillText((t / 1000).toFixed(1) + "s", x + 2, h - 2);
    }
    const xn = X(S.t);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(xn - 1, 0, 2, h - 14);
    ctx.fillStyle = "#101c15";
    ctx.fillRect(0, 0, GUTTER, h);
    nameGutter(ctx, lane[1] + 23, lane[0] + 23);
  }

  function nameGutter(ctx, y1, y0) {
    ctx.font = "600 11px system-ui, sans-serif";
    ctx.textBaseline = "alphabetic";
    [[0, y0], [1, y1]].forEach(([p, y]) => {
      ctx.fillStyle = COLORS[p];
      ctx.fillRect(4, y - 8, 8, 8);
      ctx.fillStyle = "#cfdcd3";
      let name = NAMES[p];
      while (name.length > 3 && ctx.measureText(name).width > GUTTER - 22) name = name.slice(0, -2) + "\u2026";
      ctx.fillText(name, 16, y);
    });
  }

  // --- frame changes -----------------------------------------------------------------------------
  function moveKey(p) {
    const m = moveAt(p, S.t);
    return m ? m.start_ms + ":" + m.action : "";
  }

  function renderFrame(prev) {
    const snap = FRAMES[S.frame];
    for (let p = 0; p < 2; p++) {
      renderPlaces(p, snap);
      S.moveKeys[p] = moveKey(p);
      renderSpit(p, snap);
      renderSeat(p, snap);
    }
    renderPile(0, snap);
    renderPile(1, snap);
    if (prev >= 0 && S.frame > prev) showEvents(prev, S.frame);
    else if (S.frame !== prev) { $("banner").className = ""; $("banner").textContent = ""; }
    renderLog();
    document.body.dataset.frame = S.frame;
    $("scrub").value = S.frame;
    $("round").textContent = snap.phase === "over" ? plural(snap.round, "round") + " played" : "round " + (snap.round + 1);
    $("phase").textContent = snap.phase === "slap" ? "SLAP!" : snap.phase;
    $("stepinfo").textContent = "step " + S.frame + " / " + (N - 1);
  }

  function renderTime() {
    const snap = FRAMES[S.frame];
    for (let p = 0; p < 2; p++) {
      if (moveKey(p) !== S.moveKeys[p]) { // a new move in flight: lift its card
        S.moveKeys[p] = moveKey(p);
        renderPlaces(p, snap);
      }
      renderHand(p, snap);
    }
    renderTargets();
    $("clock").textContent = fmtClock(S.t);
    drawOverview();
    drawLanes();
  }

  function goto(frame, t) {
    frame = Math.max(0, Math.min(N - 1, frame));
    S.t = t === undefined ? CLOCKS[frame] : Math.max(CLOCKS[frame], Math.min(t, T_END));
    const prev = S.frame;
    S.frame = frame;
    if (frame !== prev) renderFrame(prev);
    renderTime();
  }
  const seekTime = (t) => goto(frameAt(t), t);

  // --- playing -----------------------------------------------------------------------------------
  function setPlaying(on) {
    S.playing = on && S.frame < N - 1;
    $("btn-play").innerHTML = S.playing ? ICON_PAUSE : ICON_PLAY;
    S.lastWall = null;
    if (S.playing) requestAnimationFrame(tick);
  }
  const pause = () => setPlaying(false);
  function tick(wall) {
    if (!S.playing) return;
    if (S.lastWall !== null) {
      const t = Math.min(T_END, S.t + (wall - S.lastWall) * SPEEDS[S.speed]);
      goto(frameAt(t), t);
      if (t >= T_END) { setPlaying(false); return; }
    }
    S.lastWall = wall;
    requestAnimationFrame(tick);
  }
  function setSpeed(i) {
    S.speed = Math.max(0, Math.min(SPEEDS.length - 1, i));
    $("speed").value = S.speed;
  }
  function jumpMark(dir) {
    pause();
    const now = S.frame;
    const marks = dir > 0 ? NOTABLE.filter((m) => m.step > now) : NOTABLE.filter((m) => m.step < now).reverse();
    if (marks.length) goto(marks[0].step);
    else goto(dir > 0 ? N - 1 : 0);
  }

  // --- set-up ------------------------------------------------------------------------------------
  function init() {
    const lat = REC.players.map((p) => p.latency || "");
    document.querySelectorAll(".seat").forEach((seat) => {
      const p = Number(seat.dataset.player);
      seat.querySelector(".name").textContent = NAMES[p];
      seat.querySelector(".latency").textContent = "seat " + p + (lat[p] ? " \u00b7 " + lat[p] + " latency" : "");
    });
    $("matchup").innerHTML = '<b class="p0">' + esc(NAMES[0]) + "</b> vs " + '<b class="p1">' + esc(NAMES[1]) + "</b>" +
      " \u00b7 seed " + REC.seed + ", game " + REC.game_id;
    const o = REC.outcome;
    $("result").textContent = o.result + " \u00b7 " + plural(o.rounds, "round") + " \u00b7 " + fmtClock(o.clock_ms) +
      " of game time \u00b7 " + plural(o.steps, "step");
    const cfg = REC.config;
    $("footer").textContent = REC.created_by + " \u00b7 replay schema " + REC.schema_version + " \u00b7 wait " +
      cfg.wait_ms + " ms \u00b7 spit delay " + cfg.spit_delay_ms + " ms \u00b7 scoring " + cfg.scoring +
      " \u00b7 ranks " + (cfg.wrap_ranks ? "wrap (A\u2013K and A\u20132)" : "Ace high");
    const speed = $("speed");
    SPEEDS.forEach((s, i) => {
      const o = document.createElement("option");
      o.value = i; o.textContent = s + "\u00d7";
      speed.appendChild(o);
    });
    setSpeed(S.speed);
    speed.addEventListener("change", () => setSpeed(Number(speed.value)));
    const scrub = $("scrub");
    scrub.max = N - 1;
    scrub.addEventListener("input", () => { pause(); goto(Number(scrub.value)); });
    $("btn-start").addEventListener("click", () => { pause(); goto(0); });
    $("btn-end").addEventListener("click", () => { pause(); goto(N - 1); });
    $("btn-prev").addEventListener("click", () => { pause(); goto(S.frame - 1); });
    $("btn-next").addEventListener("click", () => { pause(); goto(S.frame + 1); });
    $("btn-prev-mark").addEventListener("click", () => jumpMark(-1));
    $("btn-next-mark").addEventListener("click", () => jumpMark(1));
    $("btn-play").addEventListener("click", () => setPlaying(!S.playing));
    $("hidden").addEventListener("change", (e) => { S.hidden = e.target.checked; const f = S.frame; S.frame = -1; goto(f, S.t); });
    const ov = $("overview");
    const seekAt = (e) => {
      const r = ov.getBoundingClientRect();
      seekTime(Math.max(0, Math.min(1, (e.clientX - r.left - GUTTER) / (r.width - GUTTER - 2))) * T_END);
    };
    ov.addEventListener("mousedown", (e) => { pause(); seekAt(e); });
    ov.addEventListener("mousemove", (e) => { if (e.buttons & 1) seekAt(e); });
    document.addEventListener("keydown", (e) => {
      if (e.target && (e.target.tagName === "SELECT" || (e.target.tagName === "INPUT" && e.target.type !== "checkbox" && e.target.type !== "range"))) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.target && e.target.tagName === "BUTTON" && (e.key === " " || e.key === "Enter")) return;
      const keys = {
        " ": () => setPlaying(!S.playing), k: () => setPlaying(!S.playing),
        ArrowRight: () => { pause(); goto(S.frame + 1); }, ArrowLeft: () => { pause(); goto(S.frame - 1); },
        l: () => { pause(); goto(S.frame + 1); }, j: () => { pause(); goto(S.frame - 1); },
        Home: () => { pause(); goto(0); }, End: () => { pause(); goto(N - 1); },
        "]": () => jumpMark(1), "[": () => jumpMark(-1),
        "+": () => setSpeed(S.speed + 1), "=": () => setSpeed(S.speed + 1), "-": () => setSpeed(S.speed - 1),
        h: () => $("hidden").click(), H: () => $("hidden").click(),
      };
      const f = keys[e.key];
      if (f) { e.preventDefault(); f(); }
    });
    window.addEventListener("resize", () => { overviewBase = null; renderTime(); });
    goto(0);
    document.body.dataset.frames = N;
    document.body.dataset.ready = "1";
  }
  init();
})();
