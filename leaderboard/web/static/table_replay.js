// Replay viewer of a classic table (2-4 seats): draws the per-step states that the server
// computed with the rules engine (embedded as JSON in #replay-data). No game logic here.
(function () {
  "use strict";

  var dataNode = document.getElementById("replay-data");
  if (!dataNode) return;
  var game = JSON.parse(dataNode.textContent);
  var replay = game.replay;
  var steps = replay.steps;
  if (!steps.length) return;

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

  function fill(container, codes, markKnown) {
    container.textContent = "";
    codes.forEach(function (code) {
      var known = markKnown && code !== null && markKnown.indexOf(code) >= 0;
      container.appendChild(cardNode(code, known ? "known" : ""));
    });
  }

  function prettyAction(text) {
    return text.replace(/\b(10|[6-9TJQKA])([CDHS])\b/g, function (_, rank, suit) {
      return (rank === "T" ? "10" : rank) + SUITS[suit];
    });
  }

  function playerName(seat) {
    var p = game.players[seat];
    return "seat " + seat + " · " + p.bot + " " + p.version + (seat === game.dealer ? " (dealer)" : "");
  }

  function visibleHand(s, seat) {
    var hand = s.hands[seat];
    if (state.view === "all" || String(seat) === state.view) return hand;
    var known = s.known[seat];
    var shown = hand.filter(function (c) { return known.indexOf(c) >= 0; });
    for (var i = shown.length; i < hand.length; i++) shown.push(null);
    return shown;
  }

  function render() {
    var s = steps[state.step];
    for (var seat = 0; seat < replay.players; seat++) {
      var role = [];
      if (s.out[seat]) role.push("out");
      if (s.leader === seat) role.push("leader");
      if (s.defender === seat) role.push("defender");
      if (s.to_move === seat) role.push("to move");
      $("seat-" + seat + "-name").textContent = playerName(seat) + (role.length ? " — " + role.join(", ") : "");
      var hand = visibleHand(s, seat);
      fill($("seat-" + seat + "-hand"), hand, s.known[seat]);
      $("seat-" + seat + "-hand").setAttribute("data-count", String(hand.length));
      $("seat-" + seat).classList.toggle("current", s.to_move === seat);
    }
    var onTable = s.led.length ? s.led : s.covered;
    fill($("led"), onTable, null);
    $("led").setAttribute("data-cards", onTable.join(" "));
    if (!onTable.length) $("led").innerHTML = '<span class="muted">empty</span>';
    $("stock-count").textContent = String(s.stock);
    $("discard-count").textContent = String(s.discard);
    var faceUp = $("face-up");
    faceUp.textContent = "";
    if (s.face_up) faceUp.appendChild(cardNode(s.face_up, "")); else faceUp.innerHTML = '<span class="muted">drawn</span>';
    $("trump").innerHTML = "";
    var trump = document.createElement("span");
    trump.className = "card-text " + SUIT_CLASS[replay.trump];
    trump.textContent = SUITS[replay.trump] + " " + replay.trump;
    $("trump").appendChild(trump);

    $("step-label").textContent = "Step " + state.step + " / " + (steps.length - 1);
    var line = $("action-line");
    if (s.action === null) {
      line.textContent = "The deal: seat " + s.leader + " leads to seat " + s.defender + ".";
    } else {
      line.textContent = playerName(s.seat) + ": " + prettyAction(s.action) +
        (s.seconds !== null ? " — " + s.seconds.toFixed(3) + " s" : "");
    }
    var final = $("final");
    var atEnd = state.step === steps.length - 1;
    final.hidden = !atEnd;
    if (atEnd) {
      var text = "Result: " + game.result_text + " (" + game.end_reason + ")";
      if (game.forfeit) text += " — seat " + game.forfeit.seat + " forfeited";
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

  $("btn-first").addEventListener("click", function () { go(0); });
  $("btn-prev").addEventListener("click", function () { go(state.step - 1); });
  $("btn-next").addEventListener("click", function () { go(state.step + 1); });
  $("btn-last").addEventListener("click", function () { go(steps.length - 1); });
  $("view-select").addEventListener("change", function (e) { state.view = e.target.value; render(); });
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "SELECT") return;
    var moves = { ArrowLeft: -1, ArrowRight: 1 };
    if (e.key in moves) { go(state.step + moves[e.key]); e.preventDefault(); }
    else if (e.key === "Home") { go(0); e.preventDefault(); }
    else if (e.key === "End") { go(steps.length - 1); e.preventDefault(); }
  });
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
