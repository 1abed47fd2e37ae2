// Counts a guest on a page a cache may share (docs/howto/cached-pages.md): one request
// the cache never serves, with the rooms the page shows, or with none at most once per
// cookie period (the "online" cookie it brings holds off the server's writes till then).
// Nothing when the page's own response counted them (Server-Timing: whos-online-counted).
(function () {
  "use strict";
  if (window.whosOnlineBeacon) return; // both blocks load this script
  window.whosOnlineBeacon = true;
  var blocks = document.querySelectorAll("[data-whos-online-beacon]");
  var url = null, rooms = [], renew = 0;
  blocks.forEach(function (block) {
    var said = new URL(block.getAttribute("data-whos-online-beacon"), location.href);
    url = url || said.origin + said.pathname;
    rooms = rooms.concat(said.searchParams.getAll("room"));
    renew = Math.max(renew, +block.getAttribute("data-whos-online-renew") || 0);
  });
  if (!url) return;
  // A page Django answered itself says so when it counted its guest (visitors/beacon.py).
  var navigation = performance.getEntriesByType ? performance.getEntriesByType("navigation") : [];
  var timing = (navigation[0] && navigation[0].serverTiming) || [];
  if (timing.some(function (metric) { return metric.name === "whos-online-counted"; })) return;
  var key = "whos-online-beacon", now = Date.now();
  try {
    if (!rooms.length && +localStorage.getItem(key) > now) return;
  } catch (e) {} // storage refused: send every time
  var query = rooms.map(function (room) { return "room=" + encodeURIComponent(room); });
  fetch(url + (query.length ? "?" + query.join("&") : ""), {
    credentials: "same-origin",
    cache: "no-store",
  }).then(function (response) {
    try {
      if (response.ok && renew) localStorage.setItem(key, String(now + renew * 1000));
    } catch (e) {}
  });
})();
