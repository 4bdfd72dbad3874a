// spit-env replay viewer: draws the recorded snapshots of one game with the shared table drawing
// (table.js). It knows no rule of Spit: the table is the snapshot of the step shown, moves / races
// / marks come from the page data.
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
  const { COLORS, KIND_COLORS, GUTTER, fmtClock, esc, plural, sizeCanvas } = window.SpitTable;
  const $ = (id) => document.getElementById(id);
  const icon = (d) => '<svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true"><path fill="currentColor" d="' + d + '"/></svg>';
  const ICON_PLAY = icon("M7 4v16l13-8z");
  const ICON_PAUSE = icon("M6 4h4.5v16H6zM13.5 4H18v16h-4.5z");

  const S = { frame: -1, t: 0, playing: false, speed: 3, hidden: false, lastWall: null, moveKeys: ["", ""] };
  const T = window.SpitTable.create({ view: VIEW, names: () => NAMES, hidden: () => S.hidden, scoring: REC.config.scoring });

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
  function frameAt(t) { // the last frame whose clock is <= t
    let lo = 0, hi = N - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (CLOCKS[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  // --- the table (drawn by table.js) ------------------------------------------------------------
  function renderPlaces(p, snap) {
    const m = moveAt(p, S.t);
    T.renderPlaces(p, snap, m && (m.kind === "play" || m.kind === "fill") ? m.stock : -1);
  }
  const renderHand = (p, snap) => T.renderHand(p, snap, moveAt(p, S.t), S.t);
  const renderTargets = () => T.renderTargets([moveAt(0, S.t), moveAt(1, S.t)]);

  function showEvents(fromFrame, toFrame) {
    // flashes for the last step only, the banner for the most important mark passed
    const step = REC.steps[toFrame - 1];
    if (step) T.flashEvents(step.events);
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
  function raceOf(ev) { // the move that lost a race at this bounce, or null
    const m = MOVES[ev.player].find((x) => x.end_ms === ev.clock_ms && x.outcome === "bounce");
    return m && m.race_ms !== undefined ? m : null;
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
        if (ev.type === "bounce" && raceOf(ev)) li.classList.add("race");
        li.innerHTML = '<span class="t">' + fmtClock(ev.clock_ms) + "</span>" + T.eventHtml(ev, ev.type === "bounce" ? raceOf(ev) : null);
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
    T.nameGutter(ctx, lane[1] + 13, lane[0] + 13);
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

  const drawLanes = () => T.drawLanes($("lanes"), MOVES, VIEW.marks, S.t);

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
      T.renderSpit(p, snap);
      T.renderSeat(p, snap);
    }
    T.renderPile(0, snap);
    T.renderPile(1, snap);
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
