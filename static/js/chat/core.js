// The chat panel's small behaviours: Enter sends (with a mouse or a hardware keyboard at hand), the form
// rests while a turn runs, effects become DOM events that fragments listen for (hx-trigger="chat:effects from:body"):
// those of the chat's own stream and those of the blog's channel (blog/live.py), which the page
// listens to with sse-swap="effects".
//
// Plain deferred scripts, run in the order templates/base.html names them, sharing this one object:
// core.js (this: the form, the tab's storage), log.js, tabs.js, history.js, composer.js, seat.js, waits.js, start.js.
// The order is the order their listeners are added in: where two files listen to the same event
// (htmx:afterRequest, htmx:beforeRequest, htmx:sseMessage, htmx.onLoad), the earlier file's listener runs first.
(function () {
  "use strict";

  // A fresh object, never one found under the name: an element with id="chat" would be `window.chat` until this runs.
  var chat = window.chat = {};

  chat.form = function form() { return document.getElementById("chat-form"); };

  // Whether a turn's answer in the log is drawn with its message before it (an answer resumed after a
  // decision has none; so has one a catch-up drew before its message was stored: chat/log.js, chat/tabs.js).
  chat.saidBefore = function saidBefore(answer) {
    var said = answer.previousElementSibling;
    return !!(said && said.matches("article.msg.user"));
  };

  // The tab's session storage, which a browser set to block sites' data refuses (reading it throws): what
  // it would keep (a hardware keyboard seen, words typed, that New chat was pressed) is then not kept, and
  // nothing else changes. `store(key, null)` forgets.
  chat.stored = function stored(key) {
    try { return window.sessionStorage.getItem(key); } catch (err) { return null; }
  };

  chat.store = function store(key, value) {
    try {
      if (value === null) window.sessionStorage.removeItem(key);
      else window.sessionStorage.setItem(key, value);
    } catch (err) { /* not kept */ }
  };
})();
