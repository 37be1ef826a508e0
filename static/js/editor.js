// The post editor: ask before leaving with unsaved changes, and take in changes made to the post
// meanwhile (by the assistant beside it, another tab or another member) without ever overwriting what
// the person is typing. The form's version follows what the person has seen: the server refuses a Save
// from an older one (blog.views.post_edit).
(function () {
  "use strict";

  var GONE = "This post can no longer be edited here (it was deleted, or your access changed).";
  var TOO_LONG_TO_COMPARE = "This post changed meanwhile, and the body here is too long to compare with it. " +
    "Shorten it and Save: the saved version is then shown beside your words, and nothing is lost.";

  function fields(form) {
    return { title: form.elements.title.value, body: form.elements.body.value };
  }

  function same(a, b) {
    // (a browser sends and shows line ends as CRLF or LF; the text is the same either way)
    var lines = function (s) { return s.replace(/\r\n?/g, "\n"); };
    return a.title === b.title && lines(a.body) === lines(b.body);
  }

  // A preview refused because this person's previews spent their share of rendering for now (429,
  // blog/previews.py) says so in the preview and its status, rather than leaving an old preview standing.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "preview" && event.detail.xhr && event.detail.xhr.status === 429) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // The shared title's note is a live region: the same note again (a pause in typing that left the title as
  // it was, letter case or spaces aside) is not swapped in, so it is not read out again.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "title-note") return;
    var answer = document.createElement("template");
    answer.innerHTML = event.detail.serverResponse;  // (as the browser writes it out, to compare like with like)
    if (answer.innerHTML === target.innerHTML) event.detail.shouldSwap = false;
  });

  // The preview is not a live region (it would read the whole post at every pause in typing): what the
  // writer must hear, that the body is too long to save, goes to its status, and only when that changes.
  document.addEventListener("htmx:afterSwap", function (event) {
    var status = document.getElementById("preview-status"), preview = event.detail.target;
    if (!status || !preview || preview.id !== "preview") return;  // (the SSE swaps name no target)
    var note = preview.querySelector("[data-preview-status]");
    var text = note ? note.textContent : "";
    if (status.textContent !== text) status.textContent = text;
  });

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("form[data-guard-unsaved]");
    if (!form) return;
    var saved = fields(form);  // what the server has, as far as this page knows
    var seen = { title: saved.title, body: saved.body, status: form.dataset.postStatus };  // the latest taken in or offered
    var submitting = false;

    // The member may no longer edit the post (made a viewer, or an author beside a published post): the
    // editor's line, redrawn, says so (data-editable="0", blog_views.post_head), with the notice that says why.
    // The title and body become read-only, not disabled, so what was typed can still be selected and copied
    // (a disabled field is also left out of the form); the cover's field and its Remove box, which hold no
    // words, are disabled, and Save with them. Given back (data-editable="1"), all is as it was, the words
    // still there. Leaving still asks while they differ from the saved ones.
    var locked = false;
    function follow(line) {
      if (!line || line.id !== "editor-head" || !line.dataset.editable) return;
      locked = line.dataset.editable === "0";
      form.elements.title.readOnly = form.elements.body.readOnly = locked;
      form.querySelectorAll("input[type=file], input[type=checkbox], button[type=submit]").forEach(function (elt) {
        if (locked && !elt.disabled) { elt.disabled = true; elt.dataset.locked = "1"; }
        else if (!locked && elt.dataset.locked) { elt.disabled = false; delete elt.dataset.locked; }
      });
      lockChoices();
    }

    // A card offering a change (below: "Use the saved version" / "Keep mine") follows the form too: its choices
    // are disabled while the form is locked (the saved words into a read-only form, or a version to save from
    // for a post that cannot be saved now, are nothing to choose), its diff still shown; given back, they work.
    function lockChoices() {
      var incoming = document.getElementById("incoming");
      if (!incoming) return;
      incoming.querySelectorAll("button[data-incoming]").forEach(function (button) { button.disabled = locked; });
    }
    document.body.addEventListener("htmx:load", function (event) { follow(event.detail && event.detail.elt); });
    form.addEventListener("submit", function (event) { if (locked) event.preventDefault(); });  // (Enter in the title)

    // The same notice again (the blog renamed while it shows) is not put in again, so it is not read out again.
    document.body.addEventListener("htmx:oobBeforeSwap", function (event) {
      var old = event.detail.target, fresh = event.detail.fragment && event.detail.fragment.querySelector("#editor-lock");
      if (old && old.id === "editor-lock" && fresh && old.tagName === fresh.tagName && old.textContent === fresh.textContent) {
        event.detail.shouldSwap = false;
      }
    });

    // A cover image over the cap is said beside its field before anything is sent (the server refuses one
    // too, blog/cover_form.py; one far over it, unread, could not give the typed words back).
    var cover = form.elements.cover;
    if (cover) {
      form.addEventListener("submit", function (event) {
        var file = cover.files && cover.files[0], max = Number(cover.dataset.maxBytes);
        if (!file || !max || file.size <= max) return;
        event.preventDefault();
        var error = document.getElementById("cover-error");
        if (!error) {
          error = document.createElement("p");
          error.className = "error field-error";
          error.id = "cover-error";
          error.setAttribute("role", "alert");
          cover.closest(".field").after(error);
          cover.setAttribute("aria-describedby", cover.getAttribute("aria-describedby") + " cover-error");
        }
        error.textContent = "“" + file.name + "” is larger than the " + cover.dataset.maxMb +
          " MB a cover may be. Choose a smaller image.";
        cover.setAttribute("aria-invalid", "true");
        cover.focus();
      });
    }

    function coverChanged() {
      var removing = form.elements.remove_cover;  // (read each time: it comes and goes with the cover)
      return Boolean((cover && cover.files && cover.files.length) || (removing && removing.checked));
    }

    form.addEventListener("submit", function (event) { if (!event.defaultPrevented) submitting = true; });
    window.addEventListener("beforeunload", function (event) {
      if (submitting || (same(fields(form), saved) && !coverChanged())) return;
      event.preventDefault();
      event.returnValue = "";  // (older browsers show their own prompt only when this is set)
    });

    // The version of the post the form's words are based on (blog.views.post_edit): a Save from an older
    // one is refused. It moves on only when the person has the newer version before them: taken in, or
    // offered and answered (either way), or when it holds the words the form holds already.
    function known(version) {
      saved = version;
      if (form.elements.version && version.version) form.elements.version.value = version.version;
    }

    function take(version) {
      form.elements.title.value = version.title;
      form.elements.body.value = version.body;
      known(version);
      form.elements.body.dispatchEvent(new Event("input", { bubbles: true }));  // refresh the preview
      form.elements.title.dispatchEvent(new Event("input", { bubbles: true }));  // and the shared title's note
    }

    var postId = form.dataset.postId;
    var box = document.getElementById("incoming");
    if (!postId || !box) return;

    // The version the card shown answers for: the one it offered, or a later one that changed only the
    // post's state (its words, and so the card's, the same).
    var offered = null;

    function offer(card, version) {
      offered = version;
      var choices = card.querySelector("[data-needs-script]");
      if (choices) choices.hidden = false;
      // Either choice removes the card with the button that had focus: the editor takes it back.
      card.querySelector("[data-incoming=take]").addEventListener("click", function () {
        take(offered);
        box.innerHTML = "";
        form.elements.body.focus();
      });
      card.querySelector("[data-incoming=keep]").addEventListener("click", function () {
        known(offered);  // the form still differs, so leaving asks
        box.innerHTML = "";
        form.elements.body.focus();
      });
      lockChoices();
    }

    // A Save refused because the post changed meanwhile: the page comes with the card, the person's words in
    // the form and the form at the saved version (a second Save keeps theirs). Leaving still asks.
    var refused = box.querySelector("#incoming-saved");
    if (refused) {
      saved = JSON.parse(refused.textContent);
      seen = saved;
      var shown = box.querySelector(".incoming");
      if (shown) offer(shown, saved);
    }

    // The cover as saved now (blog/_cover.html, in the editor's look at its post) put in place of the one shown:
    // the picture (its URL names the cover, so a replaced one is not the cached one), the Remove box (one
    // already shown stays, ticked or not, while there is a cover) and the field's hint. The field itself,
    // and the image chosen in it, are never touched. Whether the cover changed, as the page knew it.
    function showCover(holder) {
      var next = holder.querySelector("#incoming-cover"), field = cover && cover.closest(".cover-field");
      if (!next || !field) return false;
      var parts = next.content;
      var figure = form.querySelector("figure.cover"), fresh = parts.querySelector("figure.cover");
      if (figure && !fresh) figure.remove();
      else if (fresh && !(figure && figure.isEqualNode(fresh))) {
        if (figure) figure.replaceWith(fresh);
        else field.before(fresh);
      }
      var box = form.elements.remove_cover, freshBox = parts.querySelector("#remove-cover");
      if (box && !freshBox) box.closest("label").remove();
      else if (freshBox && !box) field.prepend(freshBox.closest("label"));
      var hint = document.getElementById("cover-hint"), freshHint = parts.querySelector("#cover-hint");
      if (hint && freshHint && hint.textContent !== freshHint.textContent) hint.textContent = freshHint.textContent;
      var changed = (next.dataset.cover || "") !== (form.dataset.cover || "");
      form.dataset.cover = next.dataset.cover || "";
      return changed;
    }

    // Who changed the post, and how, as the server said it (blog.views.changed_by).
    function whoChanged(version) { return version.changed || "This post changed"; }

    // One line in place of what the box showed; `heard`: a change to the post heard and shown (.incoming-note).
    function say(text, heard) {
      box.innerHTML = "";
      var notice = document.createElement("p");
      notice.className = heard ? "notice incoming-note" : "notice";
      notice.textContent = text;
      box.appendChild(notice);
    }

    function incoming() {
      var request = new XMLHttpRequest();
      request.open("POST", form.dataset.incomingUrl);
      request.onload = function () {
        // 413: the form's body is over the limit, nothing to compare. The form stays at the version it had,
        // so a Save, once it is shorter, is refused and shows the saved version beside the words.
        if (request.status === 413) { say(TOO_LONG_TO_COMPARE); return; }
        if (request.status !== 200) { say(GONE); return; }  // (204: deleted meanwhile; 404: no longer a member)
        var holder = document.createElement("div");
        holder.innerHTML = request.responseText;
        var version = JSON.parse(holder.querySelector("#incoming-saved").textContent);
        var newCover = showCover(holder);
        // One change can be announced twice (the chat's stream and the blog's channel): once is enough.
        if (same(version, seen) && version.status === seen.status) {
          var open = box.querySelector(".incoming");
          // (An open card's words are this version's too: a cover changed since, its choices answer for this one.)
          if (open) offered = version;
          if (!open && same(fields(form), saved)) known(version);
          else if (newCover && !open && same(version, saved)) {
            // Only the cover changed, and the person sees it now: their words are still based on the saved
            // ones, so the form moves on to this version (a Save keeps the words, and the cover as they chose).
            known(version);
          }
          if (newCover && !open) {
            var now = form.dataset.cover ? "the editor shows its cover now." : "it has no cover now.";
            say(whoChanged(version) + "; " + now, true);
          }
          return;
        }
        // Only its state changed since the page last looked (published or unpublished: the status differs, else
        // it was answered above).
        var stateOnly = same(version, seen);
        seen = version;
        var state = holder.querySelector("#incoming-state");
        var current = document.getElementById("post-state");
        if (state && current) current.replaceWith(state.content.cloneNode(true));
        if (stateOnly) {
          // Nothing about the words to choose, whatever was typed: the state line above says the new state. Words
          // based on the saved ones (typed or not) stay, and the form moves on to this version, so a Save keeps
          // them. A card already open stays as it is (who changed the words, and how) and answers for this
          // version now; else no card (it would offer the person's own edits as the change), a note of who did it.
          var based = same(version, saved);
          if (based) known(version);
          if (box.querySelector(".incoming")) { offered = version; return; }
          if (based) {
            say(whoChanged(version) + ".", true);
            return;
          }
        }
        var card = holder.querySelector(".incoming");
        box.innerHTML = "";
        if (same(fields(form), saved)) {
          // Nothing typed since the last save: the editor simply shows the new version.
          if (!same(version, saved)) {
            take(version);
            say(whoChanged(version) + "; the editor shows the saved version.", true);
          } else {
            known(version);  // (the saved words are those the form holds)
          }
          return;
        }
        if (!card) { known(version); return; }  // the saved version is what the form holds already
        box.appendChild(card);
        offer(card, version);
      };
      var sent = new FormData(form);
      sent.delete("cover");  // (the comparison is of the words: the chosen image stays in the browser)
      request.send(sent);
    }

    document.body.addEventListener("chat:effects", function (event) {
      var effects = (event.detail && event.detail.effects) || [];
      var ours = effects.filter(function (effect) {
        return String(effect.type || "").indexOf("post.") === 0 && String(effect.id) === postId;
      }).map(function (effect) { return effect.type; });
      if (!ours.length) return;
      incoming();
      // Its line too when it was published or unpublished: the post may no longer be the member's to change (an
      // author's role does not publish), or be theirs again; blog_views.post_head says so, and the form follows.
      // (Not for a deleted post: it has no line to draw; incoming() says it is gone.)
      if (ours.indexOf("post.published") >= 0 || ours.indexOf("post.unpublished") >= 0) {
        htmx.trigger(document.body, "editor:post-changed");
      }
    });

    // The page's stream open again after it was down (chat/tabs.js): a change to the post made meanwhile was not
    // heard, so the editor looks at its post as it would on hearing one (nothing new: nothing shown).
    document.body.addEventListener("chat:missed", incoming);
  });
})();
