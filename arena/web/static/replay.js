/* The replay viewer: one deal's frames at a time from /api/matches/ID/frames?deal=D.
   Keys: left/right step, up/down (PageUp/PageDown) deal, Home/End start/end of the deal.
   The position is in the URL (?at=DEAL.STEP), so any position can be linked. */
"use strict";
Arena.onPage("viewer", function (root, matchId) {
  var el = Arena.el;
  var summary = JSON.parse(document.getElementById("replay-summary").textContent);
  var seats = summary.seats;
  var cache = {};
  var deal = parseInt(root.dataset.deal, 10) || 0;
  var step = parseInt(root.dataset.step, 10) || 0;
  var frames = null;
  var loading = null;

  function load(d) {
    if (cache[d]) return Promise.resolve(cache[d]);
    return fetch("/api/matches/" + encodeURIComponent(matchId) + "/frames?deal=" + d)
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (data) { cache[d] = data.frames; return data.frames; });
  }

  function seatName(s) { return s === null || s === undefined ? "-" : seats[s]; }

  function renderSeats(f) {
    var box = document.getElementById("seats");
    box.innerHTML = "";
    for (var s = 0; s < seats.length; s++) {
      var p = el("div", "seat-panel");
      p.dataset.seat = s;
      if (f.to_act === s) p.classList.add("to-act");
      if (f.active.indexOf(s) < 0) p.classList.add("out");
      var head = el("div", "seat-head");
      head.appendChild(el("b", "name", seats[s]));
      if (f.dealer === s) head.appendChild(el("span", "badge", "dealer"));
      if (f.declarer === s) head.appendChild(el("span", "badge decl", "declarer " + f.contract));
      if (f.barrel[s]) head.appendChild(el("span", "badge", "on the barrel"));
      if (f.strikes[s]) head.appendChild(el("span", "badge bad", f.strikes[s] + " strike" + (f.strikes[s] > 1 ? "s" : "")));
      if (f.active.indexOf(s) < 0) head.appendChild(el("span", "badge", "sits out"));
      if (f.to_act === s) head.appendChild(el("span", "badge act", "to act"));
      head.appendChild(el("span", "score", f.scores[s]));
      p.appendChild(head);
      var hand = Arena.cards(f.hands[s]);
      hand.classList.add("seat-hand");
      p.appendChild(hand);
      var foot = el("div", "seat-foot small muted",
        f.tricks_taken[s] + " trick" + (f.tricks_taken[s] === 1 ? "" : "s") + " · " +
        f.points_taken[s] + " card points" + (f.bolts[s] ? " · " + f.bolts[s] + " bolts" : ""));
      p.appendChild(foot);
      box.appendChild(p);
    }
  }

  function renderInfo(f) {
    var info = document.getElementById("info");
    info.innerHTML = "";
    var add = function (label, node) {
      var item = el("span", "info-item");
      item.appendChild(el("span", "k", label));
      item.appendChild(typeof node === "string" ? document.createTextNode(node) : node);
      info.appendChild(item);
    };
    add("phase", f.phase);
    if (f.contract !== null) add("contract", seatName(f.declarer) + " " + f.contract + (f.blind ? " (blind)" : ""));
    else if (f.bid !== null) add("bid", seatName(f.bidder) + " " + f.bid);
    var trump = el("span", "");
    if (f.trump) { trump.appendChild(Arena.suit(f.trump)); } else { trump.textContent = "none"; }
    add("trump", trump);
    if (f.marriages.length) {
      var mm = el("span", "");
      f.marriages.forEach(function (m, i) {
        if (i) mm.appendChild(document.createTextNode(", "));
        mm.appendChild(document.createTextNode(seatName(m[0]) + " "));
        mm.appendChild(Arena.suit(m[1]));
        mm.appendChild(document.createTextNode(" " + m[2]));
      });
      add("marriages", mm);
    }
  }

  function renderFelt(f) {
    var felt = document.getElementById("felt");
    felt.innerHTML = "";
    var trick = el("div", "trick");
    if (f.table.length) {
      f.table.forEach(function (pair) {
        var slot = el("div", "slot" + (f.trick_winner === pair[0] ? " winner" : ""));
        slot.appendChild(Arena.card(pair[1]));
        slot.appendChild(el("div", "who", seats[pair[0]]));
        trick.appendChild(slot);
      });
      if (f.trick_winner !== undefined && f.trick_winner !== null)
        trick.appendChild(el("div", "took", seatName(f.trick_winner) + " takes it"));
    } else {
      trick.appendChild(el("div", "empty", f.phase === "play" ? "no card on the table" : ""));
    }
    felt.appendChild(trick);
    var beforePlay = ["deal", "nines", "blind", "auction", "sale-offer", "sale", "talon-choice", "exchange"];
    if (beforePlay.indexOf(f.phase) >= 0 && f.talons.some(function (t) { return t.length; })) {
      var tal = el("div", "talons");
      f.talons.forEach(function (t, i) {
        if (!t.length) return;
        var box = el("div", "talon");
        var label = f.talons.length > 1 ? "talon " + (i + 1) : "talon";
        if (f.phase === "exchange") label += " (taken by " + seatName(f.declarer) + ")";
        else label += f.talon_public ? " (shown to all)" : " (face down)";
        box.appendChild(el("div", "who", label));
        box.appendChild(Arena.cards(t));
        tal.appendChild(box);
      });
      felt.appendChild(tal);
    }
    if (f.given.length || f.discarded.length) {
      var ex = el("div", "exchange small");
      f.given.forEach(function (g) {
        var line = el("div", "");
        line.appendChild(document.createTextNode(seatName(f.declarer) + " gives "));
        line.appendChild(Arena.card(g[0], "mini"));
        line.appendChild(document.createTextNode(" to " + seatName(g[1])));
        ex.appendChild(line);
      });
      if (f.discarded.length) {
        var d = el("div", "");
        d.appendChild(document.createTextNode("discarded "));
        d.appendChild(Arena.cards(f.discarded, "mini"));
        ex.appendChild(d);
      }
      felt.appendChild(ex);
    }
  }

  function renderAction(f) {
    var box = document.getElementById("last-action");
    box.innerHTML = "";
    if (!f.action) {
      box.appendChild(el("span", "muted", "Deal " + f.deal + " dealt by " + seatName(f.dealer) + "."));
    } else {
      box.appendChild(el("b", "", seatName(f.action.seat) + ": "));
      box.appendChild(Arena.actionText(f.action.text));
      if (f.action.note) {
        box.appendChild(el("span", "tag bad fallback", "fallback after " + f.action.note + " · strike " + f.strikes[f.action.seat]));
      }
    }
    f.events.forEach(function (e) {
      var line = el("div", "event " + e.type);
      line.appendChild(Arena.actionText(e.text));
      if (e.type === "deal_end") {
        line.appendChild(el("span", "small muted", "  " + e.deltas.map(function (x, i) {
          return seats[i] + " " + (x > 0 ? "+" : "") + x;
        }).join(", ")));
      }
      box.appendChild(line);
    });
  }

  function renderLog(d, s) {
    var log = document.getElementById("log");
    log.innerHTML = "";
    var ol = el("ol", "steps");
    for (var i = 1; i < frames.length; i++) {
      var a = frames[i].action;
      var li = el("li", i === s ? "here" : i > s ? "later" : "");
      li.dataset.step = i;
      li.appendChild(el("span", "who", seats[a.seat]));
      li.appendChild(Arena.actionText(a.text));
      if (a.note) li.appendChild(el("span", "tag bad", a.note));
      li.addEventListener("click", (function (k) { return function () { go(d, k); }; })(i));
      ol.appendChild(li);
    }
    log.appendChild(ol);
    var here = ol.querySelector("li.here");
    if (here && here.scrollIntoView) here.scrollIntoView({ block: "nearest" });
  }

  function render() {
    var f = frames[step];
    renderSeats(f);
    renderInfo(f);
    renderFelt(f);
    renderAction(f);
    renderLog(deal, step);
    document.getElementById("position").textContent =
      // Deals are numbered from 0, as in the replay file, its text record and the address.
      "deal " + deal + " (" + summary.deals.length + " deals: 0-" + (summary.deals.length - 1) +
      ") · step " + step + " of " + (frames.length - 1);
    var scrub = document.getElementById("scrub");
    scrub.max = frames.length - 1;
    scrub.value = step;
    document.getElementById("deal-select").value = String(deal);
    root.dataset.deal = deal;
    root.dataset.step = step;
    history.replaceState(null, "", "?at=" + deal + "." + step);
  }

  function go(d, s) {
    var nd = Math.max(0, Math.min(summary.deals.length - 1, d));
    var req = load(nd).then(function (fr) {
      if (loading !== req) return;
      deal = nd;
      frames = fr;
      step = s === "end" ? fr.length - 1 : Math.max(0, Math.min(fr.length - 1, s));
      render();
      root.classList.add("ready");
    }).catch(function (err) {
      document.getElementById("last-action").textContent = "cannot load deal " + nd + ": " + err.message;
    });
    loading = req;
    return req;
  }

  function next() {
    if (frames && step < frames.length - 1) go(deal, step + 1);
    else if (deal < summary.deals.length - 1) go(deal + 1, 0);
  }
  function prev() {
    if (step > 0) go(deal, step - 1);
    else if (deal > 0) go(deal - 1, "end");
  }

  root.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-go]");
    if (!b) return;
    var what = b.dataset.go;
    if (what === "next") next();
    else if (what === "prev") prev();
    else if (what === "deal-next") go(deal + 1, 0);
    else if (what === "deal-prev") go(deal - 1, 0);
  });
  document.getElementById("scrub").addEventListener("input", function (ev) {
    go(deal, parseInt(ev.target.value, 10));
  });
  document.getElementById("deal-select").addEventListener("change", function (ev) {
    go(parseInt(ev.target.value, 10), 0);
  });
  document.querySelectorAll("[data-deal-link]").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      go(parseInt(a.dataset.dealLink, 10), 0);
      root.scrollIntoView({ behavior: "smooth" });
    });
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName) && ev.target.id !== "scrub") return;
    var k = ev.key;
    if (k === "ArrowRight" || k === "l") next();
    else if (k === "ArrowLeft" || k === "h") prev();
    else if (k === "ArrowDown" || k === "PageDown" || k === "j") go(deal + 1, 0);
    else if (k === "ArrowUp" || k === "PageUp" || k === "k") go(deal - 1, 0);
    else if (k === "Home") go(deal, 0);
    else if (k === "End") go(deal, "end");
    else return;
    ev.preventDefault();
  });
  go(deal, step);
});
