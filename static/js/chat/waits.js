// Waits and failures, said calmly: a wait the server counted counts down, and a request that failed
// says so where the person is (the chat's log, or above the blog's list).
(function () {
  "use strict";

  var chat = window.chat, scrollLog = chat.scrollLog;

  // A wait the server counted ("Try again in 36 s.") counts down where it is shown, and ends saying the
  // person can send now. The ticking number is hidden from screen readers (it sits in a live region, which
  // would read it out at every tick): they keep the server's sentence, left in place (moved, it would be
  // announced again) and only hidden from sight, and hear once that the wait is over.
  // A wait in words, as the server says it (agent/templatetags/agent_waits.py): rounded up.
  function waitWords(seconds) {
    if (seconds <= 90) return seconds + " s";
    if (seconds < 3600) return Math.ceil(seconds / 60) + " min";
    if (seconds < 48 * 3600) return Math.ceil(seconds / 3600) + " h";
    return Math.ceil(seconds / 86400) + " days";
  }

  function countDown(el) {
    if (el.dataset.counting) return;
    el.dataset.counting = "1";
    var end = Date.now() + Number(el.dataset.retrySeconds) * 1000;
    var heard = el.firstElementChild, sentence = heard.textContent;
    var shown = document.createElement("span");
    shown.setAttribute("aria-hidden", "true");
    heard.classList.add("visually-hidden");
    el.prepend(shown);
    (function tick() {
      var left = Math.ceil((end - Date.now()) / 1000);
      if (left <= 0) { el.textContent = el.dataset.retryDone; waited(el); return; }
      shown.textContent = sentence.replace(/\d+ (s|min|h|days)\b/, waitWords(left));
      setTimeout(tick, (end - Date.now()) % 1000 || 1000);  // at each whole second left
    })();
  }

  // A spent budget's answer offers Try again (agent/_try_again.html), hidden while its wait lasts; shown,
  // a log read to its end still shows its end.
  function waited(el) {
    var flow = el.closest(".flow"), again = flow && flow.querySelector(".try-again[hidden]");
    if (!again) return;
    again.hidden = false;
    scrollLog();
  }

  htmx.onLoad(function (root) {
    if (root.matches && root.matches("[data-retry-seconds]")) countDown(root);
    if (root.querySelectorAll) root.querySelectorAll("[data-retry-seconds]").forEach(countDown);
  });

  // A request of the chat panel that failed (the site unreachable, the chat no longer theirs, an error
  // on the server) says so in the chat's log, calmly, as the server's own notices do; the form is
  // ready again (above) with what was typed still in it, to send again.
  var FAILED = {
    network: "The site couldn't be reached. Check your connection and try again.",
    gone: "That isn't available to you any more. Reload the page to see where things stand.",
    server: "Something went wrong on our side. Please try again in a moment."
  };
  function failed(e, why) {
    var log = document.getElementById("chat-log");
    if (listAction(e)) { listFailed(listAction(e), why); return; }
    if (!log || !e.target.closest("#assistant")) return;
    var note = document.createElement("p");
    note.className = "chat-error notice";
    note.textContent = FAILED[why];
    log.appendChild(note);
    scrollLog();
  }
  // A request of the blog page's list (Publish, Unpublish) that failed changed nothing and said nothing:
  // it says so above the list, one notice said anew each time, gone with the next click. (The list's own
  // redraws are not a person's click: a failed one is the live stream's to tell, in #live-status.)
  function listAction(e) {
    var list = e.target.closest && e.target.closest("#post-list");
    return list && list !== e.target ? list : null;
  }
  function listFailed(list, why) {
    var note = document.getElementById("post-list-error");
    if (note) note.remove();  // (a new node: an alert is announced as it appears)
    note = document.createElement("p");
    note.id = "post-list-error";
    note.className = "notice";
    note.setAttribute("role", "alert");
    note.textContent = FAILED[why];
    list.parentNode.insertBefore(note, list);
  }
  document.addEventListener("htmx:beforeRequest", function (e) {
    var note = document.getElementById("post-list-error");
    if (note && listAction(e)) note.remove();
  });
  document.addEventListener("htmx:sendError", function (e) { failed(e, "network"); });
  document.addEventListener("htmx:responseError", function (e) {
    var status = e.detail.xhr.status;
    failed(e, status === 403 || status === 404 || status === 410 ? "gone" : "server");
  });
})();
