/* The thread's chat: messages over the page's own WebSocket (demo/consumers.py). */
(function () {
  "use strict";
  var form = document.getElementById("chat-form");
  if (!form || !window.WebSocket) {
    return;
  }
  var list = document.getElementById("chat-messages");
  var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  var socket = new window.WebSocket(scheme + window.location.host + form.getAttribute("data-ws"));
  socket.onmessage = function (event) {
    var message = JSON.parse(event.data);
    var item = document.createElement("li");
    var name = document.createElement("strong");
    name.textContent = message.name;
    item.appendChild(name);
    item.appendChild(document.createTextNode(": " + message.text));
    list.appendChild(item);
  };
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var input = form.querySelector("input[name=text]");
    if (input.value.trim() && socket.readyState === window.WebSocket.OPEN) {
      socket.send(JSON.stringify({ text: input.value }));
      input.value = "";
    }
  });
})();
