// The status page: state from the bot's feed (server-sent events), drawn with textContent
// only: names, chat and every other text from Lichess stay text, never HTML.
"use strict";

const CLOCK_TICK_MS = 100;   // the clocks are redrawn this often from the last state sent
const LOW_CLOCK_S = 10;      // below this a clock shows tenths and turns red
const EVAL_EDGE_CP = 600;    // the eval graph's top and bottom (+-6 pawns); beyond is clamped
const cards = new Map();     // game id -> {el, clocks, at, color}
let service = null;
let serviceAt = 0;

function text(el, value) { el.textContent = value == null ? "" : String(value); }

function item(list, value, cls) {
  const li = document.createElement("li");
  text(li, value);
  if (cls) li.className = cls;
  list.appendChild(li);
}

function arenaLine(t) {
  const parts = [t.name || t.id];
  if (t.rank) parts.push(`rank ${t.rank}`);
  if (t.score !== null) parts.push(`${t.score} points, ${t.games} games`);
  if (t.status === "started" && t.seconds_to_finish !== null) {
    parts.push(`${formatClock(t.seconds_to_finish)} left`);
  } else if (t.status === "created" && t.seconds_to_start !== null) {
    parts.push(`starts in ${formatClock(t.seconds_to_start)}`);
  } else {
    parts.push(t.status);
  }
  if (t.withdrawn) parts.push("withdrawn");
  if (t.problem) parts.push(t.problem);
  return parts.join(" · ");
}

