// Tells the server the browser's time zone, so pages show times in it (accounts/timezones.py reads
// the `tz` cookie and ignores a name it does not know). Loaded without `defer`, before the body, so the
// page's own first requests (htmx fragments) already carry it; the page that set it for the first time
// was rendered in UTC, and says so beside each time.
(function () {
  "use strict";
  var zone;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (e) {
    return;
  }
  if (!zone || !/^[A-Za-z0-9_+\-\/]{1,64}$/.test(zone)) return;
  var cookie = "tz=" + zone;
  if (("; " + document.cookie + ";").indexOf("; " + cookie + ";") !== -1) return;
  document.cookie = cookie + "; path=/; max-age=31536000; SameSite=Lax" + (location.protocol === "https:" ? "; Secure" : "");
})();
