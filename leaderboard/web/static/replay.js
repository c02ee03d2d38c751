// Replay viewer: draws the per-step states that the server computed with the rules engine
// (embedded as JSON in #replay-data). No game logic here: it only renders and navigates.
(function () {
  "use strict";

  var dataNode = document.getElementById("replay-data");
  if (!dataNode) return;
  var game = JSON.parse(dataNode.textContent);
  var replay = game.replay;
  var steps = replay.steps || unpack(replay.packed || []);
  // For tests and the curious: the full per-step states, as /api/games/ID serves them.
  window.KRYT_REPLAY = { game: game, steps: steps };
  if (!steps.length) return;

  // The page embeds the steps packed (leaderboard/web/replay.py, pack_steps): each step has
  // only what changed since the previous one; card lists are strings of 2-character codes.
  function unpack(packed) {
    var keys = { s: "seat", a: "action", t: "seconds", u: "auto", p: "pile", n: "stock",
                 f: "face_up", m: "to_move", o: "over" };
    var cards = function (text) {
      var out = [];
      for (var i = 0; i < text.length; i += 2) out.push(text.slice(i, i + 2));
      return out;
    };
    var out = [], current = { hands: [[], []], known: [[], []] };
    packed.forEach(function (changes, index) {
      var next = { index: index, hands: current.hands.slice(), known: current.known.slice() };
      Object.keys(keys).forEach(function (k) {
        var name = keys[k];
        next[name] = k in changes ? (k === "p" ? cards(changes[k]) : changes[k]) : current[name];
      });
      [0, 1].forEach(function (seat) {
        if (("h" + seat) in changes) next.hands[seat] = cards(changes["h" + seat]);
        if (("k" + seat) in changes) next.known[seat] = cards(changes["k" + seat]);
      });
      out.push(next);
      current = next;
    });
    return out;
  }

  var SUITS = { C: "♣", D: "♦", H: "♥", S: "♠" };
  var SUIT_CLASS = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
  var $ = function (id) { return document.getElementById(id); };
  var state = { step: 0, view: "all" };

  function cardNode(code, extra) {
    var el = document.createElement("span");
    if (code === null) {
      el.className = "card back";
      el.title = "hidden card";
      el.setAttribute("data-card", "?");
      return el;
    }
    var rank = code.slice(0, -1), suit = code.slice(-1);
    el.className = "card " + SUIT_CLASS[suit] + (suit === replay.trump ? " trump" : "") +
      (extra ? " " + extra : "");
    el.setAttribute("data-card", code);
    el.title = code;
    el.textContent = (rank === "T" ? "10" : rank) + SUITS[suit];
    return el;
  }

  // Where each visible card is at a step: "h0", "h1" (hands), "p" (pile), "f" (face up).
  function places(s) {
    var at = {};
    s.hands[0].forEach(function (c) { at[c] = "h0"; });
    s.hands[1].forEach(function (c) { at[c] = "h1"; });
    s.pile.forEach(function (c) { at[c] = "p"; });
    if (s.face_up) at[s.face_up] = "f";
    return at;
  }

  // The cards that just moved: those somewhere else (or newly drawn) than one step before.
  function movedAt(step) {
    if (step === 0) return [];
    var before = places(steps[step - 1]), now = places(steps[step]);
    return Object.keys(now).filter(function (c) { return before[c] !== now[c]; });
  }

  function fill(container, codes, markKnown, moved) {
    container.textContent = "";
    codes.forEach(function (code) {
      var known = markKnown && code !== null && markKnown.indexOf(code) >= 0;
      var classes = (known ? "known" : "") +
        (code !== null && moved && moved.indexOf(code) >= 0 ? " moved" : "");
      container.appendChild(cardNode(code, classes.trim()));
    });
  }

  function buildMoves() {
    var body = $("moves-body");
    if (!body) return;
    var row = function (step, cells, note) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-step", String(step));
      tr.id = "move-" + step;
      cells.forEach(function (text, i) {
        var td = document.createElement("td");
        if (i === 0 || i === 4) td.className = "num";
        if (i === 3) appendAction(td, text); else td.textContent = text;
        if (i === 3 && note) {
          var span = document.createElement("span");
          span.className = "muted";
          span.textContent = " " + note;
          td.appendChild(span);
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    };
    row(0, ["0", "", "", "deal", ""]);
    for (var i = 1; i < steps.length; i++) {
      var s = steps[i];
      var bot = s.seat === 0 || s.seat === 1 ? game.players[s.seat].bot : "?";
      row(i, [String(i), String(s.seat), bot, s.action,
              s.seconds === null || s.auto ? "" : s.seconds.toFixed(3)],
          s.auto ? "(automatic final cover)" : "");
    }
  }

  // An action with its cards as coloured labels ("cover K♥ 10♣").
  function appendAction(td, text) {
    text.split(" ").forEach(function (word, i) {
      if (i) td.appendChild(document.createTextNode(" "));
      var card = /^(10|[6-9TJQKA])([CDHS])$/.exec(word);
      if (!card) { td.appendChild(document.createTextNode(word)); return; }
      var span = document.createElement("span");
      span.className = "card-text " + SUIT_CLASS[card[2]];
      span.title = word;
      span.textContent = (card[1] === "T" ? "10" : card[1]) + SUITS[card[2]];
      td.appendChild(span);
    });
  }

  // "cover 9H TC" -> "cover 9♥ 10♣" (text only; the move list shows the canonical form).
  function prettyAction(text) {
    return text.replace(/\b(10|[6-9TJQKA])([CDHS])\b/g, function (_, rank, suit) {
      return (rank === "T" ? "10" : rank) + SUITS[suit];
    });
  }

  function playerName(seat) {
    var p = game.players[seat];
    return "seat " + seat + " · " + p.bot + " " + p.version + (seat === game.dealer ? " (dealer)" : "");
  }

  // The cards of `seat`'s hand as the chosen view may see them: all of them when revealed or
  // when it is the viewer's own hand; otherwise the public ones plus one back per hidden card.
  function visibleHand(s, seat) {
    var hand = s.hands[seat];
    if (state.view === "all" || String(seat) === state.view) return hand;
    var known = s.known[seat];
    var shown = hand.filter(function (c) { return known.indexOf(c) >= 0; });
    for (var i = shown.length; i < hand.length; i++) shown.push(null);
    return shown;
  }

  // Whether card `c` is visible in the chosen view at state `s`: everywhere but in a hand
  // the view does not show, unless that card of the hand is public.
  function seenInView(s, c) {
    for (var seat = 0; seat < s.hands.length; seat++) {
      if (s.hands[seat].indexOf(c) >= 0) {
        return state.view === "all" || String(seat) === state.view || s.known[seat].indexOf(c) >= 0;
      }
    }
    return true;
  }

  function render() {
    var s = steps[state.step];
    var bottom = state.view === "all" ? 0 : Number(state.view);
    var top = 1 - bottom;
    $("top-name").textContent = playerName(top) + (s.to_move === top ? " — to move" : "");
    $("bottom-name").textContent = playerName(bottom) + (s.to_move === bottom ? " — to move" : "");
    // Only cards this view may see: a card the hidden seat drew is not named anywhere.
    var moved = movedAt(state.step).filter(function (c) { return seenInView(s, c); });
    fill($("top-hand"), visibleHand(s, top), s.known[top], moved);
    fill($("bottom-hand"), visibleHand(s, bottom), s.known[bottom], moved);
    $("top-hand").setAttribute("data-hidden", String(visibleHand(s, top).filter(function (c) { return c === null; }).length));
    $("bottom-hand").setAttribute("data-hidden", String(visibleHand(s, bottom).filter(function (c) { return c === null; }).length));
    fill($("pile"), s.pile, null, moved);
    document.body.setAttribute("data-moved", moved.slice().sort().join(" "));
    $("pile").setAttribute("data-cards", s.pile.join(" "));
    if (!s.pile.length) $("pile").innerHTML = '<span class="muted">empty</span>';
    $("stock-count").textContent = String(s.stock);
    var faceUp = $("face-up");
    faceUp.textContent = "";
    if (s.face_up) faceUp.appendChild(cardNode(s.face_up, moved.indexOf(s.face_up) >= 0 ? "moved" : "")); else faceUp.innerHTML = '<span class="muted">drawn</span>';
    $("trump").innerHTML = "";
    var trump = document.createElement("span");
    trump.className = "card-text " + SUIT_CLASS[replay.trump];
    trump.textContent = SUITS[replay.trump] + " " + replay.trump;
    $("trump").appendChild(trump);

    $("step-label").textContent = "Step " + state.step + " / " + (steps.length - 1);
    var line = $("action-line");
    if (s.action === null) {
      line.textContent = "The deal: seat " + (1 - game.dealer) + " moves first.";
    } else {
      line.textContent = (s.auto ? "Referee, for " : "") + playerName(s.seat) + ": " + prettyAction(s.action) +
        (s.auto ? " (automatic final cover)" : "") +
        (s.seconds !== null && !s.auto ? " — " + s.seconds.toFixed(3) + " s" : "");
    }
    var final = $("final");
    var atEnd = state.step === steps.length - 1;
    final.hidden = !atEnd;
    if (atEnd) {
      var text = "Result: " + game.result_text + " (" + game.end_reason + ")";
      if (game.forfeit) text += " — seat " + game.forfeit.seat + " forfeited: " + game.forfeit.reason.replace(/_/g, " ");
      if (replay.error) text += " — replay stopped early: " + replay.error;
      final.textContent = text;
    }
    $("btn-first").disabled = $("btn-prev").disabled = state.step === 0;
    $("btn-next").disabled = $("btn-last").disabled = atEnd;
    var rows = document.querySelectorAll("#moves tbody tr");
    for (var i = 0; i < rows.length; i++) {
      rows[i].classList.toggle("current", Number(rows[i].getAttribute("data-step")) === state.step);
    }
    document.body.setAttribute("data-step", String(state.step));
  }

  function go(step) {
    state.step = Math.max(0, Math.min(steps.length - 1, step));
    if (history.replaceState) history.replaceState(null, "", "#step=" + state.step);
    render();
  }

  // Autoplay: one step per second at 1×, faster or slower with the speed choice; it stops
  // at the last step (Play again from there starts over).
  var timer = null;
  function delay() { return 1000 / Number($("speed-select").value || 1); }
  function stop() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    $("btn-play").textContent = "▶ Play";
    document.body.removeAttribute("data-playing");
  }
  function tick() {
    if (state.step >= steps.length - 1) { stop(); return; }
    go(state.step + 1);
    timer = setTimeout(tick, delay());
  }
  function play() {
    if (state.step >= steps.length - 1) go(0);
    $("btn-play").textContent = "❚❚ Pause";
    document.body.setAttribute("data-playing", "1");
    timer = setTimeout(tick, delay());
  }
  $("btn-play").addEventListener("click", function () { if (timer === null) play(); else stop(); });
  $("speed-select").addEventListener("change", function () {
    if (timer !== null) { clearTimeout(timer); timer = setTimeout(tick, delay()); }
  });

  $("btn-first").addEventListener("click", function () { go(0); });
  $("btn-prev").addEventListener("click", function () { go(state.step - 1); });
  $("btn-next").addEventListener("click", function () { go(state.step + 1); });
  $("btn-last").addEventListener("click", function () { go(steps.length - 1); });
  $("view-select").addEventListener("change", function (e) { state.view = e.target.value; render(); });
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "SELECT") return;
    if (e.key === " " && e.target && e.target.tagName !== "BUTTON") {
      if (timer === null) play(); else stop();
      e.preventDefault();
      return;
    }
    var moves = { ArrowLeft: -1, ArrowRight: 1 };
    if (e.key in moves) { go(state.step + moves[e.key]); e.preventDefault(); }
    else if (e.key === "Home") { go(0); e.preventDefault(); }
    else if (e.key === "End") { go(steps.length - 1); e.preventDefault(); }
  });
  buildMoves();
  var rows = document.querySelectorAll("#moves tbody tr");
  for (var i = 0; i < rows.length; i++) {
    rows[i].addEventListener("click", function (e) {
      var step = Number(e.currentTarget.getAttribute("data-step"));
      if (step < steps.length) go(step);
    });
  }
  var match = /step=(\d+)/.exec(location.hash);
  state.step = match ? Math.min(Number(match[1]), steps.length - 1) : 0;
  state.view = $("view-select").value;
  render();
})();
