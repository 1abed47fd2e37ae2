/* whos_online live block: refreshes every {% whos_online live=N %} block in place.
 * No dependencies and no inline code, so it runs under a strict Content-Security-Policy.
 * The endpoint returns the block rendered by the site's own template; this swaps
 * the section's contents and keeps its attributes. Polls are not counted as visits
 * (X-Whos-Online header), hidden tabs do not poll, and a failed poll keeps what is
 * shown and tries again at the next tick. */
(function () {
  "use strict";
  if (window.whosOnlineLive) {
    return; // the script is included once per block; one timer per block is enough
  }
  window.whosOnlineLive = true;

  function schedule(section) {
    var seconds = parseInt(section.getAttribute("data-whos-online-refresh"), 10);
    if (seconds > 0) {
      window.setTimeout(function () { refresh(section); }, seconds * 1000);
    }
  }

  function refresh(section) {
    if (document.hidden) {
      schedule(section);
      return;
    }
    window.fetch(section.getAttribute("data-whos-online-url"), {
      credentials: "same-origin",
      headers: { "Accept": "application/json", "X-Whos-Online": "poll" }
    }).then(function (response) {
      if (!response.ok) {
        throw new Error("whos_online: HTTP " + response.status);
      }
      return response.json();
    }).then(function (data) {
      var holder = document.createElement("template");
      holder.innerHTML = data.html.trim();
      var fresh = holder.content.firstElementChild;
      if (fresh) {
        section.innerHTML = fresh.innerHTML;
        section.setAttribute("data-whos-online-updated", new Date().toISOString());
      }
    }).catch(function () {
      /* keep the block as it is */
    }).then(function () {
      schedule(section);
    });
  }

  function start() {
    var sections = document.querySelectorAll("[data-whos-online-url]");
    for (var i = 0; i < sections.length; i++) {
      schedule(sections[i]);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
