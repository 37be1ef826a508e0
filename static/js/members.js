// The Members screen: a member's "may use the assistant" box follows the role chosen in their row, so a
// viewer made an editor can be allowed the assistant in the same Save. Without this, the box stays as
// the saved role has it (disabled for a viewer) and the server, which decides, needs a second Save.
// The box disabled says why beside it, as the server draws it for a saved viewer (blog/members.html).
(function () {
  "use strict";

  var VIEWERS_CANT = "(viewers can't)";

  document.addEventListener("change", function (e) {
    var role = e.target;
    if (role.name !== "role" || !role.form || !role.closest("table.members")) return;
    var row = role.closest("tr");
    var box = row.querySelector("input[name=may_use_assistant]");
    if (!box) return;
    var hint = row.querySelector(".hint");
    var viewer = role.value === "viewer";
    box.disabled = viewer;
    if (viewer) box.checked = false;
    if (viewer && !hint) {
      hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = VIEWERS_CANT;
      box.closest("label").appendChild(hint);
    }
    if (hint) hint.hidden = !viewer;
  });
})();
