// The post editor: ask before leaving the page with unsaved changes (a closed tab, a link, the back button).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("form[data-guard-unsaved]");
    if (!form) return;
    var saved = new FormData(form);
    function changed() {
      var now = new FormData(form);
      for (var pair of now.entries()) {
        if (pair[0] !== "csrfmiddlewaretoken" && saved.get(pair[0]) !== pair[1]) return true;
      }
      return false;
    }
    var submitting = false;
    form.addEventListener("submit", function () { submitting = true; });
    window.addEventListener("beforeunload", function (event) {
      if (submitting || !changed()) return;
      event.preventDefault();
      event.returnValue = "";  // (older browsers show their own prompt only when this is set)
    });
  });
})();
