// A shared browser must not keep one person's work for the next: the annotation forms
// keep an unsent copy in localStorage ("claimgate:…" keys) so that an expired session
// loses nothing, and this script removes such copies once they are no longer needed —
// every copy when the person logs out, and the copy of a label the server has accepted
// (the page after a submission names it with data-forget-storage).
(function () {
  "use strict";
  var PREFIX = "claimgate:";

  function forget(test) {
    try {
      var doomed = [];
      for (var i = 0; i < window.localStorage.length; i++) {
        var key = window.localStorage.key(i);
        if (key && test(key)) {
          doomed.push(key);
        }
      }
      doomed.forEach(function (key) {
        window.localStorage.removeItem(key);
      });
    } catch (err) {
      // Storage disabled: nothing was kept.
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-forget-storage]").forEach(function (node) {
      var key = node.getAttribute("data-forget-storage");
      forget(function (candidate) {
        return candidate === key;
      });
    });
    document.querySelectorAll("form.logout").forEach(function (form) {
      form.addEventListener("submit", function () {
        forget(function (candidate) {
          return candidate.indexOf(PREFIX) === 0;
        });
      });
    });
  });
})();