function formatClock(s) {
  s = Math.max(0, s);
  if (s < LOW_CLOCK_S) return "0:" + s.toFixed(1).padStart(4, "0");
  const whole = Math.floor(s), h = Math.floor(whole / 3600);
  const m = Math.floor(whole % 3600 / 60), sec = String(whole % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

function formatCount(n) {
  if (n == null) return "";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(0) + "k";
  return String(n);
}

function formatBytes(n) { return n == null ? "-" : (n / 1048576).toFixed(0) + " MB"; }

function formatAge(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
}

function playerName(p) {
  return (p.title ? p.title + " " : "") + p.name + (p.rating ? ` (${p.rating})` : "");
}

function newCard(id) {
  const el = document.getElementById("card-template").content.firstElementChild.cloneNode(true);
  el.dataset.game = id;
  document.getElementById("games").appendChild(el);
  const entry = {el: el, clocks: null, at: 0, color: "white"};
  cards.set(id, entry);
  return entry;
}

function drawEval(el, evals) {
  const line = el.querySelector("svg.eval .line");
  if (!evals.length) { line.setAttribute("points", ""); line.dataset.points = "0"; return; }
  const last = Math.max(evals[evals.length - 1][0], 20);
  const points = evals.map(([ply, cp]) => {
    const y = 20 - 20 * Math.max(-1, Math.min(1, cp / EVAL_EDGE_CP));
    return `${(100 * ply / last).toFixed(2)},${y.toFixed(2)}`;
  });
  line.setAttribute("points", points.join(" "));
  line.dataset.points = String(evals.length);
}

function drawGame(game) {
  const entry = cards.get(game.id) || newCard(game.id);
  const el = entry.el;
  entry.color = game.color;
  entry.clocks = game.clocks;
  entry.at = performance.now();
  text(el.querySelector(".opponent"), "vs " + playerName(game.opponent));
  const link = el.querySelector(".game-link");
  text(link, game.id);
  link.href = game.url;
  text(el.querySelector(".meta"), `${game.time_control} ${game.variant} ` +
       `${game.rated ? "rated" : "casual"} · ${game.color}` +
       (game.strength ? ` · ${game.strength}` : ""));
  if (game.svg) {
    el.querySelector(".board img").src =
      "data:image/svg+xml;charset=utf-8," + encodeURIComponent(game.svg);
  }
  const s = game.search;
  text(el.querySelector(".depth"), s && s.depth != null ? "depth " + s.depth : "");
  text(el.querySelector(".eval-score"), s ? s.score : "");
  text(el.querySelector(".nps"), s && s.nps ? formatCount(s.nps) + " nodes/s" : "");
  text(el.querySelector(".pv"), s ? s.pv : "");
  drawEval(el, game.evals || []);
  const chat = el.querySelector(".chat");
  chat.replaceChildren();
  for (const line of game.chat || []) item(chat, `${line.user}: ${line.text}`);
  const result = el.querySelector(".result");
  if (game.finished) {
    el.classList.add("finished");
    result.hidden = false;
    text(result.querySelector(".score"), game.finished.score);
    text(result.querySelector(".outcome"), `${game.finished.result} (${game.finished.status})`);
    result.querySelector(".pgn").href = game.finished.pgn;
  }
  document.getElementById("no-games").hidden = cards.size > 0;
  tickClocks();
}

function tickClocks() {
  const now = performance.now();
  for (const entry of cards.values()) {
    if (!entry.clocks) continue;
    const elapsed = (now - entry.at) / 1000;
    const top = entry.color === "white" ? "black" : "white";
    for (const [side, cls] of [[top, ".clock.top"], [entry.color, ".clock.bottom"]]) {
      const el = entry.el.querySelector(cls);
      const running = entry.clocks.running === side;
      const s = entry.clocks[side + "_s"] - (running ? elapsed : 0);
      text(el, `${side} ${formatClock(s)}`);
      el.classList.toggle("running", running);
      el.classList.toggle("low", s < LOW_CLOCK_S);
    }
  }
  if (service) {
    const uptime = document.getElementById("uptime");
    if (uptime) text(uptime, formatAge(service.uptime_s + (now - serviceAt) / 1000));
  }
}

function fact(dl, label, value, id) {
  const dt = document.createElement("dt"), dd = document.createElement("dd");
  text(dt, label);
  text(dd, value);
  if (id) dd.id = id;
  dl.append(dt, dd);
}

function drawService(s) {
  service = s;
  serviceAt = performance.now();
  const dl = document.getElementById("facts");
  dl.replaceChildren();
  fact(dl, "version", s.version);
  fact(dl, "uptime", formatAge(s.uptime_s), "uptime");
  fact(dl, "event stream", `${s.event_stream} (${s.stream_reconnects} reconnects)`, "event-stream");
  fact(dl, "accepting", s.accepting ? "yes" : "no (stopping)");
  fact(dl, "games", `${s.games_in_progress} in progress, ${s.games_today} today, ` +
       `${s.games_finished} finished since start`);
  fact(dl, "bot games", s.bot_games_capped_until
       ? `capped until ${new Date(s.bot_games_capped_until * 1000).toLocaleString()}`
       : `Lichess allows ${s.bot_games_per_day} a day`);
  fact(dl, "requests", `${s.requests_last_minute} in the last minute (budget ` +
       `${s.requests_per_minute}/min), ${s.rate_limited} rate-limited`);
  // Moves go first: when they take the whole budget, PV lines are replaced unsent.
  fact(dl, "PV lines dropped for the budget", s.pv_lines_dropped);
  fact(dl, "paused", s.rate_limit_pauses.length
       ? s.rate_limit_pauses.map(p => `${p.kind} ${p.left_s}s`).join(", ") : "none");
  const mem = s.memory;
  const perGame = Object.entries(mem.per_game_bytes).map(([g, b]) => `${g} ${formatBytes(b)}`);
  fact(dl, "memory", `${formatBytes(mem.total_bytes)} in ${mem.processes} processes` +
       (perGame.length ? "; engines: " + perGame.join(", ") : ""));
  fact(dl, "engine restarts", s.engine_restarts);
  fact(dl, "moves", s.moves);
  const queue = document.getElementById("queue");
  queue.replaceChildren();
  for (const c of s.queue) item(queue, `${c.challenger} · ${c.description}`);
  if (!s.queue.length) item(queue, "empty", "quiet");
  const decided = document.getElementById("challenges");
  decided.replaceChildren();
  for (const c of s.challenges) {
    const when = new Date(c.at * 1000).toLocaleTimeString();
    item(decided, `${when} ${c.challenger} · ${c.description}: ${c.decision}` +
         (c.reason ? ` (${c.reason}: ${c.why})` : ""), c.decision);
  }
  const box = document.getElementById("tournaments-box");
  box.hidden = !s.tournaments.length;
  const tournaments = document.getElementById("tournaments");
  tournaments.replaceChildren();
  for (const t of s.tournaments) item(tournaments, arenaLine(t), t.problem ? "declined" : "");
  const warnings = document.getElementById("warnings");
  warnings.replaceChildren();
  for (const w of s.warnings) {
    item(warnings, `${new Date(w.at * 1000).toLocaleTimeString()} ${w.level} ${w.message}`);
  }
  if (!s.warnings.length) item(warnings, "none", "quiet");
}

function connect() {
  const feed = document.getElementById("feed");
  const source = new EventSource("events");
  source.addEventListener("open", () => { text(feed, "live"); feed.className = "feed on"; });
  source.addEventListener("error", () => {
    text(feed, "reconnecting…"); feed.className = "feed off";
  });
  source.addEventListener("hello", (e) => {
    const state = JSON.parse(e.data);
    for (const entry of cards.values()) entry.el.remove();
    cards.clear();
    for (const game of state.games) drawGame(game);
    if (state.service && state.service.version) drawService(state.service);
    document.getElementById("no-games").hidden = cards.size > 0;
  });
  source.addEventListener("game", (e) => drawGame(JSON.parse(e.data)));
  source.addEventListener("gone", (e) => {
    const id = JSON.parse(e.data).id;
    const entry = cards.get(id);
    if (entry) { entry.el.remove(); cards.delete(id); }
    document.getElementById("no-games").hidden = cards.size > 0;
  });
  source.addEventListener("service", (e) => drawService(JSON.parse(e.data)));
}

connect();
setInterval(tickClocks, CLOCK_TICK_MS);
