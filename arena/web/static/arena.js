/* Shared by the replay viewer and the live spectator: cards and small DOM helpers. */
"use strict";
var Arena = (function () {
  var SUITS = { C: ["\u2663", "black", "clubs"], S: ["\u2660", "black", "spades"],
                H: ["\u2665", "red", "hearts"], D: ["\u2666", "red", "diamonds"] };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  /* A card as a small drawn card: rank in the corner, big suit pip, suit colour. */
  function card(text, extra) {
    if (!text || text === "??" || text === "XX") {
      var back = el("span", "card back" + (extra ? " " + extra : ""));
      back.title = "face down";
      return back;
    }
    var rank = text.slice(0, -1), suit = text.slice(-1);
    var s = SUITS[suit] || ["?", "black", "?"];
    var c = el("span", "card " + s[1] + (extra ? " " + extra : ""));
    c.dataset.card = text;
    c.title = (rank === "T" ? "10" : rank) + " of " + s[2];
    c.appendChild(el("b", "", rank === "T" ? "10" : rank));
    c.appendChild(el("i", "", s[0]));
    return c;
  }

  function cards(list, extra) {
    var wrap = el("span", "hand");
    (list || []).forEach(function (t) { wrap.appendChild(card(t, extra)); });
    return wrap;
  }

  function suit(letter) {
    var s = SUITS[letter];
    if (!s) return el("span", "", letter || "");
    var e = el("span", "suit " + s[1], s[0]);
    e.title = s[2];
    return e;
  }

  /* Action text with card names drawn as inline suit symbols (e.g. "play K♥"). */
  function actionText(text) {
    var span = el("span", "act");
    String(text).split(" ").forEach(function (word, i) {
      if (i) span.appendChild(document.createTextNode(" "));
      var m = /^([789TJQKA])([CSHD])$/.exec(word);
      if (m) {
        var s = SUITS[m[2]];
        var w = el("span", "cardname " + s[1], (m[1] === "T" ? "10" : m[1]) + s[0]);
        span.appendChild(w);
      } else if (/^[CSHD]$/.test(word)) {
        span.appendChild(suit(word));
      } else {
        span.appendChild(document.createTextNode(word));
      }
    });
    return span;
  }

  /* Start a page's script on its root element, if this page has one; the root names the
     match it shows in data-match. */
  function onPage(id, start) {
    var root = document.getElementById(id);
    if (root) start(root, root.dataset.match);
  }

  return { el: el, card: card, cards: cards, suit: suit, actionText: actionText,
           onPage: onPage };
})();
