// The page's start, once every other chat file has added its listeners: the words typed kept put back,
// a turn running shown as running, focus after New chat, and the log at its end.
(function () {
  "use strict";

  var chat = window.chat, form = chat.form;

  document.addEventListener("DOMContentLoaded", function () {
    var f = form();
    if (f) chat.restoreDraft(f);
    if (f && f.dataset.running) chat.setRunning(true);
    if (f) chat.focusNewChat(f);
    chat.scrollLog(true);
  });
})();
