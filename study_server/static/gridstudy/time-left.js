/* The visit's time left, on every page of the study: counts down to the deadline the
 * server keeps (data-seconds-left when the page was made, so that a participant's clock
 * set wrong does not matter; study_server/deadlines.py). At the end the
 * page is loaded again, and the server shows the timed-out ending with its code (a game
 * page is sent there at once by the server itself). */
(function () {
  "use strict";
  var line = document.querySelector("[data-seconds-left]");
  if (!line) { return; }
  var deadline = Date.now() + Number(line.dataset.secondsLeft) * 1000;
  var shown = line.querySelector("[data-time-left]");
  function show() {
    var left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    var minutes = Math.floor(left / 60), seconds = left % 60;
    shown.textContent = minutes + ":" + (seconds < 10 ? "0" : "") + seconds;
    if (left === 0) {
      window.clearInterval(timer);
      window.setTimeout(function () { window.location.reload(); }, 1500);
    }
  }
  var timer = window.setInterval(show, 1000);
  show();
}());
