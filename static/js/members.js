// The Members screen: a member's "may use the assistant" box follows the role chosen in their row, so a
// viewer made an editor can be allowed the assistant in the same Save. Without this, the box stays as
// the saved role has it (disabled for a viewer) and the server, which decides, needs a second Save.
(function () {
  "use strict";

  document.addEventListener("change", function (e) {
    var role = e.target;
    if (role.name !== "role" || !role.form || !role.closest("table.members")) return;
    var row = role.closest("tr");
    var box = row.querySelector("input[name=may_use_assistant]");
    var hint = row.querySelector(".hint");
    var viewer = role.value === "viewer";
    box.disabled = viewer;
    if (viewer) box.checked = false;
    if (hint) hint.hidden = !viewer;
  });
})();
