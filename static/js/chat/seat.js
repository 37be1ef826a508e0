// The assistant's column follows the member's seat (blog_views.blog_head decides, and sends the other
// column out of band when the assistant was taken away from them or allowed again; a panel that stays is
// never redrawn). Here only what the page holds and the server cannot know: the words typed in the panel
// taken away are kept in the note, said not to have been sent, as long as the note is shown (redrawn, it keeps
// them); a panel that comes back starts as a page load starts it (a turn running shown as running, the log at
// its end). The same on the blog page and beside a post's editor, whose own form is never touched.
(function () {
  "use strict";

  var chat = window.chat, form = chat.form;

  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var old = e.detail.target, note = e.detail.fragment && e.detail.fragment.querySelector("#assistant-off");
    if (!old || !note) return;
    if (old.id === "assistant") {
      var f = form(), text = f && f.querySelector("textarea");
      var box = note.querySelector("[data-unsent]");
      if (!text || !text.value.trim() || !box) return;
      box.querySelector("textarea").value = text.value;
      box.hidden = false;
    } else if (old.id === "assistant-off") {
      // A note drawn again (the blog renamed, a seat saved: any header's redraw) keeps the words it was keeping.
      var kept = old.querySelector("[data-unsent]:not([hidden])");
      if (kept && !note.querySelector("[data-unsent]")) note.appendChild(kept);
    }
  });

  htmx.onLoad(function (root) {
    if (!root || root.id !== "assistant") return;
    var f = form();
    if (f && f.dataset.running) chat.setRunning(true);
    chat.scrollLog(true);
  });
})();
