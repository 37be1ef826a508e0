// The list of earlier chats in the panel: the chat shown named by its first message, and the list read
// again when a chat is started elsewhere or the list is opened.
(function () {
  "use strict";

  var chat = window.chat, form = chat.form;

  // The chat shown, "Untitled chat" in the list of earlier chats (it had no message yet), is named by its
  // first message once sent, as a reload names it (blog/chat_panel.labelled): its words, one space
  // apart, cut at 48 characters between two of what a reader sees as one character, then "…".
  var LABEL_CHARS = 48;
  function nameChat(text) {
    var label = document.querySelector(".history [aria-current] .chat-label[data-untitled]");
    var words = text.split(/\s+/).filter(Boolean).join(" ");
    if (!label || !words) return;
    if (Array.from(words).length > LABEL_CHARS) {
      var kept = [], count = 0;
      var pieces = window.Intl && Intl.Segmenter
        ? Array.from(new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(words), function (s) { return s.segment; })
        : Array.from(words);
      for (var i = 0; i < pieces.length; i++) {
        count += Array.from(pieces[i]).length;
        if (count > LABEL_CHARS - 1) break;
        kept.push(pieces[i]);
      }
      words = kept.join("").replace(/\s+$/, "") + "\u2026";
    }
    label.textContent = words;
    label.removeAttribute("data-untitled");
  }

  // A page showing a chat hears too of a chat its person starts in another tab ({"chat": id}): that chat
  // joins this page's list of earlier chats (chat_panel.chat_list), and the chat shown stays. The list is
  // read again when the person opens it too, so a chat named since (by its first message) shows its name,
  // and one deleted elsewhere leaves it (down to one chat, the one shown: the list goes, as on a reload).
  // Only the list's entries are put in place: the list stays open or closed, and focus stays where it is;
  // and only when they changed, so a list opened on entries still true is not swapped under a finger
  // that is tapping one of them.
  function listed(list) {
    return Array.prototype.map.call(list.querySelectorAll("a"), function (a) {
      var time = a.querySelector("time");
      return [a.getAttribute("href"), a.getAttribute("aria-current"), (a.querySelector(".chat-label") || a).textContent,
        time ? time.getAttribute("datetime") : ""].join("\u0000");
    }).join("\n");
  }

  function refreshList() {
    var f = form(), tools = document.querySelector("#assistant .assistant-tools[data-list-url]");
    if (!f || !f.dataset.chat || !tools) return;
    fetch(tools.dataset.listUrl + "?chat=" + encodeURIComponent(f.dataset.chat), { credentials: "same-origin" })
      .then(function (answer) { return answer.status === 200 ? answer.text() : null; })
      .then(function (html) {
        if (html === null) return;  // (204: signed out meanwhile, or no longer here; the list stays)
        var parsed = document.createElement("template");
        parsed.innerHTML = html;
        var fresh = parsed.content.querySelector(".history"), shown = tools.querySelector(".history");
        // One chat or none left (the others deleted elsewhere): no list, as a reload draws it.
        if (!fresh) { if (shown) shown.remove(); return; }
        var entries = fresh.querySelector("ul"), old = shown && shown.querySelector("ul");
        if (!shown) tools.prepend(fresh);
        else if (listed(old) !== listed(entries)) old.replaceWith(entries);
      })
      .catch(function () {});  // (unreachable now: the list stays as it was, and is read again when opened)
  }

  document.addEventListener("toggle", function (e) {
    if (e.target.matches && e.target.matches("#assistant details.history") && e.target.open) refreshList();
  }, true);

  chat.nameChat = nameChat;
  chat.refreshList = refreshList;
})();
