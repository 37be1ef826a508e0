// The chat's log: it follows what arrives while the person is at its end, keeps their place when
// "Earlier messages" brings older turns, draws a turn once, and knows whether a turn runs (nothing is sent,
// Stop shows) from the requests that start one and the streams that end it.
(function () {
  "use strict";

  var chat = window.chat, form = chat.form;

  function setRunning(running) {
    var f = form();
    if (!f) return;
    var text = f.querySelector("textarea");
    var send = f.querySelector("#chat-send");
    var stop = f.querySelector("#chat-stop");
    // While an answer runs the box stays open to write the next message in (files may be chosen for it
    // too), but nothing is sent until the answer ends: Send says it is unavailable (aria-disabled, so it
    // stays in the tab order and is heard as such; a press is refused, composer.js) and Enter does nothing.
    // (The form rested before, disabled: the next message could not be written while reading the answer.)
    f.dataset.running = running ? "1" : "";
    if (running) send.setAttribute("aria-disabled", "true");
    else send.removeAttribute("aria-disabled");
    stop.hidden = !running;
    stopping(false);
    // The answer is over: the person who waited in the chat may write again. One who went elsewhere
    // meanwhile (the post list, an editor) keeps their place; focus is never taken from them.
    var active = document.activeElement;
    if (!running && (!active || active === document.body || (f.closest("#assistant") || f).contains(active))) text.focus();
  }

  // Stop takes a moment to reach the turn (when it runs on another worker, up to the watcher's poll):
  // meanwhile the button says it was heard, and cannot be pressed again.
  function stopping(on) {
    var stop = document.getElementById("chat-stop");
    if (!stop) return;
    stop.disabled = on;
    stop.textContent = on ? "Stopping…" : "Stop";
  }

  // The log follows what arrives while the person is at its end; scrolled up to read, they stay
  // where they are until they come back down (or send something). Where they are is read just
  // before each swap, not from scroll events, which arrive a frame late.
  var following = true;

  function atEnd() {
    var log = document.getElementById("chat-log");
    return !log || log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  }

  document.addEventListener("htmx:sseBeforeMessage", function () { following = atEnd(); });
  // A swap elsewhere on the page (the grant line read again, the post list) changes nothing in the log:
  // whether it follows is where the person is now, not where they were at the page's load or the last
  // event. So do turns that come in below the ones shown (asked for as the page's stream opens, or on a
  // notice, tabs.js): a person who scrolled up to read stays there. (The person's own message brings them
  // to its end; a swap of the log anew, or of the panel around it, keeps what the request began with.)
  document.addEventListener("htmx:beforeSwap", function (e) {
    var log = document.getElementById("chat-log"), target = e.detail.target;
    if (!log || !target) return;
    var elt = e.detail.requestConfig && e.detail.requestConfig.elt;
    var how = (e.detail.swapOverride || (elt && elt.getAttribute && elt.getAttribute("hx-swap")) || "").split(/\s+/)[0];
    var below = target === log && how === "beforeend" && elt !== form();
    if (below || (!target.contains(log) && !log.contains(target))) following = atEnd();
  });

  function scrollLog(force) {
    var log = document.getElementById("chat-log");
    if (log && (force || following)) {
      log.scrollTop = log.scrollHeight;
      following = true;
    }
  }

  // "Earlier messages" puts older turns above what the person is reading: the log keeps its place
  // (its distance from the end), and focus moves to the turns it brought. (The button is gone once
  // they are in: htmx tells of the request's end from the log, so the request is remembered here.)
  var fromEnd = null;

  document.addEventListener("htmx:beforeRequest", function (e) {
    if (e.detail.elt.hasAttribute("data-earlier")) {
      var log = document.getElementById("chat-log");
      fromEnd = log ? log.scrollHeight - log.scrollTop : 0;
      return;
    }
    if (e.detail.elt === form()) { setRunning(true); following = true; }
    if (e.detail.elt.id === "chat-stop") stopping(true);
  });

  // Any answer that opens a turn's stream (a sent message, an approved action) means a turn runs. (The
  // page's own stream, which a panel's answer may bring too, blog/_page_stream.html, closes on another event.)
  function opensTurn(answer) { return answer.indexOf('sse-close="end"') !== -1; }

  // The answer to a message that was sent (not one kept in the box, `data-kept`, the chat's running answer
  // shown instead) opens its turn's stream.
  function sent(answer) { return opensTurn(answer) && answer.indexOf("data-kept") === -1; }

  // A page of the chat's earlier turns (`?before=`: "Earlier messages" pressed before the scripts ran) shows
  // them with the way back to the latest below. A message sent from it is not drawn below those turns: once
  // it is sent, the page goes to the latest turns, which show it and follow its answer.
  function backToLatest() { return document.querySelector("#chat-log > .latest a"); }

  document.addEventListener("htmx:beforeSwap", function (e) {
    var elt = e.detail.requestConfig && e.detail.requestConfig.elt;
    if (elt === form() && backToLatest() && sent(e.detail.serverResponse || "")) e.detail.shouldSwap = false;
  });

  document.addEventListener("htmx:afterRequest", function (e) {
    if (fromEnd !== null && e.detail.elt.closest && e.detail.elt.closest("#chat-log")) {
      var log = document.getElementById("chat-log"), turns = log && log.querySelector(".earlier-turns:not([data-seen])");
      if (log) log.scrollTop = log.scrollHeight - fromEnd;
      if (turns) { turns.setAttribute("data-seen", ""); turns.focus({ preventScroll: true }); }
      fromEnd = null;
      return;
    }
    if (e.detail.elt.id === "chat-stop") {
      if (!e.detail.successful) stopping(false);  // not heard: it can be pressed again
      return;
    }
    var f = form();
    var answer = e.detail.successful ? e.detail.xhr.responseText : "";
    var started = opensTurn(answer);
    // Running only while an answer streams in the log: an answer brought that had already ended (its stream
    // closed at once), or one left out as drawn already (a turn fetched again), marks nothing as answering.
    var streaming = started && !!document.querySelector("#chat-log article.msg.assistant.streaming");
    if (e.detail.elt === f) {
      // (data-kept: not sent, the chat's running answer shown instead; the words wait in the box for it.
      // Sent: what was sent leaves the box and the tray, and what was written or chosen since stays.)
      if (sent(answer)) {
        chat.clearSent(f);
        if (backToLatest()) { location.assign(backToLatest().href); return; }
      }
      setRunning(streaming);
    } else if (streaming) {
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

  // "Try again" belongs to the chat's last answer (it failed for now): once a later turn shows (a message sent,
  // an answer asked for again, one heard from another tab), it goes. Pressed anyway (another tab's), the
  // server answers that there is nothing to try again.
  document.addEventListener("htmx:afterSettle", function () {
    var again = document.getElementById("try-again"), log = document.getElementById("chat-log");
    if (!again || !log) return;
    var answers = log.querySelectorAll("article.msg.assistant[id^='turn-']");
    var last = answers.length ? answers[answers.length - 1] : null;
    if (!last || !last.contains(again) || (last.nextElementSibling && last.nextElementSibling.matches("article.msg.user"))) again.remove();
  });

  // A turn is drawn once, by whichever answer brings it first: this page's own message (or decision) and
  // the catch-up asking at the same moment may both bring it, or a notice's. What an answer appending to
  // the log brings of a turn the log shows already (its message, its answer) is left out; the rest (a
  // card decided, a form, out of band) stays. But a catch-up that read the turn in the moment after it
  // began and before its message was stored drew the answer alone: the message this answer brings then
  // goes in before it (else the person's own message was missing until a reload).
  document.addEventListener("htmx:beforeSwap", function (e) {
    var log = e.detail.target, elt = e.detail.requestConfig && e.detail.requestConfig.elt;
    if (!log || log.id !== "chat-log" || !e.detail.shouldSwap || typeof e.detail.serverResponse !== "string") return;
    var how = e.detail.swapOverride || (elt && elt.getAttribute && elt.getAttribute("hx-swap")) || "";
    if (how.split(/\s+/)[0] !== "beforeend") return;  // (innerHTML: the log drawn anew, nothing doubled)
    var parsed = document.createElement("template"), message = [], dropped = false;
    parsed.innerHTML = e.detail.serverResponse;
    Array.prototype.slice.call(parsed.content.childNodes).forEach(function (node) {
      if (node.nodeType !== Node.ELEMENT_NODE || node.hasAttribute("hx-swap-oob")) return;
      if (node.matches("article.msg.user")) { message.push(node); return; }
      if (!node.matches("article.msg.assistant[id^='turn-']")) return;
      var shown = document.getElementById(node.id);
      if (shown) {
        if (message.length && !chat.saidBefore(shown)) {
          message.forEach(function (article) { shown.parentNode.insertBefore(article, shown); });  // (moved)
          message = [];
        }
        message.concat([node]).forEach(function (left) { left.remove(); });
        dropped = true;
      }
      message = [];
    });
    if (dropped) e.detail.serverResponse = parsed.innerHTML;
  });

  // A turn's stream closed: its answer is over. (Not the page's own stream, which closes when it is
  // replaced by one naming the chat the panel took up, or when superseded: a turn may still run.)
  document.addEventListener("htmx:sseClose", function (e) {
    if (!e.target.closest || !e.target.closest("#chat-log")) return;
    var article = e.target.closest("article.streaming");
    if (article) {
      article.classList.remove("streaming");
      // (a stream closed before its final fragment: what it brought is all there is, and may be read)
      article.querySelectorAll("[aria-busy]").forEach(function (el) { el.removeAttribute("aria-busy"); });
    }
    setRunning(false);
    scrollLog();
  });

  chat.setRunning = setRunning;
  chat.scrollLog = scrollLog;
})();
