/* The live spectator: folds the public events of /api/live/ID/events (Server-Sent Events)
   into the table a spectator sees. Nothing here could show a hand: the stream has none. */
"use strict";
Arena.onPage("spectator", function (root, matchId) {
  var el = Arena.el;
  var delay = parseFloat(root.dataset.delay) || 0;
  var PLAYS = { play: 1, marry: 1, half: 1, aces: 1, nines: 1, crawl: 1 };
  var v = { seats: window.ARENA_PLAYERS || [], scores: [], deal: null, dealer: null,
            auction: [], declarer: null, contract: null, trump: null, marriages: [],
            talon: [], table: [], lastTrick: null, tricks: {}, points: {}, log: [],
            strikes: {}, status: null, ranks: [], events: 0, last: null };

  function fold(e) {
    v.events++;
    var t = e.type;
    if (t === "match_start") {
      v.scores = (e.seats || v.seats).map(function () { return 0; });
    } else if (t === "deal_start") {
      v.deal = e.deal; v.dealer = e.dealer; v.auction = []; v.declarer = null; v.contract = null;
      v.trump = null; v.marriages = []; v.talon = []; v.table = []; v.lastTrick = null;
      v.tricks = {}; v.points = {}; v.log = [];
      v.last = { text: "deal " + e.deal + " dealt by " + v.seats[e.dealer] };
    } else if (t === "action") {
      var verb = e.action.split(" ")[0];
      if (PLAYS[verb]) v.table.push([e.seat, e.action.split(" ")[1] || "??"]);
      else v.auction.push([e.seat, e.action]);
      if (verb === "contract") { v.declarer = e.seat; v.contract = parseInt(e.action.split(" ")[1], 10); }
      if (e.fallback) v.strikes[e.seat] = (v.strikes[e.seat] || 0) + 1;
      v.log.push([e.seat, e.action, e.fallback || null, !!e.auto]);
      v.last = { seat: e.seat, text: e.action, note: e.fallback || null };
    } else if (t === "talon") {
      v.talon = e.cards || [];
    } else if (t === "trick") {
      v.lastTrick = { winner: e.winner, cards: e.cards, points: e.points };
      v.table = [];
      v.tricks[e.winner] = (v.tricks[e.winner] || 0) + 1;
      v.points[e.winner] = (v.points[e.winner] || 0) + e.points;
    } else if (t === "marriage") {
      v.marriages.push([e.seat, e.suit, e.points]);
      v.trump = e.suit;
    } else if (t === "deal_end") {
      v.scores = e.scores;
      if (e.declarer !== null && e.declarer !== undefined) { v.declarer = e.declarer; v.contract = e.contract; }
      v.last = { text: (e.declarer !== null && e.declarer !== undefined ? v.seats[e.declarer] + (e.made ? " made " : " failed ") + e.contract : "deal over") };
    } else if (t === "redeal") {
      v.last = { text: "redeal: " + e.reason };
    } else if (t === "match_end") {
      v.status = e.status; v.ranks = e.ranks || []; v.scores = e.scores || v.scores;
    }
  }

  function render() {
    var seats = document.getElementById("seats");
    seats.innerHTML = "";
    v.seats.forEach(function (name, s) {
      var p = el("div", "seat-panel");
      var head = el("div", "seat-head");
      head.appendChild(el("b", "name", name));
      if (v.dealer === s) head.appendChild(el("span", "badge", "dealer"));
      if (v.declarer === s && v.contract) head.appendChild(el("span", "badge decl", "declarer " + v.contract));
      if (v.strikes[s]) head.appendChild(el("span", "badge bad", v.strikes[s] + " strike" + (v.strikes[s] > 1 ? "s" : "")));
      if (v.ranks.length) head.appendChild(el("span", "badge" + (v.ranks[s] === 1 ? " act" : ""), "#" + v.ranks[s]));
      head.appendChild(el("span", "score", v.scores[s] === undefined ? 0 : v.scores[s]));
      p.appendChild(head);
      p.appendChild(el("div", "seat-foot small muted", (v.tricks[s] || 0) + " tricks · " + (v.points[s] || 0) + " card points this deal"));
      seats.appendChild(p);
    });
    var info = document.getElementById("info");
    info.innerHTML = "";
    var item = function (k, node) { var i = el("span", "info-item"); i.appendChild(el("span", "k", k)); i.appendChild(typeof node === "string" ? document.createTextNode(node) : node); info.appendChild(i); };
    item("deal", v.deal === null ? "-" : String(v.deal));
    if (v.contract) item("contract", v.seats[v.declarer] + " " + v.contract);
    item("trump", v.trump ? Arena.suit(v.trump) : "none");
    var felt = document.getElementById("felt");
    felt.innerHTML = "";
    var trick = el("div", "trick");
    var shown = v.table.length ? v.table : (v.lastTrick ? v.lastTrick.cards : []);
    shown.forEach(function (pair) {
      var slot = el("div", "slot" + (!v.table.length && v.lastTrick && v.lastTrick.winner === pair[0] ? " winner" : ""));
      slot.appendChild(Arena.card(pair[1]));
      slot.appendChild(el("div", "who", v.seats[pair[0]]));
      trick.appendChild(slot);
    });
    if (!v.table.length && v.lastTrick) trick.appendChild(el("div", "took", v.seats[v.lastTrick.winner] + " took the last trick (" + v.lastTrick.points + ")"));
    if (!shown.length) trick.appendChild(el("div", "empty", "no card on the table"));
    felt.appendChild(trick);
    if (v.talon.length) {
      var tal = el("div", "talons"); var box = el("div", "talon");
      box.appendChild(el("div", "who", "talon (shown)")); box.appendChild(Arena.cards(v.talon)); tal.appendChild(box); felt.appendChild(tal);
    }
    var la = document.getElementById("last-action");
    la.innerHTML = "";
    if (v.last) {
      if (v.last.seat !== undefined) la.appendChild(el("b", "", v.seats[v.last.seat] + ": "));
      la.appendChild(Arena.actionText(v.last.text));
      if (v.last.note) la.appendChild(el("span", "tag bad fallback", "fallback after " + v.last.note));
    }
    var steps = document.getElementById("steps");
    steps.innerHTML = "";
    v.log.slice(-60).forEach(function (a) {
      var li = el("li", "");
      li.appendChild(el("span", "who", v.seats[a[0]]));
      li.appendChild(Arena.actionText(a[1]));
      if (a[2]) li.appendChild(el("span", "tag bad", a[2]));
      steps.appendChild(li);
    });
    steps.parentNode.scrollTop = steps.parentNode.scrollHeight;
    document.getElementById("counter").textContent = v.events + " events" + (delay ? " · " + delay + " s behind play" : "");
  }

  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; render(); });
  }
  var state = document.getElementById("live-state");
  function setState(text, live) {
    state.innerHTML = "";
    if (live) state.appendChild(el("span", "dot"));
    state.appendChild(document.createTextNode(text));
    state.className = "pill" + (live ? " live" : "");
  }
  var src = new EventSource("/api/live/" + encodeURIComponent(matchId) + "/events?delay=" + delay);
  src.addEventListener("hello", function () {
    setState("live", true);
    document.getElementById("embargo").hidden = true;
  });
  src.addEventListener("events", function (msg) {
    JSON.parse(msg.data).forEach(fold);
    schedule();
  });
  src.addEventListener("embargo", function (msg) {
    var info = JSON.parse(msg.data);
    setState("held back", false);
    var note = document.getElementById("embargo");
    note.textContent = info.detail + ". This page opens it by itself when the set is complete.";
    note.hidden = false;
  });
  src.addEventListener("end", function () {
    src.close();
    setState(v.status ? "ended: " + v.status : "ended", false);
    root.dataset.ended = "1";
    document.getElementById("replay-link").hidden = false;
    schedule();
  });
  src.onerror = function () { if (!root.dataset.ended) setState("reconnecting", false); };
  render();
});
