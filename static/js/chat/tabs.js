// The chat across the person's tabs and devices: notices of what happened elsewhere and the news they
// fetch, the catch-up each time the page's stream opens, taking up a chat started elsewhere, and the page
// read again when it is shown again.
(function () {
  "use strict";

  var chat = window.chat, form = chat.form;

  // The same chat open in another tab or device of the person: its notices (blog/live.py's `chat` events,
  // agent/notices.py) name a turn that started there, or a card decided there; what this page does not
  // show yet is fetched (chat_views.news) and drawn as that tab drew it, the answer followed on its own
  // stream. One at a time, and never while this page's own request of the panel is under way: its answer
  // may be the very turn or decision the notice names (that tab is this one), and is drawn once.
  // A page showing no chat hears instead of a chat its person started elsewhere ({"chat": id}, blog/live.py's
  // chat_opened): the panel takes it up (chat_panel.panel_chat: its log, its form, the page's stream now
  // naming it), the words typed here kept. Once it shows a chat (this tab's own first message, say), such
  // a notice only adds to its list of earlier chats (refreshList, below): a chat shown is never switched.
  var news = [], fetching = false, takingUp = false;

  // A turn already shown is fetched again only when no message is drawn before it: a catch-up that read the
  // turn in the moment after it began and before its message was stored drew its answer alone, and its
  // notice, heard later, brings the message (chat/log.js puts it in before the answer, and leaves the answer
  // as it is). An answer resumed after a decision has no message: fetched again, it brings nothing new.
  function newsQuery(notice) {
    var turn = notice.turn && document.getElementById("turn-" + notice.turn);
    if (notice.turn && !(turn && chat.saidBefore(turn))) return "turn=" + encodeURIComponent(notice.turn);
    var card = notice.approval && document.getElementById("approval-" + notice.approval);
    if (card && !card.classList.contains("decided")) return "approval=" + encodeURIComponent(notice.approval);
    return "";
  }

  // The id of the last turn the log shows ("" for none).
  function lastTurn() {
    var shown = document.querySelectorAll("#chat-log article.msg.assistant[id^='turn-']");
    return shown.length ? shown[shown.length - 1].id.slice("turn-".length) : "";
  }

  function drainNews() {
    var f = form();
    if (!f) { news = []; return; }
    if (fetching || document.querySelector("#assistant .htmx-request")) return;
    var url = "", swap = "beforeend", after = null;
    // A page of a chat's earlier turns (`?before=`: "Earlier messages" pressed before the scripts ran) shows
    // them with the way back to the latest below: the turns after them are not drawn after them, one by one.
    var earlierPage = !!document.querySelector("#chat-log > .latest");
    while (!url && news.length) {
      var notice = news.shift();
      if (earlierPage && (notice.after || notice.turn)) continue;
      if (notice.chat && f.dataset.panelUrl) {
        url = f.dataset.panelUrl + "?chat=" + encodeURIComponent(notice.chat);
        swap = "innerHTML";
      } else if (notice.latest && f.dataset.panelUrl) {
        url = f.dataset.panelUrl + "?latest=1";
        swap = "innerHTML";
      } else if (notice.after && f.dataset.newsUrl) {
        after = lastTurn();
        url = f.dataset.newsUrl + "?after=" + encodeURIComponent(after);
      } else if (f.dataset.newsUrl) {
        var query = newsQuery(notice);
        if (query) url = f.dataset.newsUrl + "?" + query;
      }
    }
    if (!url) return;
    fetching = true;
    takingUp = swap === "innerHTML";
    var done = function () {
      fetching = takingUp = false;
      if (after !== null && lastTurn() !== after) news.unshift({ after: true });  // and the one after it, if any
      drainNews();
    };
    htmx.ajax("GET", url, { target: "#chat-log", swap: swap }).then(done, done);
  }

  // Notices are not sent again: those of a time the page's stream was not open (before it first opened,
  // or while it reconnects) were never heard. So each time it opens, a page showing a chat asks for what
  // they would have brought: the cards still waiting here (decided elsewhere meanwhile?), then the turns
  // after the last one it shows, one at a time, until there is none (chat_views.news, ?after=).
  // Opening after it was down (it failed, or the server ended it: the extension connects again), the page
  // also reads again what the blog's changes refresh (chat:missed, beside chat:effects: the post list, the
  // editor's look at its post, editor.js), and a page showing no chat takes up its person's latest chat
  // of this panel, if they started one meanwhile (chat_panel.panel_chat, ?latest=1), as a notice would.
  // Opening for the first time (or a stream put in place of the page's, naming a chat it took up), the
  // page does so only if something changed since it was drawn: its stream's first event is the blog's
  // mark as it is now (`mark`, blog/live.py), which the page compares with the one it was drawn from
  // (data-drawn) or last heard; a page showing no chat hears in it its person's latest chat of the panel,
  // if any (started since it was drawn: it would show it), and takes that up. Nothing changed: no request.
  // The page compares its header's mark too (`head`: the blog's title, description and owner and its member's seat,
  // which a rename, a hand-over or a seat saved changes without a revision), and reads its header (the blog's, or
  // the editor's line) again (chat:missed) when that differs, whose answer brings the assistant's column the seat
  // allows now (blog_views.column_context).
  var streamDown = false, reopened = false, drawnMark = null, drawnHead = null;

  document.addEventListener("htmx:sseMessage", function (e) {
    if (!e.detail || e.detail.type !== "mark" || !e.target || !e.target.closest("#page-stream")) return;
    var mark;
    try { mark = JSON.parse(e.detail.data); } catch (err) { return; }
    var changed = (drawnMark !== null && mark.posts !== drawnMark) || (drawnHead !== null && mark.head !== drawnHead);
    var f = form();
    drawnMark = mark.posts;
    if (drawnHead !== null) drawnHead = mark.head;
    if (reopened) return;  // (caught up already as it opened, below)
    if (changed) htmx.trigger(document.body, "chat:missed");
    if (mark.chat && f && !f.dataset.chat && f.dataset.panelUrl) {
      news.push({ chat: mark.chat });
      drainNews();
    }
  });

  document.addEventListener("htmx:sseError", function (e) {
    if (e.target && e.target.id === "page-stream") streamDown = true;
  });

  document.addEventListener("htmx:sseOpen", function (e) {
    if (!e.target || e.target.id !== "page-stream") return;
    var missed = streamDown, f = form();
    streamDown = false;
    reopened = missed;
    if (missed) htmx.trigger(document.body, "chat:missed");
    if (f && !f.dataset.chat && f.dataset.panelUrl && missed) {
      if (!news.some(function (notice) { return notice.latest; })) news.push({ latest: true });
      drainNews();
    }
    if (!f || !f.dataset.newsUrl) return;
    document.querySelectorAll("#chat-log .approval[id^='approval-']:not(.decided)").forEach(function (card) {
      news.push({ approval: card.id.slice("approval-".length) });
    });
    if (!news.some(function (notice) { return notice.after; })) news.push({ after: true });
    drainNews();
  });

  document.addEventListener("htmx:sseMessage", function (e) {
    if (!e.detail || e.detail.type !== "chat") return;
    var notice;
    try { notice = JSON.parse(e.detail.data); } catch (err) { return; }
    var f = form();
    // (A chat's first message is heard as a chat started, for the lists that left it out while nothing
    // was said in it, blog.live.first_message: the page showing that chat has it listed already.)
    if (notice.chat && f && f.dataset.chat) { if (notice.chat !== f.dataset.chat) chat.refreshList(); return; }
    news.push(notice);
    drainNews();
  });

  document.addEventListener("htmx:afterRequest", function () { drainNews(); });

  // The page's stream names this page (?page=, one key per page shown): when the page points it at
  // another chat (taking one up, its first message) or it reconnects, the stream it opens replaces this
  // page's earlier one on the server at once, which frees that one's place among the person's open
  // pages then, not when the server next writes to it (blog/live.py, agent/streams.py).
  var pageKey = Math.random().toString(36).slice(2, 12) + Date.now().toString(36);

  document.addEventListener("htmx:beforeProcessNode", function (e) {
    var elt = e.target, url = elt && elt.id === "page-stream" && elt.getAttribute("sse-connect");
    if (url && drawnMark === null && elt.dataset.drawn) drawnMark = elt.dataset.drawn;  // (the page's, as drawn)
    // (the page's as drawn; or a stream sent with a redrawn header and assistant's column, which says what they
    // show now: its first mark is compared with that, not with what the page first showed)
    if (url && elt.dataset.head) drawnHead = elt.dataset.head;
    // (a header or editor's line, drawn or redrawn, carries the mark it was drawn from: a rename or a role that
    // keeps the column sends no stream, and a stream put in place later, e.g. naming a chat taken up, would
    // otherwise be compared with the mark of before and ask a needless catch-up)
    if (elt && (elt.id === "blog-head" || elt.id === "editor-head") && elt.dataset.head) drawnHead = elt.dataset.head;
    if (!url || /[?&]page=/.test(url)) return;
    elt.setAttribute("sse-connect", url + (url.indexOf("?") === -1 ? "?" : "&") + "page=" + pageKey);
  });

  // The tab shown again (back from another tab or window): what may have changed there is read again
  // (hx-trigger="chat:shown from:body"; a trigger's [filter] is eval'd, which the site's CSP forbids).
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") htmx.trigger(document.body, "chat:shown");
  });

  // Back (or forward) to the page from the browser's memory, it is as it was left, its streams closed:
  // it is read again, so an answer that was streaming then is followed (or shown whole) and what other
  // tabs did meanwhile is there. (The server marks these pages never to be cached, for the same reason.)
  window.addEventListener("pageshow", function (e) {
    if (e.persisted && form()) location.reload();
  });

  chat.takingUp = function () { return takingUp; };  // (the form then keeps the words typed, composer.js)
})();
