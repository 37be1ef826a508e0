// Tells the server the browser's time zone, so pages show times in it (accounts/timezones.py reads
// the `tz` cookie and ignores a name it does not know). Loaded without `defer`, before the body, so the
// page's own first requests (htmx fragments) already carry it.
//
// The page that sets it was rendered in another zone: the site's (UTC, said beside each time: a first
// visit) or the old one (a person who has moved). Its times are written again here, in the browser's zone,
// from each <time datetime> (the instant) and the parts the server showed (a year, a time of day), in the
// server's own form ("Dec 4, 2026 05:30"), without the zone's name. Not reloaded: the page may be the
// answer to a form, which a reload would send again. Without scripts, times stay in UTC, saying so.
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
  var cookies = "; " + document.cookie + ";";
  if (cookies.indexOf("; " + cookie + ";") !== -1) return;
  document.cookie = cookie + "; path=/; max-age=31536000; SameSite=Lax" + (location.protocol === "https:" ? "; Secure" : "");

  // "M j, Y H:i", "M j, Y" or "M j, H:i" (accounts/templatetags/local_time.py), as the server wrote it.
  function rewrite(time) {
    var when = new Date(time.getAttribute("datetime"));
    var shown = time.textContent;
    if (isNaN(when.getTime())) return;
    var withYear = /\b\d{4}\b/.test(shown), withTime = /\b\d{2}:\d{2}\b/.test(shown);
    var options = { timeZone: zone, month: "short", day: "numeric" };
    if (withYear) options.year = "numeric";
    if (withTime) { options.hour = "2-digit"; options.minute = "2-digit"; options.hourCycle = "h23"; }
    var part = {};
    new Intl.DateTimeFormat(document.documentElement.lang || "en", options).formatToParts(when).forEach(function (p) {
      part[p.type] = p.value;
    });
    var text = part.month + " " + part.day + (withYear ? ", " + part.year : "");
    if (withTime) text += (withYear ? " " : ", ") + part.hour + ":" + part.minute;
    time.textContent = text;
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), rewrite);
  });
})();
