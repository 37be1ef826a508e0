// The chat panel's small behaviours: Enter sends, the form rests while a turn runs,
// effects become DOM events that fragments listen for (hx-trigger="chat:effects from:body"):
// those of the chat's own stream and those of the blog's channel (blog/live.py), which the page
// listens to with sse-swap="effects".
(function () {
  "use strict";

  function form() { return document.getElementById("chat-form"); }

  function setRunning(running) {
    var f = form();
    if (!f) return;
    var text = f.querySelector("textarea");
    var send = f.querySelector("#chat-send");
    var stop = f.querySelector("#chat-stop");
    f.dataset.running = running ? "1" : "";
    text.disabled = running;
    send.disabled = running;
    stop.hidden = !running;
    if (!running) text.focus();
  }

  function scrollLog() {
    var log = document.getElementById("chat-log");
    if (log) log.scrollTop = log.scrollHeight;
  }

  document.addEventListener("keydown", function (e) {
    var f = form();
    if (!f || e.target !== f.querySelector("textarea")) return;
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (f.dataset.running || !e.target.value.trim()) return;
      htmx.trigger(f, "submit");
    }
  });

  document.addEventListener("htmx:beforeRequest", function (e) {
    if (e.detail.elt === form()) setRunning(true);
  });

  // Any answer that opens a stream (a sent message, an approved action) means a turn runs.
  document.addEventListener("htmx:afterRequest", function (e) {
    var f = form();
    var started = e.detail.successful && e.detail.xhr.responseText.indexOf("sse-connect") !== -1;
    if (e.detail.elt === f) {
      if (started) f.reset();
      setRunning(started);
    } else if (started) {
      setRunning(true);
    }
    scrollLog();
  });

  document.addEventListener("htmx:sseMessage", function (e) {
    var type = e.detail && e.detail.type;
    if (type === "effects") {
      var effects = [];
      try { effects = JSON.parse(e.detail.data); } catch (err) { effects = []; }
      htmx.trigger(document.body, "chat:effects", { effects: effects });
      effects.forEach(function (effect) { htmx.trigger(document.body, "chat:" + effect.type, effect); });
    } else if (type === "reasoning") {
      var details = e.target.closest("article") && e.target.closest("article").querySelector("details.thinking");
      if (details) details.hidden = false;
    }
    scrollLog();
  });

  document.addEventListener("htmx:sseClose", function (e) {
    var article = e.target.closest && e.target.closest("article.streaming");
    if (article) article.classList.remove("streaming");
    setRunning(false);
    scrollLog();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var f = form();
    if (f && f.dataset.running) setRunning(true);
    scrollLog();
  });
})();
