/* whos_online live block: keeps every live who's-online block (and live room block) current.
 * No dependencies and no inline code, so it runs under a strict Content-Security-Policy.
 * A block with data-whos-online-ws subscribes over the WebSocket: the server pushes the
 * block, rendered by the site's own template, whenever someone joins or leaves. Otherwise,
 * and while the socket is down, a block with data-whos-online-url polls the endpoint every
 * data-whos-online-refresh seconds. Either way this swaps the section's contents and keeps
 * its attributes. Polls are not counted as visits (X-Whos-Online header), hidden tabs do not
 * poll, and a failed poll or a lost socket keeps what is shown. A socket closed with 4403 (a
 * room the site did not open to this visitor) or 4429 (too many sockets) is not retried.
 * A block with data-whos-online-fill (a page a cache may keep) is fetched once at load,
 * so the viewer sees their own view of it.
 * The section is no live region (a screen reader would read the whole list at every
 * change): each live block gets a visually hidden polite one beside it, which says the
 * change the server put in words ("Bob left."). A poll sends the members its block
 * showed (X-Whos-Online-Shown, from the previous poll, or for the first the rendered
 * block's data-whos-online-shown, URL-encoded) so the server can say what changed; a socket sends the
 * same in its URL (?shown=), and its first message says what changed since. A socket is
 * pushed in the language its page was rendered in (data-whos-online-lang, ?lang=). The first
 * poll after pushes only learns what is shown. */
(function () {
  "use strict";
  if (window.whosOnlineLive) {
    return; // the script is included once per block; one run for the page is enough
  }
  window.whosOnlineLive = true;

  function swap(section, html) {
    var holder = document.createElement("template");
    holder.innerHTML = html.trim();
    var fresh = holder.content.firstElementChild;
    if (fresh && fresh.innerHTML !== section.innerHTML) {
      section.innerHTML = fresh.innerHTML;
      section.setAttribute("data-whos-online-updated", new Date().toISOString());
    }
  }

  function schedule(block) {
    var seconds = parseInt(block.section.getAttribute("data-whos-online-refresh"), 10);
    if (seconds > 0 && block.section.getAttribute("data-whos-online-url") && !block.polling) {
      block.polling = true;
      window.setTimeout(function () { refresh(block); }, seconds * 1000);
    }
  }

  // The members a block shows, for the next poll's X-Whos-Online-Shown header: none for a
  // list cut at its limit, or too long for a header (the change then goes unsaid).
  function shown(data) {
    if (!data.available || data.more || !data.members) {
      return "";
    }
    var value = encodeURIComponent(JSON.stringify(data.members.map(function (member) {
      return [member.pk, member.name, member.status];
    })));
    return value.length <= 8000 ? value : "";
  }

  function refresh(block) {
    block.polling = false;
    if (block.pushed) {
      return; // the socket is back: it keeps the block current
    }
    if (document.hidden) {
      schedule(block);
      return;
    }
    poll(block);
  }

  function poll(block) {
    var headers = { "Accept": "application/json", "X-Whos-Online": "poll" };
    if (block.shown) {
      headers["X-Whos-Online-Shown"] = block.shown;
    }
    window.fetch(block.section.getAttribute("data-whos-online-url"), {
      credentials: "same-origin",
      headers: headers
    }).then(function (response) {
      if (!response.ok) {
        throw new Error("whos_online: HTTP " + response.status);
      }
      return response.json();
    }).then(function (data) {
      swap(block.section, data.html);
      if (data.announce) {
        block.announcer.textContent = data.announce;
      }
      block.shown = shown(data);
    }).catch(function () {
      /* keep the block as it is */
    }).then(function () {
      schedule(block);
    });
  }

  function announcer(section) {
    var region = document.createElement("p");
    region.className = "whos-online-announcement";
    region.setAttribute("role", "status");
    region.setAttribute("aria-live", "polite");
    // Visually hidden, still read; set through the CSSOM, which a strict CSP allows.
    var style = region.style;
    style.position = "absolute";
    style.width = "1px";
    style.height = "1px";
    style.margin = "-1px";
    style.padding = "0";
    style.border = "0";
    style.overflow = "hidden";
    style.clip = "rect(0 0 0 0)";
    style.whiteSpace = "nowrap";
    section.parentNode.insertBefore(region, section.nextSibling);
    return region;
  }

  function subscribe(block) {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    // The language the page was rendered in: pushes speak it too. What the block shows (as
    // rendered, or by the last poll): the first state says the change.
    var language = block.section.getAttribute("data-whos-online-lang");
    var query = [];
    if (language) {
      query.push("lang=" + encodeURIComponent(language));
    }
    if (block.shown) {
      query.push("shown=" + block.shown);
    }
    var socket = new window.WebSocket(scheme + window.location.host +
      block.section.getAttribute("data-whos-online-ws") +
      (query.length ? "?" + query.join("&") : ""));
    socket.onopen = function () {
      block.pushed = true;
      block.retries = 0;
      block.shown = ""; // pushes say what changes now; polls start afresh if it drops
    };
    socket.onmessage = function (event) {
      var data = JSON.parse(event.data);
      if (data.html) {
        swap(block.section, data.html);
      }
      if (data.announce) {
        block.announcer.textContent = data.announce;
      }
    };
    socket.onclose = function (event) {
      block.pushed = false;
      if (event.code === 4403 || event.code === 4429) {
        // The site refused this room, or this visitor has too many sockets open: the
        // block stays as rendered (a site-wide block polls, if it has an endpoint).
        schedule(block);
        return;
      }
      // Poll meanwhile, and subscribe again after 1, 2, 4 ... 30 s.
      schedule(block);
      var delay = Math.min(30, Math.pow(2, block.retries));
      block.retries += 1;
      window.setTimeout(function () { subscribe(block); }, delay * 1000);
    };
  }

  function start() {
    var sections = document.querySelectorAll("[data-whos-online-url], [data-whos-online-ws]");
    for (var i = 0; i < sections.length; i++) {
      var block = { section: sections[i], pushed: false, polling: false, retries: 0,
        shown: encodeURIComponent(sections[i].getAttribute("data-whos-online-shown") || "") };
      block.announcer = announcer(sections[i]);
      if (sections[i].hasAttribute("data-whos-online-fill")) {
        poll(block); // a cached page's block is anyone's: this viewer's own, now
      }
      if (sections[i].getAttribute("data-whos-online-ws") && window.WebSocket) {
        subscribe(block);
      } else {
        schedule(block);
      }
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
