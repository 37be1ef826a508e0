// The chat's form: what Enter does and the box's hint, the words a message needs, the attachments' tray,
// the words typed kept (a form put in place of this one, a page left and come back to) and New chat's focus.
(function () {
  "use strict";

  var chat = window.chat, form = chat.form, stored = chat.stored, store = chat.store;

  // What Enter does. With a mouse or trackpad at hand (any-pointer: fine: a desktop, a laptop with a touch
  // screen, a tablet with a trackpad) Enter sends and Shift+Enter adds a line. On a touch screen alone the
  // on-screen keyboard's Enter is the only way to a new line, and Send is beside the box: there Enter adds a
  // line. A hardware keyboard on a touch screen (a tablet's) gives itself away by a key no on-screen keyboard
  // sends (Shift, Tab, an arrow, Escape, a modifier): from then on, for the rest of the tab's visit, Enter
  // sends. A key the browser cannot name ("Unidentified", what Android's on-screen keyboards send) turns it
  // back. The box's placeholder always says what Enter does.
  var finePointer = window.matchMedia("(any-pointer: fine)");
  var KEYBOARD_ONLY = /^(Shift|Tab|Escape|Control|Alt|Meta|CapsLock|Home|End|PageUp|PageDown|Arrow(Up|Down|Left|Right))$/;
  var KEYBOARD_SEEN = "chat:hardware-keyboard";
  var SENDS_HINT = "Message the assistant…  (Enter sends, Shift+Enter for a new line)";
  var LINE_HINT = "Message the assistant…";
  var hardwareKeyboard = stored(KEYBOARD_SEEN) === "1";

  function keyboardSeen(seen) {
    if (seen === hardwareKeyboard) return;
    hardwareKeyboard = seen;
    store(KEYBOARD_SEEN, seen ? "1" : null);
    showHint();
  }

  function enterSends() { return finePointer.matches || hardwareKeyboard; }

  function showHint(text) {
    text = text || document.getElementById("chat-text");
    if (text) text.placeholder = enterSends() ? SENDS_HINT : LINE_HINT;
  }

  // Dropping and pasting files are this script's (below): the page's Attach offers only choosing them.
  var ATTACH_HINT = "Attach images, PDFs or text files (or drop or paste them here)";

  htmx.onLoad(function (root) {
    var text = root.querySelector && root.querySelector("#chat-text");
    if (text) showHint(text);
    var attach = root.querySelector && root.querySelector("#chat-form .attach-button");
    if (attach) attach.title = ATTACH_HINT;
  });
  finePointer.addEventListener("change", function () { showHint(); });

  document.addEventListener("keydown", function (e) {
    if (KEYBOARD_ONLY.test(e.key)) keyboardSeen(true);
    else if (e.key === "Unidentified") keyboardSeen(false);
    var f = form();
    if (!f || e.target !== f.querySelector("textarea")) return;
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && enterSends()) {
      e.preventDefault();
      if (f.dataset.running) return;  // (the words stay, to send when the answer ends)
      if (!e.target.value.trim()) {
        // Nothing to send: said so when there is something in the box or the tray (an empty box stays quiet).
        checkWords(f);
        if (e.target.value || filesOf(f).files.length) e.target.reportValidity();
        return;
      }
      htmx.trigger(f, "submit");
    }
  });

  // Nothing is sent while an answer runs, whichever way the form would be: Send (aria-disabled then, so
  // still focusable and pressable: its press does nothing), the form's submit event (requestSubmit(), a
  // native submit before htmx has wired the form) and any request htmx would issue for it
  // (htmx.trigger(form, "submit"), hx-trigger). The server refuses a second message anyway (409, the
  // log's "still answering" notice, agent/chat_views.still_answering); this never asks.
  function resting(f) { return !!(f && f.dataset.running); }

  document.addEventListener("click", function (e) {
    var f = form(), send = e.target.closest && e.target.closest("#chat-send");
    if (send && resting(f) && f.contains(send)) e.preventDefault();
  }, true);

  document.addEventListener("submit", function (e) {
    var f = form(), stop = e.submitter && e.submitter.id === "chat-stop";  // (Stop sent natively: let it go)
    if (e.target === f && resting(f) && !stop) { e.preventDefault(); e.stopPropagation(); }
  }, true);

  document.addEventListener("htmx:confirm", function (e) {
    var f = form();
    if (e.detail.elt === f && resting(f)) e.preventDefault();
  });

  // A message goes to the form's own address. htmx sends a form to the `formaction` of the button last
  // pressed in it, and Stop has one (its press before the scripts ran sends the form to the chat's stop):
  // a Stop pressed, then disabled while the answer ends, may still count as last pressed at the next Enter.
  document.addEventListener("htmx:configRequest", function (e) {
    var f = form();
    if (f && e.detail.elt === f) e.detail.path = f.getAttribute("hx-post");
  });

  // Attachments: the paperclip's file input holds the files that will be sent (htmx posts the
  // form as multipart/form-data); picking, dropping or pasting adds to them, a chip's × removes one.
  var picked = new WeakMap();

  function filesOf(f) {
    if (!picked.has(f)) picked.set(f, new DataTransfer());
    return picked.get(f);
  }

  // The tray is a live region: a chip added is heard once, so the tray changes chip by chip (drawn again
  // whole, it would read every file chosen before at each change).
  function addFiles(f, list) {
    var dt = filesOf(f), tray = f.querySelector("#attach-tray");
    Array.prototype.forEach.call(list, function (file) {
      dt.items.add(file);
      if (tray) tray.appendChild(chipFor(f, file));
    });
    showFiles(f);
  }

  // A chip's × takes its chip away; focus goes to the next chip's ×, else the one before, else Attach
  // (the button that had it is gone, and focus would fall to the page).
  function removeFile(f, chip) {
    var tray = chip.parentNode, index = Array.prototype.indexOf.call(tray.children, chip);
    var old = filesOf(f), dt = new DataTransfer();
    Array.prototype.forEach.call(old.files, function (file, i) { if (i !== index) dt.items.add(file); });
    picked.set(f, dt);
    var next = chip.nextElementSibling || chip.previousElementSibling;
    chip.remove();
    showFiles(f);
    var to = next ? next.querySelector(".remove-file") : f.querySelector("#chat-files");
    if (to) to.focus();
  }

  // What a message took, remembered as its request leaves: the box stays open meanwhile (a request with
  // files may take seconds), so once it is sent only what it took leaves the box and the tray, and the
  // words written and the files chosen since stay (for the next message).
  var sending = new WeakMap();

  document.addEventListener("htmx:beforeRequest", function (e) {
    var f = form();
    if (f && e.detail.elt === f) sending.set(f, { text: f.querySelector("textarea").value, files: Array.from(filesOf(f).files) });
  });

  function fileKey(file) { return [file.name, file.size, file.lastModified, file.type].join("\u0000"); }

  // The words and files of form `f` beyond those its message took (all of them when none was sent).
  function leftOver(f) {
    var was = sending.get(f) || { text: "", files: [] }, now = f.querySelector("textarea").value;
    var text = now === was.text ? "" : now.indexOf(was.text) === 0 ? now.slice(was.text.length).replace(/^\s+/, "") : now;
    var sent = was.files.map(fileKey), files = new DataTransfer();
    Array.prototype.forEach.call(filesOf(f).files, function (file) {
      var at = sent.indexOf(fileKey(file));
      if (at === -1) files.items.add(file); else sent.splice(at, 1);
    });
    return { text: text, sent: was.text, files: files };
  }

  // Form `f`'s message was sent: it names the chat in the list if it was the first, and leaves the form.
  function clearSent(f) {
    var left = leftOver(f);
    sending.delete(f);
    chat.nameChat(left.sent);
    f.querySelector("textarea").value = left.text;
    picked.set(f, left.files);
    syncFiles(f);
  }

  function sizeText(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return Math.round(n / 1024) + " KB";
    return (n / 1024 / 1024).toFixed(1) + " MB";
  }

  // The file input holds what will be sent.
  function showFiles(f) {
    var input = f.querySelector("#chat-files");
    if (input) input.files = filesOf(f).files;
    checkWords(f);
  }

  // A message needs words, with files too, and spaces are not words. The box says so in the browser's
  // own bubble when Send is pressed (the form is checked before it is sent): without this, files alone
  // met "Please fill out this field.", and spaces alone were sent and refused with the server's
  // sentence about the length limit.
  var NEED_WORDS = "Write a few words to go with your files.";
  var ONLY_SPACES = "Write a message first: spaces alone can't be sent.";
  function checkWords(f) {
    var text = f.querySelector("textarea");
    if (!text) return;
    var why = "";
    if (!text.value.trim()) why = filesOf(f).files.length ? NEED_WORDS : text.value ? ONLY_SPACES : "";
    text.setCustomValidity(why);
  }

  document.addEventListener("input", function (e) {
    var f = form();
    if (f && e.target === f.querySelector("textarea")) checkWords(f);
  });

  // The tray drawn again whole: a form put in place of another, or cleared once sent.
  function syncFiles(f) {
    var tray = f.querySelector("#attach-tray");
    if (!tray) return;
    showFiles(f);
    tray.textContent = "";
    Array.prototype.forEach.call(filesOf(f).files, function (file) { tray.appendChild(chipFor(f, file)); });
  }

  function chipFor(f, file) {
    var chip = document.createElement("span");
    chip.className = "pending-file";
    chip.title = file.name + " · " + sizeText(file.size);
    if (/^image\/(png|jpeg|gif|webp)$/.test(file.type)) {
      var img = document.createElement("img");
      img.alt = file.name;
      var reader = new FileReader();
      reader.onload = function () { img.src = reader.result; };
      reader.readAsDataURL(file);
      chip.appendChild(img);
    } else {
      var icon = document.createElement("span");
      icon.className = "file-icon";
      icon.setAttribute("aria-hidden", "true");
      icon.textContent = (file.name.split(".").pop() || "file").slice(0, 4).toUpperCase();
      chip.appendChild(icon);
    }
    var name = document.createElement("span");
    name.className = "file-name";
    name.textContent = file.name;
    chip.appendChild(name);
    var remove = document.createElement("button");
    remove.type = "button";
    remove.className = "remove-file";
    remove.setAttribute("aria-label", "Remove " + file.name);
    remove.textContent = "×";
    remove.addEventListener("click", function () { removeFile(f, chip); });
    chip.appendChild(remove);
    return chip;
  }

  document.addEventListener("change", function (e) {
    var f = form();
    if (!f || e.target.id !== "chat-files" || !f.contains(e.target)) return;
    var chosen = Array.prototype.slice.call(e.target.files);
    showFiles(f);  // the input now shows what was already picked...
    addFiles(f, chosen);  // ...plus what was just chosen
  });

  // (Files may be dropped or pasted while an answer runs too: they wait in the tray, as the words do.)
  document.addEventListener("dragover", function (e) {
    var f = form();
    if (f && f.contains(e.target)) { e.preventDefault(); f.classList.add("dropping"); }
  });

  document.addEventListener("dragleave", function (e) {
    var f = form();
    if (f && e.target === f) f.classList.remove("dropping");
  });

  document.addEventListener("drop", function (e) {
    var f = form();
    if (!f || !f.contains(e.target)) return;
    e.preventDefault();
    f.classList.remove("dropping");
    if (e.dataTransfer && e.dataTransfer.files.length) addFiles(f, e.dataTransfer.files);
  });

  document.addEventListener("paste", function (e) {
    var f = form();
    if (!f || !f.contains(e.target)) return;
    var images = Array.prototype.filter.call((e.clipboardData && e.clipboardData.files) || [], function (file) {
      return /^image\//.test(file.type);
    });
    if (images.length) { e.preventDefault(); addFiles(f, images); }
  });

  // The panel taking up a chat: its form, put in place of this one, keeps the words typed and the files
  // picked here; focus and the caret stay too (htmx keeps them for an element of the same id). So does the
  // form of a first message that met the chat another tab had just started, its answer still running
  // (data-keep-typed, chat_panel._joined): those words wait to be sent. The form any other first
  // message's answer brings keeps only what was written or chosen after that message left (it was sent).
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var old = e.detail.target, fresh = e.detail.fragment && e.detail.fragment.querySelector("#chat-form");
    if (!old || old.id !== "chat-form" || !fresh) return;
    var whole = chat.takingUp() || fresh.hasAttribute("data-keep-typed");
    if (!whole && !sending.has(old)) return;
    var left = whole ? { text: old.querySelector("textarea").value, files: picked.get(old) } : leftOver(old);
    var box = fresh.querySelector("textarea");
    if (left.text && box && !box.value) box.value = left.text;
    if (left.files) { picked.set(fresh, left.files); syncFiles(fresh); }
  });

  // "New chat" loads a new page, where focus would start at the top: the person who pressed it lands
  // in the new chat's input instead (only then; a page reached any other way starts at the top).
  document.addEventListener("submit", function (e) {
    if (e.target.hasAttribute("data-new-chat")) store("chat:new", "1");
  });

  // Refused (over the message rate), it loads nothing: the log shows why, and the person is put in the
  // chat's input, as after a refused message.
  document.addEventListener("htmx:afterRequest", function (e) {
    if (!e.detail.elt.hasAttribute("data-new-chat") || e.detail.xhr.getResponseHeader("HX-Redirect")) return;
    store("chat:new", null);
    var f = form();
    if (f && !f.dataset.running) f.querySelector("textarea").focus();
  });

  function focusNewChat(f) {
    if (!stored("chat:new")) return;
    store("chat:new", null);
    if (/[?&]chat=/.test(location.search) && !f.dataset.running) f.querySelector("textarea").focus();
  }

  // Words typed but not sent are kept when the page is left (the chat's request sent it to sign in,
  // signed out in another tab; a link followed) and put back when this tab comes back to the page.
  // Attachments cannot be kept this way; words can.
  // Keyed by the person too: on a shared computer, another who signs in on this tab never gets them.
  function draftKey() {
    var f = form();
    return "chat:draft:" + (f ? f.dataset.person : "") + ":" + location.pathname + location.search;
  }

  window.addEventListener("pagehide", function () {
    var f = form(), text = f && f.querySelector("textarea");
    if (text && text.value.trim()) store(draftKey(), text.value);
  });

  function restoreDraft(f) {
    var kept = stored(draftKey()), text = f.querySelector("textarea");
    store(draftKey(), null);
    if (kept && !text.value) text.value = kept;
  }

  chat.clearSent = clearSent;
  chat.restoreDraft = restoreDraft;
  chat.focusNewChat = focusNewChat;
})();
