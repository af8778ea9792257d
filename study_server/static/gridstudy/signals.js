/* Data-quality signals and the device check, on every page of the participant flow.
 *
 * Reports to the server (consent/quality.py says what each signal means): the device
 * once per page; the tab hidden and shown again; the window losing and regaining focus;
 * idle periods; bursts of key-mashing. Each goes at once with navigator.sendBeacon, which
 * still delivers while the page is being left or closed.
 *
 * The device check: a window smaller than the games need, or a touch screen without a
 * mouse, hides the page behind a polite notice ([data-device-check]) saying what is
 * needed, with a way to end the study on this device. Making the window larger brings
 * the page back.
 *
 * Settings come from the body's data attributes (templates/consent/base.html).
 */
(function () {
  "use strict";

  var config = document.body.dataset;
  var IDLE_AFTER = Number(config.idleAfter), MASHING_KEYS = Number(config.mashingKeys);
  var MIN_WIDTH = Number(config.minWidth), MIN_HEIGHT = Number(config.minHeight);

  function now() { return Date.now() / 1000; }
  function round(seconds) { return Math.round(seconds * 10) / 10; }

  function send(kind, seconds, value) {
    var signal = { kind: kind, client_time: now() };
    if (seconds !== undefined) { signal.seconds = round(seconds); }
    if (value !== undefined) { signal.value = value; }
    var form = new FormData();
    form.append("csrf_token", config.csrf);
    form.append("signals", JSON.stringify([signal]));
    if (config.episode) { form.append("episode_id", config.episode); }
    if (navigator.sendBeacon && navigator.sendBeacon(config.signalsUrl, form)) { return; }
    fetch(config.signalsUrl, { method: "POST", body: form, keepalive: true,
                               credentials: "same-origin" }).catch(function () {});
  }

  function touchOnly() {
    return window.matchMedia("(pointer: coarse)").matches
      && !window.matchMedia("(any-pointer: fine)").matches;
  }

  /* -- the device -------------------------------------------------------------------- */

  send("device", undefined, {
    user_agent: navigator.userAgent,
    screen: [screen.width, screen.height],
    window: [window.innerWidth, window.innerHeight],
    pixel_ratio: window.devicePixelRatio || 1,
    touch: touchOnly()
  });

  var notice = document.querySelector("[data-device-check]");
  var main = document.querySelector("[data-flow]");
  function checkDevice() {
    if (!notice || !main) { return; }
    var small = window.innerWidth < MIN_WIDTH || window.innerHeight < MIN_HEIGHT || touchOnly();
    notice.hidden = !small;
    main.hidden = small;
    notice.querySelector("[data-window-size]").textContent =
      window.innerWidth + " by " + window.innerHeight;
  }
  checkDevice();
  window.addEventListener("resize", checkDevice);

  /* -- the tab and the window -------------------------------------------------------- */

  /* Leaving the page (a form sent, a link followed, the tab closed) hides it too, after
   * pagehide: that hide is reported as leaving, and the flags do not count it. */
  var hiddenAt = document.visibilityState === "hidden" ? now() : null, leaving = false;
  window.addEventListener("pagehide", function () { leaving = true; });
  window.addEventListener("pageshow", function () { leaving = false; });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") {
      hiddenAt = now();
      send("hidden", undefined, leaving ? { leaving: true } : undefined);
    } else if (hiddenAt !== null) {
      send("shown", now() - hiddenAt);
      hiddenAt = null;
    }
  });

  var blurredAt = null;
  window.addEventListener("blur", function () { blurredAt = now(); send("blur"); });
  window.addEventListener("focus", function () {
    if (blurredAt !== null) { send("focus", now() - blurredAt); blurredAt = null; }
  });

  /* -- idle periods and key-mashing -------------------------------------------------- */

  var lastActive = now(), idle = false;
  function active() {
    if (idle) { send("active", now() - lastActive); idle = false; }
    lastActive = now();
  }
  ["mousedown", "mousemove", "wheel", "touchstart"].forEach(function (name) {
    document.addEventListener(name, active, { passive: true });
  });
  setInterval(function () {
    if (!idle && now() - lastActive >= IDLE_AFTER) { idle = true; send("idle", now() - lastActive); }
  }, 1000);

  var keys = [], lastMashing = 0;
  document.addEventListener("keydown", function (event) {
    active();
    if (event.repeat) { return; }
    var t = now();
    keys.push(t);
    while (keys.length && keys[0] <= t - 1) { keys.shift(); }
    if (keys.length >= MASHING_KEYS && t - lastMashing > 5) {
      lastMashing = t;
      send("mashing", undefined, { keys: keys.length });
    }
  });
})();
