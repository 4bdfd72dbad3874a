// spit-env table drawing, shared by the replay page and the live game's page: cards, stock
// places, centre piles, spit cards, hands (moves in flight), the lanes timeline and the event log.
// It knows no rule of Spit: it draws snapshots and moves that it is given.
window.SpitTable = (() => {
  "use strict";
  const COLORS = ["#4fc3f7", "#ffb74d"];
  const KIND_COLORS = { fill: "#ba68c8", flip: "#9575cd", slap: "#ffd54f", wait: "#3f5a4b" };
  const GUTTER = 92; // px left of the timelines, for the players' names
  const pad = (n, w) => String(n).padStart(w, "0");
  function fmtClock(ms) {
    ms = Math.max(0, Math.round(ms));
    return Math.floor(ms / 60000) + ":" + pad(Math.floor(ms / 1000) % 60, 2) + "." + pad(ms % 1000, 3);
  }
  const fmtMs = (ms) => Math.round(ms).toLocaleString("en-US") + " ms";
  const esc = (s) => String(s).replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]));
  const plural = (n, one) => n + " " + one + (n === 1 ? "" : "s");

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

  // opts: view (cards, actions, kinds, spit_reasons, round_end_emptied, game_end_truncated),
  // names (seat names, read at each call), slot (seat -> the element suffix it is drawn in:
  // [0, 1] puts seat 0 at the bottom), hidden () -> show face-down cards, scoring, and optionally
  // pileName (c -> the pile's name) and you (the seat spoken to in the events' words).
  function create(opts) {
    const VIEW = opts.view;
    const KINDS = VIEW.kinds;
    const slot = opts.slot || [0, 1];
    const names = () => opts.names();
    const el = (kind, p) => document.getElementById(kind + slot[p]);
    const cardText = (id) => (id >= 0 ? VIEW.cards[id].label : "?");
    const pileName = (c) => (opts.pileName ? opts.pileName(c) : names()[c] + "'s pile");
    const who = (p) => '<span class="p' + slot[p] + '">' + esc(names()[p]) + "</span>";
    const cssNum = (name, dflt) => parseFloat(getComputedStyle(document.documentElement).getPropertyValue(name)) || dflt;
    function absPile(player, action) {
      const c = VIEW.actions[action].pile;
      return c < 0 ? -1 : c === 0 ? player : 1 - player;
    }

    function cardEl(id, faceUp, extra) {
      const e = document.createElement("div");
      e.dataset.card = id;
      if (!faceUp && !opts.hidden()) {
        e.className = "card face-down" + (extra ? " " + extra : "");
        e.title = "face down";
        return e;
      }
      const c = VIEW.cards[id];
      e.className = "card" + (c.red ? " red" : "") + (faceUp ? "" : " revealed") + (extra ? " " + extra : "");
      e.title = c.label + (faceUp ? "" : " (face down)");
      const corner = '<span class="r">' + c.rank + '</span><span class="s">' + c.suit + "</span>";
      e.innerHTML = '<div class="corner">' + corner + '</div><div class="pip">' + c.suit +
        '</div><div class="corner br">' + corner + "</div>";
      return e;
    }

    // leaving: the stock place whose card is in flight (lifted), or -1
    function renderPlaces(p, snap, leaving) {
      const box = el("places", p);
      box.textContent = "";
      const gap = cssNum("--gap", 13), h = cssNum("--card-h", 84);
      const bottom = slot[p] === 0; // cards underneath peek out away from the centre
      snap.stocks[p].forEach((place, s) => {
        const e = document.createElement("div");
        e.className = "place" + (place.length ? "" : " empty") + (s === leaving ? " leaving" : "");
        e.dataset.player = p;
        e.dataset.place = s;
        e.dataset.cards = place.map((x) => x[0]).join(",");
        e.dataset.up = place.map((x) => (x[1] ? 1 : 0)).join(",");
        const n = place.length;
        place.forEach(([id, up], k) => {
          const card = cardEl(id, up, k === n - 1 ? "top" : "");
          const depth = (n - 1 - k) * gap;
          card.style.top = (bottom ? depth : 4 * gap - depth) + "px";
          card.style.zIndex = k + 1;
          e.appendChild(card);
        });
        if (!n) e.style.setProperty("--empty-top", (bottom ? 0 : 4 * gap) + "px");
        e.title = "stock " + (s + 1) + ": " + plural(n, "card");
        e.style.height = (h + 4 * gap) + "px";
        box.appendChild(e);
      });
    }

    function renderPile(c, snap) {
      const e = el("pile", c);
      const pile = snap.centre[c];
      e.textContent = "";
      e.dataset.cards = pile.join(",");
      e.classList.toggle("none", pile.length === 0);
      if (pile.length >= 3) e.appendChild(cardEl(pile[pile.length - 3], true, "under2"));
      if (pile.length >= 2) e.appendChild(cardEl(pile[pile.length - 2], true, "under"));
      if (pile.length >= 1) e.appendChild(cardEl(pile[pile.length - 1], true, "top"));
      el("pile", c).parentElement.querySelector(".pile-label").textContent = pile.length
        ? pileName(c) + " \u00b7 " + plural(pile.length, "card") : names()[c] + ": no pile";
    }

    function renderSpit(p, snap) {
      const e = el("spit", p);
      const spit = snap.spit[p];
      e.textContent = "";
      e.dataset.count = spit.length;
      e.dataset.cards = spit.join(",");
      if (!spit.length) {
        e.innerHTML = '<div class="none">no spit cards</div>';
      } else {
        const shown = Math.min(spit.length, 4);
        for (let k = shown - 1; k >= 0; k--) {
          const card = cardEl(spit[k], false, k === 0 ? "next" : "");
          card.style.left = (20 + (k - (shown - 1) / 2) * 6 * (slot[p] === 0 ? -1 : 1)) + "px";
          card.style.top = (k * 2) + "px";
          e.appendChild(card);
        }
      }
      const count = document.createElement("div");
      count.className = "count";
      count.textContent = plural(spit.length, "spit card");
      e.appendChild(count);
    }

    function renderSeat(p, snap) {
      const stock = snap.stocks[p].reduce((n, place) => n + place.length, 0);
      const spit = snap.spit[p].length;
      let counts = "stock <b>" + stock + "</b> \u00b7 spit <b>" + spit + "</b> \u00b7 held <b>" + (stock + spit) + "</b>";
      if (opts.scoring === "points") counts += " \u00b7 score <b>" + snap.scores[p] + "</b>";
      el("seat", p).querySelector(".counts").innerHTML = counts;
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

    // m: the move in flight at time t ({start_ms, lands_ms or end_ms, action, card, kind}), or null
    function renderHand(p, snap, m, t) {
      const e = el("hand", p);
      if (!m) {
        e.className = "hand";
        e.innerHTML = snap.phase === "over" ? "" : '<span class="free">hand free</span>';
        return;
      }
      const lands = m.lands_ms !== undefined ? m.lands_ms : m.end_ms;
      const frac = Math.min(1, Math.max(0, (t - m.start_ms) / Math.max(1, lands - m.start_ms)));
      e.className = "hand" + (m.kind === "wait" ? " waiting" : "");
      e.textContent = "";
      if (m.card >= 0) e.appendChild(cardEl(m.card, true, "small"));
      else {
        const ghost = document.createElement("div");
        ghost.className = "ghost";
        ghost.textContent = m.kind === "wait" ? "\u2026" : m.kind === "slap" ? "SLAP" : "FLIP";
        e.appendChild(ghost);
      }
      const text = document.createElement("div");
      text.className = "move-text";
      text.innerHTML = '<div class="what">' + esc(moveText(p, m.action, m.card)) + "</div>" +
        '<div class="when">decided ' + fmtClock(m.start_ms) + ", lands " + fmtClock(lands) +
        " (in " + fmtMs(Math.max(0, lands - t)) + ")</div>" +
        '<div class="bar"><i style="width:' + (frac * 100).toFixed(1) + '%"></i></div>';
      e.appendChild(text);
    }

    // now: [move of seat 0, move of seat 1] in flight (or null): the piles they go for
    function renderTargets(now) {
      const targets = [[], []];
      for (let p = 0; p < 2; p++) {
        const m = now[p];
        if (m && m.kind === "play" && m.pile >= 0) targets[m.pile].push(p);
      }
      for (let c = 0; c < 2; c++) {
        const e = el("pile", c);
        e.classList.toggle("target-p0", targets[c].includes(slot.indexOf(0)));
        e.classList.toggle("target-p1", targets[c].includes(slot.indexOf(1)));
        e.classList.toggle("race", targets[c].length === 2);
      }
    }

    function flash(e, cls) {
      e.classList.remove(cls);
      void e.offsetWidth; // restart the animation
      e.classList.add(cls);
    }

    // the table's flashes for one step's events
    function flashEvents(events) {
      events.forEach((ev) => {
        if (ev.type === "play") flash(el("pile", ev.pile), "flash-p" + slot[ev.player]);
        if (ev.type === "spit") flash(el("pile", ev.pile), "flash-spit");
        if (ev.type === "bounce") {
          const place = el("places", ev.player).children[VIEW.actions[ev.action].stock];
          if (place) flash(place, "bounce");
        }
      });
    }

    // an event in words; race: the move that lost a race at this bounce (with race_ms), or null.
    // The seat opts.you (if any) is spoken to: "you play", "your 7\u2665".
    function eventHtml(ev, race) {
      const p = ev.player;
      const you = opts.you === p;
      const does = (third, second) => who(p) + " " + (you ? second : third);
      const whose = you ? '<span class="p' + slot[p] + '">your</span>' : who(p) + "'s";
      switch (ev.type) {
        case "play": return does("plays", "play") + " " + cardText(ev.card) + " on " + esc(pileName(ev.pile));
        case "bounce": {
          const lost = race ? " \u2014 lost the race to " + cardText(race.race_card) + " by " + fmtMs(race.race_ms) : "";
          return whose + " " + cardText(ev.card) + " bounces off " + esc(pileName(ev.pile)) + lost;
        }
        case "fill": return does("moves", "move") + " " + cardText(ev.card) + " to an empty place";
        case "flip": return does("turns", "turn") + " up stock " + (VIEW.actions[ev.action].stock + 1);
        case "spit": return does("spits", "spit") + " " + cardText(ev.card) + " (" + esc(VIEW.spit_reasons[ev.value] || "spit") + ")";
        case "slap": return does("slaps", "slap") + " first and take" + (you ? " " : "s ") + esc(pileName(ev.pile));
        case "round_end": return "round over" + (p >= 0 ? ": " + who(p) + (ev.value === VIEW.round_end_emptied
          ? " emptied " + (you ? "your" : "its") + " stocks" : (you ? " count" : " counts") + " as first") : ": stall-out");
        case "game_end": return "game over: " + (ev.value === VIEW.game_end_truncated ? "truncated"
          : p >= 0 ? does("wins", "win") : "a draw");
        case "illegal": return who(p) + " sent an illegal move (" + esc(VIEW.actions[ev.action].name) + ")";
        default: return esc(ev.type);
      }
    }

    function nameGutter(ctx, y1, y0) {
      ctx.font = "600 11px system-ui, sans-serif";
      ctx.textBaseline = "alphabetic";
      [[0, y0], [1, y1]].forEach(([s, y]) => {
        const p = slot.indexOf(s);
        ctx.fillStyle = COLORS[s];
        ctx.fillRect(4, y - 8, 8, 8);
        ctx.fillStyle = "#cfdcd3";
        let name = names()[p];
        while (name.length > 3 && ctx.measureText(name).width > GUTTER - 22) name = name.slice(0, -2) + "\u2026";
        ctx.fillText(name, 16, y);
      });
    }

    // both hands around time t: moves[p] (each {start_ms, end_ms, kind, card, pile, outcome,
    // race_ms?}) from t - before to t + after, marks ({clock_ms, kind}) as lines
    function drawLanes(cv, moves, marks, t, before, after) {
      const { ctx, w, h } = sizeCanvas(cv);
      before = before === undefined ? 2800 : before;
      after = after === undefined ? 1200 : after;
      const t0 = t - before, t1 = t + after;
      const X = (x) => GUTTER + ((x - t0) / (t1 - t0)) * (w - GUTTER);
      const lane = [60, 10]; // 38 px tall lanes: the bottom seat's, the top seat's
      ctx.fillStyle = "#101c15";
      ctx.fillRect(0, 0, w, h);
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      for (let p = 0; p < 2; p++) {
        const s = slot[p];
        ctx.fillStyle = "rgba(255,255,255,.04)";
        ctx.fillRect(GUTTER, lane[s], w - GUTTER, 38);
        for (const m of moves[p]) {
          if (m.end_ms < t0 || m.start_ms > t1) continue;
          const x0 = X(m.start_ms), x1 = Math.max(X(m.end_ms), x0 + 2);
          const y = lane[s] + 6, hh = 26;
          let fill = m.kind === "play" ? COLORS[s] : KIND_COLORS[m.kind] || "#777";
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
              const yb = s === 1 ? y + hh + 4 : y - 4;
              ctx.strokeStyle = "#ff5252"; ctx.lineWidth = 1.5;
              ctx.beginPath(); ctx.moveTo(xr, yb); ctx.lineTo(x1, yb); ctx.stroke();
              ctx.fillStyle = "#ff8a80";
              ctx.fillText("lost by " + m.race_ms + " ms", Math.min(xr, x1 - 70), s === 1 ? yb + 8 : yb - 7);
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
      for (const m of marks) {
        if (m.clock_ms < t0 || m.clock_ms > t1 || m.kind === "race" || m.kind === "bounce") continue;
        const x = X(m.clock_ms);
        ctx.fillStyle = m.kind === "spit" ? "#64b5f6" : m.kind === "slap" ? "#ffd54f" : "#fafafa";
        ctx.fillRect(x - 0.5, 2, 1.5, h - 18);
      }
      ctx.fillStyle = "#7f9a8a";
      ctx.textBaseline = "alphabetic";
      const step = 500;
      for (let x = Math.ceil(t0 / step) * step; x <= t1; x += step) {
        if (x < 0) continue;
        ctx.fillRect(X(x), h - 14, 1, 4);
        ctx.fillText((x / 1000).toFixed(1) + "s", X(x) + 2, h - 2);
      }
      const xn = X(t);
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(xn - 1, 0, 2, h - 14);
      ctx.fillStyle = "#101c15";
      ctx.fillRect(0, 0, GUTTER, h);
      nameGutter(ctx, lane[1] + 23, lane[0] + 23);
    }

    return { cardEl, renderPlaces, renderPile, renderSpit, renderSeat, renderHand, renderTargets,
      flash, flashEvents, eventHtml, moveText, drawLanes, nameGutter, cardText, pileName, who, el };
  }

  return { create, fmtClock, fmtMs, esc, plural, sizeCanvas, COLORS, KIND_COLORS, GUTTER };
})();
