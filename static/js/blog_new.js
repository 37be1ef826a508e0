// The New blog page: the address follows the title as it is typed (its ASCII letters and digits, as the
// server's `slugify` makes it), until the person edits the address themselves. Left empty (a title with
// no such letters, in another script), the server makes one. Without this, the server does the same.
(function () {
  "use strict";

  function slugOf(title) {
    return title
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9\s_-]/g, "")
      .replace(/[\s_-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 92)
      .replace(/-+$/, "");
  }

  document.addEventListener("DOMContentLoaded", function () {
    var title = document.getElementById("blog-title");
    var slug = document.getElementById("blog-slug");
    var shown = document.getElementById("blog-slug-shown");
    if (!title || !slug) return;
    var edited = slug.value !== "" && slug.value !== slugOf(title.value);

    function show() {
      if (shown) shown.textContent = slug.value || "…";
    }
    function follow() {
      if (edited) return;
      slug.value = slugOf(title.value);
      show();
    }
    title.addEventListener("input", follow);
    follow(); // (a title typed before this ran, or kept by the browser on Back)
    slug.addEventListener("input", function () {
      edited = slug.value !== "";
      show();
    });
  });
})();
