// Live leaderboard: every few seconds, fetch this page again and swap in the parts marked
// data-live (progress, standings, recent games) when they changed. Polling, so it works
// through any reverse proxy; the page's own meta refresh remains the fallback without JS.
(function () {
  "use strict";
  var root = document.querySelector("[data-live-poll]");
  if (!root) { return; }
  var seconds = Math.max(1, parseInt(root.getAttribute("data-live-poll"), 10) || 5);
  var meta = document.querySelector('meta[http-equiv="refresh"]');
  if (meta) { meta.parentNode.removeChild(meta); }
  function refresh() {
    fetch(window.location.href, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (text === null) { return; }
        var fresh = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (old) {
          var next = old.id ? fresh.getElementById(old.id) : null;
          if (next && next.innerHTML !== old.innerHTML) { old.innerHTML = next.innerHTML; }
        });
        document.body.setAttribute("data-live-updated", String(Date.now()));
      })
      .catch(function () { /* the server may be restarting: try again next time */ })
      .then(function () { window.setTimeout(refresh, seconds * 1000); });
  }
  window.setTimeout(refresh, seconds * 1000);
})();
