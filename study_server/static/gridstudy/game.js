/* The gridstudy browser client: draws the server's state, sends keys, clicks and buttons.
 *
 * The server owns the game (tasks/worldtest/tick.py behind study_server/session.py); this
 * file only rebuilds the view from each `state` it is sent (the whole view on joining,
 * then what changed: tasks/worldtest/changes.py), draws it, and turns what the person
 * does into action texts (`up`, `click 3 4`, `choose_option_2` ...), each stamped with
 * the client's clock. Protocol: docs/protocols.md.
 *
 * A test phase is drawn by the widget its `test.kind` names (mfp options, planning goal,
 * cd frame selection); any challenge's own verbs come as `state.buttons` ([verb, label])
 * and `state.keys` (key -> verb), so a new challenge needs no change here unless it
 * needs a new widget.
 *
 * GridStudy.mount(element, {onDone}) starts one game panel (templates/_game.html);
 * panels marked data-gs-autostart start by themselves. The panel's data-phase and
 * data-tick attributes mirror the state, for tests and for the page around it.
 */
(function () {
  "use strict";

  var KEYS = { ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right" };
  var MASK = "mask";
  var RETRY_WAIT = 2000;  // ms before joining again after a refusal that says retry

  function now() { return Date.now() / 1000; }

  /* Draw `frame` (rows of colour names) on `canvas`, `cell` pixels per cell. */
  function drawFrame(canvas, frame, cell, shade) {
    var height = frame.length, width = height ? frame[0].length : 0;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * cell * ratio);
    canvas.height = Math.round(height * cell * ratio);
    canvas.style.width = width * cell + "px";
    canvas.style.height = height * cell + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    for (var y = 0; y < height; y++) {
      for (var x = 0; x < width; x++) {
        paintCell(ctx, x, y, cell, frame[y][x]);
        if (shade && shade(x, y)) { ctx.fillStyle = "rgba(40,40,40,0.8)"; ctx.fillRect(x * cell, y * cell, cell, cell); }
      }
    }
    if (cell >= 8) { drawLines(ctx, width, height, cell); }
  }

  function paintCell(ctx, x, y, cell, colour) {
    ctx.fillStyle = "black";
    if (colour === MASK) {
      ctx.fillStyle = "#555";
      ctx.fillRect(x * cell, y * cell, cell, cell);
      ctx.strokeStyle = "#999";
      ctx.beginPath(); ctx.moveTo(x * cell, (y + 1) * cell); ctx.lineTo((x + 1) * cell, y * cell); ctx.stroke();
      return;
    }
    ctx.fillStyle = colour || "black";  // an unknown colour name leaves black
    ctx.fillRect(x * cell, y * cell, cell, cell);
  }

  function drawLines(ctx, width, height, cell) {
    ctx.strokeStyle = "rgba(128,128,128,0.35)";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (var x = 0; x <= width; x++) { ctx.moveTo(x * cell + 0.5, 0); ctx.lineTo(x * cell + 0.5, height * cell); }
    for (var y = 0; y <= height; y++) { ctx.moveTo(0, y * cell + 0.5); ctx.lineTo(width * cell, y * cell + 0.5); }
    ctx.stroke();
  }

  /* The mask region of an option: the bounding box of the mask, option colours on it. */
  function optionFrame(mask, colours) {
    var xs = mask.map(function (c) { return c[0]; }), ys = mask.map(function (c) { return c[1]; });
    var x0 = Math.min.apply(null, xs), y0 = Math.min.apply(null, ys);
    var w = Math.max.apply(null, xs) - x0 + 1, h = Math.max.apply(null, ys) - y0 + 1;
    var frame = [];
    for (var y = 0; y < h; y++) { frame.push(new Array(w).fill("#222")); }
    mask.forEach(function (c, i) { frame[c[1] - y0][c[0] - x0] = colours[i]; });
    return frame;
  }

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  /* The state after a change (tasks/worldtest/changes.py, `patched`): `cells` repaint
   * cells of the frame, an object merges into the object it changes, anything else
   * replaces. `state` is left as it was (the cd picker keeps the frames it showed). */
  function patched(state, patch) {
    var result = Object.assign({}, state);
    Object.keys(patch).forEach(function (key) {
      var value = patch[key];
      if (key === "cells") {
        var frame = result.frame = result.frame.slice(), copied = {};
        value.forEach(function (cell) {
          var x = cell[0], y = cell[1];
          if (!copied[y]) { frame[y] = frame[y].slice(); copied[y] = true; }
          frame[y][x] = cell[2];
        });
      } else if (isObject(value) && isObject(result[key])) {
        result[key] = patched(result[key], value);
      } else {
        result[key] = value;
      }
    });
    return result;
  }

  var PHASES = {interaction: "exploring", test: "the test", select: "choosing the frame", done: "finished"};

  function Game(root, options) {
    this.root = root;
    this.options = options || {};
    this.token = root.dataset.token;
    this.state = null;
    this.el = {};
    var self = this;
    root.querySelectorAll("[data-gs]").forEach(function (el) { self.el[el.dataset.gs] = el; });
    this.mfpTarget = null;
    this.mfpInflight = null;
    this.pick = null;  // the answer chosen on this page (a frame, an option): sent at Submit
    this.cdFrames = {};  // change detection: the test frames this page has shown, by index
    this.goalCell = null;  // the cell size the goal was drawn at
    this.held = {};
    this.unsent = [];  // keys pressed while the connection was lost (keepUnsent)
    this.unsentMore = 0;
    if (root.dataset.play === "browser") { this.connectBrowser(); } else { this.connect(); }
    this.bindControls();
  }

  Game.prototype.connect = function () {
    var self = this;
    var socket = this.socket = io({ transports: ["websocket", "polling"] });
    socket.on("connect", function () { socket.emit("join", { token: self.token }); });
    socket.on("ping", function (m) { socket.emit("pong", { sent: m.sent, client_time: now() }); });
    socket.on("visit-ended", function (m) { window.location.assign(m.url); });  // its ending page
    socket.on("game-ended", function (m) { self.ended(m.url); });
    socket.on("state", function (message) { self.receive(message); });
    socket.on("refused", function (m) {
      if (/another connection/.test(m.reason || "")) { self.offerTakeover(); return; }
      if (m.retry) {  // the database is away, or another server still holds the game
        self.lost = true;  // not joined: keys are kept, not sent
        self.say(/^join: saving/.test(m.reason) ? "Saving your progress, one moment..."
          : "Reconnecting...");
        setTimeout(function () { socket.emit("join", { token: self.token }); }, RETRY_WAIT);
        return;
      }
      self.refused(m.reason || "");
    });
    socket.on("taken-over", function () {
      self.elsewhere = true;
      self.say("This game now continues in another tab or window. You can close this one.");
      self.root.dataset.takenOver = "1";
    });
    socket.on("disconnect", function () {
      self.lost = true;
      self.say("Connection lost; reconnecting... Keys pressed now do nothing.");
    });
  };

  /* A key pressed while the connection is lost (or the game not joined again) is not
     sent, since it could only act seconds late or be refused; it is kept and told to the
     server once the game is joined again, which stores it as never applied. */
  Game.prototype.keepUnsent = function (action) {
    if (this.unsent.length < Number(this.root.dataset.unsentKept || 0)) {
      this.unsent.push({ action: action, client_time: now() });
    } else {
      this.unsentMore += 1;
    }
  };

  Game.prototype.tellUnsent = function () {
    var count = this.unsent.length + this.unsentMore;
    if (!count) { return; }
    var answered = this.unsent.some(function (k) { return /^submit/.test(k.action); });
    this.socket.emit("unsent", { token: this.token, inputs: this.unsent, more: this.unsentMore });
    this.unsent = [];
    this.unsentMore = 0;
    this.say(answered ? "Back. Your Submit was not sent while the connection was lost: " +
      "press Submit again." : "Back. The " + (count === 1 ? "key" : count + " keys") +
      " pressed while the connection was lost did nothing.");
  };

  /* Browser play (study_server/browser_play.py): the page ticks the engine itself, at
     the problem's frame rate, and sends its play log to the server in batches; the
     server replays it on its own engine and keeps the record. */
  var LOG_EVERY = 1000, LOG_BATCH = 256, LOG_WAIT = 5000, ENGINE_WAIT = 30000;
  var enginePromise = null;

  function loadEngine(root, progress) {
    if (!enginePromise) {
      var base = root.dataset.pyodide;
      enginePromise = import(base + "pyodide.mjs").then(function (pyodide) {
        progress(0.3);
        return import(root.dataset.engineModule).then(function (module) {
          return fetch(root.dataset.engine).then(function (r) {
            if (!r.ok) { throw new Error("the engine archive: HTTP " + r.status); }
            return r.arrayBuffer();
          }).then(function (archive) {
            progress(0.6);
            return module.startEngine(pyodide.loadPyodide, archive, { indexURL: base });
          });
        });
      });
    }
    return enginePromise;
  }

  Game.prototype.connectBrowser = function () {
    var self = this;
    this.acked = 0;
    this.say("Loading the game...");
    var bar = this.el.loading;
    if (bar) { bar.hidden = false; bar.value = 0.1; }
    var engine = loadEngine(this.root, function (share) { if (bar) { bar.value = share; } });
    var timer = new Promise(function (_, fail) {
      setTimeout(function () { fail(new Error("the game took too long to load")); }, ENGINE_WAIT);
    });
    var socket = this.socket = io({ transports: ["websocket", "polling"] });
    var joined = new Promise(function (resolve) { self.onJoined = resolve; });
    this.rejoin = function (takeover) {
      socket.emit("join-browser", { token: self.token, takeover: takeover }, function (answer) {
        if (!answer || !answer.ok) { return; }  // "refused" says why
        self.acked = answer.record.next;
        self.joinedHere = true;  // this connection may send the log now
        self.lost = false;
        self.onJoined(answer);
        self.flush();
      });
    };
    socket.on("connect", function () { self.rejoin(false); });
    socket.on("ping", function (m) { socket.emit("pong", { sent: m.sent, client_time: now() }); });
    socket.on("visit-ended", function (m) { window.location.assign(m.url); });
    socket.on("game-ended", function (m) { self.ended(m.url); });
    socket.on("refused", function (m) {
      if (/another connection/.test(m.reason || "")) { self.offerTakeover(); return; }
      if (m.retry) {  // the page ticks on meanwhile; its log waits for the join
        setTimeout(function () { self.rejoin(false); }, RETRY_WAIT);
        return;
      }
      self.refused(m.reason || "");
    });
    socket.on("taken-over", function () {
      self.elsewhere = true;
      self.stopTicking();
      self.say("This game now continues in another tab or window. You can close this one.");
      self.root.dataset.takenOver = "1";
    });
    socket.on("disconnect", function () {
      self.lost = true;
      self.joinedHere = false;  // a new connection joins first (the server's door wants it)
      self.sending = false;  // an answer that will not come now
    });
    Promise.all([Promise.race([engine, timer]), joined]).then(function (ready) {
      if (bar) { bar.value = 1; bar.hidden = true; }
      self.local = ready[0].play(self.root.dataset.problem, ready[1].record);
      self.root.dataset.engine = "ready";
      self.update(self.view(self.local.view()));
      self.startTicking(1000 / ready[1].frame_rate);
    }).catch(function (error) {
      self.root.dataset.engine = "failed";
      self.say("The game could not start in this browser; loading it from the server...");
      var url = new URL(window.location.href);
      url.searchParams.set("play", "server");
      url.searchParams.set("engine_error", String(error && error.message || error).slice(0, 200));
      window.location.replace(url.toString());
    });
  };

  Game.prototype.view = function (text) {
    var state = JSON.parse(text);
    state.token = this.token;
    return state;
  };

  /* Tick at the frame rate, each tick at its own time (a late tick does not push the
     next ones later), drawing the new frame at once. A tab in the background has its
     timers slowed (to once a second, and once a minute after five minutes): the ticks
     they missed are run when one comes, so the world moves on as the server's does for
     a page that is connected but not looked at. After more than `catchUp` seconds
     without a tick (a computer asleep) the world goes on from where it stopped, as a
     session on the server pauses when its connection is lost. */
  Game.prototype.catchUp = 120;
  Game.prototype.startTicking = function (period) {
    var self = this, next = performance.now() + period;
    var step = function () {
      if (self.ticking === null) { return; }
      var now = performance.now();
      var due = Math.min(1 + Math.max(0, Math.floor((now - next) / period)),
                         Math.ceil(self.catchUp * 1000 / period));
      var state = self.view(self.local.tick(due));
      self.update(state);
      if (state.phase === "done" || state.stopped) { self.stopTicking(); self.flush(); return; }
      next += due * period;
      now = performance.now();
      if (next < now) { next = now; }
      self.ticking = setTimeout(step, next - now);
    };
    this.ticking = setTimeout(step, period);
    this.logging = setInterval(function () { self.flush(); }, LOG_EVERY);
  };

  Game.prototype.stopTicking = function () {
    if (this.ticking) { clearTimeout(this.ticking); }
    this.ticking = null;
  };

  /* Send the log's entries the server has not acknowledged (one batch in flight). */
  Game.prototype.flush = function () {
    var self = this;
    if (!this.local || this.sending || !this.joinedHere || !this.socket.connected) { return; }
    var batch = JSON.parse(this.local.since(this.acked, LOG_BATCH));
    if (!batch.length) { this.logged(); return; }
    var sent = this.sending = {};  // this batch; an answer lost on the way frees the next
    setTimeout(function () { if (self.sending === sent) { self.sending = false; } }, LOG_WAIT);
    this.socket.emit("log", { token: this.token, batch: batch }, function (answer) {
      if (self.sending !== sent) { return; }  // given up on, or the connection changed
      self.sending = false;
      if (!(answer && answer.ok)) { return; }  // refused: sent again at the next interval
      self.acked = answer.next;
      self.root.dataset.stored = String(answer.next);
      self.root.dataset.verified = answer.verified ? "true" : "false";
      if (self.acked < self.local.logged()) { self.flush(); } else { self.logged(); }
    });
  };

  /* Everything played is stored: a finished game may be left now. */
  Game.prototype.logged = function () {
    this.root.dataset.stored = String(this.acked);
    if (this.pendingFinish && this.acked >= this.local.logged()) {
      var state = this.pendingFinish;
      this.pendingFinish = null;
      clearInterval(this.logging);
      this.announce(state);
    }
  };

  /* The game is open in another tab: offer to continue it here instead. */
  Game.prototype.offerTakeover = function () {
    var self = this;
    this.say("This game is open in another tab or window.");
    if (this.takeoverButton) { return; }
    var button = this.takeoverButton = document.createElement("button");
    button.type = "button";
    button.dataset.gsTakeover = "1";
    button.textContent = "Continue here";
    button.addEventListener("click", function () {
      if (self.rejoin) { self.rejoin(true); } else {
        self.socket.emit("join", { token: self.token, takeover: true });
      }
      button.remove();
      self.takeoverButton = null;
      self.say(self.hint());
    });
    this.el.message.after(button);
  };

  /* Send one action text, stamped with this client's clock. */
  Game.prototype.send = function (action) {
    if (!this.state || this.state.phase === "done" || this.elsewhere || this.stopped) { return; }
    if (this.local) {  // browser play: applied at the next local tick
      var status = this.local.admit(action, now());
      if (status !== "queued") { this.refused(status); }
      return;
    }
    if (this.lost) {
      this.keepUnsent(action);
      return;
    }
    this.socket.emit("input", { token: this.token, action: action, client_time: now() });
  };

  Game.prototype.allows = function (verb) {
    return !!this.state && this.state.allowed.indexOf(verb) >= 0;
  };

  Game.prototype.say = function (text) { this.el.message.textContent = text; };

  /* The server stopped this game: its attempt was ended (by the study's team, or after
   * the participant was away too long). Say so, then open what comes next. */
  var ENDED_WAIT = 4000;
  Game.prototype.ended = function (url) {
    this.stopTicking();  // browser play: the page ticks no more, and sends no more
    clearInterval(this.logging);
    clearTimeout(this.sayTimer);
    this.root.dataset.ended = "1";
    this.say("This game was ended by the study. What comes next opens in a moment.");
    setTimeout(function () {
      if (url) { window.location.assign(url); } else { window.location.reload(); }
    }, ENDED_WAIT);
  };

  /* A refusal in plain words, shown briefly; the hint for the controls comes back after. */
  var REFUSALS = [
    [/^dropped/, "Too fast: that was skipped. Press it again."],
    [/^rate-limited/, "Too many keys at once: wait a moment, then press again."],
    [/^rejected/, "That does not work at this point of the game: use the buttons shown."],
    [/another connection/, "This game is open in another tab or window: please use that one."],
    [/^no option/, "Choose one of the options first, then press Submit."],
    [/unknown or missing session/, "This game has ended. Please reload the page."]
  ];
  Game.prototype.refused = function (reason) {
    var text = "That was not accepted.", self = this;
    if (this.root.dataset.ended) { return; }  // keys pressed after the end: it says why
    if (this.root.dataset.paused) { return; }  // the pause's message says keys do nothing
    REFUSALS.forEach(function (pair) { if (pair[0].test(reason)) { text = pair[1]; } });
    this.say(text);
    clearTimeout(this.sayTimer);
    this.sayTimer = setTimeout(function () { self.say(self.hint()); }, 2000);
  };

  /* What keys and clicks do now: the server's words (the verbs the phase allows that
   * this environment reacts to; Episode.hint). */
  Game.prototype.hint = function () {
    if (!this.state || this.state.phase === "done") { return ""; }
    return this.state.hint || "";
  };

  Game.prototype.bindControls = function () {
    var self = this;
    this.root.querySelectorAll("[data-gs-action]").forEach(function (button) {
      button.addEventListener("click", function () {
        if (button.dataset.gsAction === "submit") { self.submit(); } else { self.send(button.dataset.gsAction); }
      });
    });
    document.addEventListener("keydown", function (event) { self.onKey(event); });
    document.addEventListener("keyup", function (event) { self.release(event.key); });
    window.addEventListener("blur", function () { self.release(); });
    this.el.grid.addEventListener("click", function (event) { self.onGridClick(event); });
    this.el["mfp-slider"].addEventListener("input", function () {
      self.mfpTarget = Number(self.el["mfp-slider"].value);
      self.stepTowardTarget();
    });
    this.el["cd-slider"].addEventListener("input", function () {
      self.pickFrame(Number(self.el["cd-slider"].value), false);
    });
    this.el["cd-slider"].addEventListener("change", function () {
      self.pickFrame(Number(self.el["cd-slider"].value), true);
    });
    window.addEventListener("resize", function () { if (self.state) { self.draw(); } });
  };

  /* The frame slider is the page's own: its label, its picture and the choice move
   * together at once, whatever the speed of the keys. Only a frame this page never showed
   * (after a reload) is asked of the server, once the slider stops; the choice itself is
   * sent with Submit. */
  Game.prototype.pickFrame = function (index, settled) {
    this.pick = index;
    this.el["cd-slider"].value = index;
    this.el["cd-frame"].textContent = index;
    if (this.cdFrames[index]) {
      drawFrame(this.el.grid, this.cdFrames[index], this.cell);
    } else if (settled) {
      this.send("choose_frame_" + index);
    }
  };

  /* Submit sends the answer this page shows, once, as one input (the choice and its
   * submit at one tick); without an answer it says what to do instead. */
  Game.prototype.submit = function () {
    var test = this.state && this.state.test, kind = test && test.kind;
    if (kind === "cd" && this.state.phase === "select") {
      this.send("submit_frame_" + this.pick);
    } else if (kind === "mfp") {
      if (this.pick === null) {
        this.refused("no option");
        return;
      }
      this.send("submit_option_" + this.pick);
    } else {
      this.send("submit");
    }
  };

  /* A key press sends its verb at once; held down, it sends it again once per tick (the
   * browser's own auto-repeat is ignored), so a held key moves at the frame rate and
   * never floods the queue. Releasing the key, or leaving the window, stops it. */
  Game.prototype.onKey = function (event) {
    var verb = this.verbOf(event);
    if (!verb) { return; }
    event.preventDefault();
    if (event.repeat || this.held[event.key]) { return; }
    if (this.allows(verb)) { this.send(verb); }
    var self = this, period = 1000 / ((this.state && this.state.frame_rate) || 4);
    this.held[event.key] = setInterval(function () {
      if (self.allows(verb)) { self.send(verb); }
    }, period);
  };

  Game.prototype.verbOf = function (event) {
    var keys = (this.state && this.state.keys) || {};
    var target = event.target;
    if (target && target.tagName === "INPUT") { return null; }  // sliders keep their arrows
    return KEYS[event.key] || keys[(event.key || "").toLowerCase()] || null;
  };

  Game.prototype.release = function (key) {
    var self = this;
    (key === undefined ? Object.keys(this.held) : [key]).forEach(function (name) {
      clearInterval(self.held[name]);
      delete self.held[name];
    });
  };

  Game.prototype.onGridClick = function (event) {
    if (!this.allows("click")) { return; }
    var rect = this.el.grid.getBoundingClientRect();
    var x = Math.floor((event.clientX - rect.left) / this.cell);
    var y = Math.floor((event.clientY - rect.top) / this.cell);
    this.send("click " + x + " " + y);
  };

  /* The MFP slider moves one frame per tick (step/rewind are actions like any other). */
  Game.prototype.stepTowardTarget = function () {
    var test = this.state && this.state.test;
    if (this.mfpTarget === null || !test || test.kind !== "mfp") { return; }
    if (test.position === this.mfpTarget) { this.mfpTarget = null; return; }
    if (this.mfpInflight !== null && this.mfpInflight.position === test.position
        && now() - this.mfpInflight.at < 1) { return; }
    this.mfpInflight = { position: test.position, at: now() };
    this.send(test.position < this.mfpTarget ? "step" : "rewind");
  };

  /* One `state` message: the whole view, or what changed since the version this page
   * holds. A change older than that is ignored (the whole view sent on joining overtook
   * it); one that does not follow it means a state was lost: join again, once, and the
   * server sends the whole view. */
  Game.prototype.receive = function (message) {
    if (!("since" in message)) { this.outOfStep = false; this.update(message); return; }
    if (this.outOfStep) { return; }
    var held = this.state && this.state.version;
    if (this.state && message.since === held) {
      var change = Object.assign({}, message);
      delete change.since;
      this.update(patched(this.state, change));
    } else if (!(this.state && message.version <= held)) {
      this.outOfStep = true;
      this.socket.emit("join", { token: this.token });
    }
  };

  Game.prototype.update = function (state) {
    var first = !this.state || this.state.phase !== state.phase;
    this.state = state;
    this.keepFrame(state);
    if (state.stopped) { this.stop(); return; }
    this.root.dataset.phase = state.phase;
    this.root.dataset.tick = state.tick;
    this.el.phase.textContent = PHASES[state.phase] || state.phase;
    if (first) {
      this.el.grid.setAttribute("aria-label", ("The grid. " + (state.hint || "")).trim());
      this.showPhase(state);
      this.el.guide.textContent = state.guide || "";
    }
    if (state.paused) {  // the server is saving: the world and its timer stand still
      this.say(state.paused + " Keys pressed now do nothing.");
    } else if (first || this.lost || this.root.dataset.paused) {
      this.say(this.hint());  // back after a reconnection or a pause
    }
    if (state.paused) { this.root.dataset.paused = "1"; } else { delete this.root.dataset.paused; }
    if (this.lost) { this.tellUnsent(); }
    this.lost = false;
    if (state.refused && state.refused.length) { this.refused("rejected"); }
    this.updateButtons(state.buttons || []);
    this.draw();
    if (state.test) { this.updateTest(state.test); }
    if (state.phase === "done") { this.finish(state); }
  };

  Game.prototype.showPhase = function (state) {
    var kind = state.test && state.test.kind;
    var phase = state.phase;
    this.el.interaction.hidden = phase !== "interaction";
    this.el.mfp.hidden = !(phase === "test" && kind === "mfp");
    this.el.planning.hidden = !(phase === "test" && (kind === "planning" || kind === "cd"));
    this.el["goal-panel"].hidden = !(phase === "test" && kind === "planning");
    this.el["cd-select"].hidden = phase !== "select";
    this.el.explore.hidden = kind !== "explore";
    this.el.done.hidden = phase !== "done";
    if (phase === "test" && kind === "mfp") {
      if (this.pick === null) { this.pick = state.test.chosen; }  // after a reload
      this.buildOptions(state.test);
    }
    if (phase === "select" && kind === "cd") {  // the picker opens on the frame shown now
      this.el["cd-slider"].max = state.test.frame_count - 1;
      this.el["cd-last"].textContent = state.test.frame_count - 1;
      this.pick = state.test.chosen === null ? state.test.frame_count - 1 : state.test.chosen;
      this.el["cd-slider"].value = this.pick;
      this.el["cd-frame"].textContent = this.pick;
    }
    var focus = this.root.querySelector("[data-gs='" + (phase === "select" ? "cd-slider" : "grid") + "']");
    if (focus && phase !== "done") { focus.focus(); }
  };

  /* The challenge's own buttons for the verbs allowed now, rebuilt only when they change. */
  Game.prototype.updateButtons = function (buttons) {
    var key = JSON.stringify(buttons), self = this, box = this.el.buttons;
    if (key === this.buttonsKey) { return; }
    this.buttonsKey = key;
    box.textContent = "";
    buttons.forEach(function (pair) {
      var button = document.createElement("button");
      button.type = "button";
      button.dataset.gsAction = pair[0];
      button.textContent = pair[1];
      button.addEventListener("click", function () {
        if (pair[0] === "quit") {
          if (!window.confirm("Give up this game? It ends now and scores 0.")) { return; }
          self.gaveUp = true;
        }
        self.send(pair[0]);
      });
      box.appendChild(button);
    });
    box.hidden = buttons.length === 0;
  };

  /* Cell size: the largest that fits the window beside the controls. */
  /* Pixels per cell: the grid (and the goal beside it, `panels`) fills the width, and
   * its height leaves room, within the window, for what is above it on the page and
   * for the `below` pixels of controls under it (every button a participant needs is
   * on screen without scrolling, at 1280x720 too). */
  Game.prototype.cellSize = function (size, panels, below) {
    var style = window.getComputedStyle(this.root);
    var inner = (this.root.clientWidth || window.innerWidth)
      - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    var width = Math.max(200, (inner - (panels - 1) * 40) / panels);  // 40: the gap, and some
    var top = this.el.grid.getBoundingClientRect().top + window.scrollY;
    var height = Math.max(160, window.innerHeight - top - below);
    return Math.max(4, Math.floor(Math.min(width / size[0], height / size[1])));
  };

  Game.prototype.draw = function () {
    var state = this.state;
    var planning = state.test && state.test.kind === "planning" && state.phase === "test";
    var mfp = state.test && state.test.kind === "mfp";
    var cd = state.test && state.test.kind === "cd";  // room for the picker from the start:
    // the picture keeps its size from the test to the choice of the frame
    var below = (mfp ? 300 : cd ? 240 : 110) + (document.querySelector("[data-continue]") ? 50 : 0);
    if (!(cd && state.phase === "select" && this.cell)) {  // the picker keeps the test's size
      this.cell = this.cellSize(state.size, planning ? 2 : 1, below);
    }
    var picked = state.phase === "select" && this.cdFrames[this.pick];
    for (var fit = 0; fit < 3; fit++) {  // the guess may leave too little room: shrink to fit
      drawFrame(this.el.grid, picked || state.frame, this.cell);
      if (planning && this.goalCell !== this.cell) { this.drawGoal(state); }
      var last = document.querySelector("[data-continue]") || this.root;  // the lowest control
      var over = last.getBoundingClientRect().bottom + window.scrollY + 8 - window.innerHeight;
      if (over <= 0 || this.cell <= 4) { break; }
      this.cell = Math.max(4, this.cell - Math.ceil(over / state.size[1]));
    }
  };

  /* The planning goal as the test states it (`test.goal_grid`: the test's first frame
   * with the goal colours on the target cells, or the goal an imported problem
   * recorded; what a model is shown), the target cells framed and the rest shaded out.
   * The same picture after a resize or a reload: it used to be drawn over the first
   * frame this page happened to show, which a reload mid-test changed. */
  Game.prototype.drawGoal = function (state) {
    var test = state.test, targets = {};
    test.goal_cells.forEach(function (c) { targets[c[0] + "," + c[1]] = true; });
    drawFrame(this.el.goal, test.goal_grid, this.cell, function (x, y) { return !targets[x + "," + y]; });
    var ctx = this.el.goal.getContext("2d"), cell = this.cell;
    test.goal_cells.forEach(function (c) {  // a frame around each target, whatever its colour
      ctx.lineWidth = 3; ctx.strokeStyle = "#ffffff";
      ctx.strokeRect(c[0] * cell + 2, c[1] * cell + 2, cell - 4, cell - 4);
      ctx.lineWidth = 2; ctx.strokeStyle = "#d00000";
      ctx.strokeRect(c[0] * cell + 4, c[1] * cell + 4, cell - 8, cell - 8);
    });
    this.goalCell = this.cell;
  };

  Game.prototype.buildOptions = function (test) {
    var self = this, box = this.el.options;
    box.textContent = "";
    test.options.forEach(function (colours, i) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "gs-option";
      button.setAttribute("aria-label", "Option " + (i + 1));
      button.setAttribute("aria-pressed", "false");
      button.dataset.option = i;
      var canvas = document.createElement("canvas");
      var frame = optionFrame(test.mask, colours);
      drawFrame(canvas, frame, Math.max(8, Math.floor(64 / Math.max(frame.length, frame[0].length))));
      button.appendChild(canvas);
      button.appendChild(document.createTextNode(" " + (i + 1)));
      button.addEventListener("click", function () { self.pick = i; self.markOption(); });
      box.appendChild(button);
    });
  };

  Game.prototype.updateTest = function (test) {
    if (test.kind === "mfp") {
      var slider = this.el["mfp-slider"];
      slider.max = test.length;
      if (this.mfpTarget === null) { slider.value = test.position; }
      this.el["mfp-position"].textContent = test.position;
      this.el["mfp-length"].textContent = test.length;
      this.el["mfp-action"].textContent = test.action_taken;
      this.markOption();
      this.stepTowardTarget();
    } else if (test.kind === "planning" || (test.kind === "cd" && this.state.phase === "test")) {
      var left = Math.max(0, Math.round((test.horizon - test.steps) / this.state.frame_rate));
      this.el["plan-left"].textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
    } else if (test.kind === "explore") {
      this.el["explore-steps"].textContent = test.steps;
      this.el["explore-budget"].textContent = test.budget;
      this.el["explore-goal"].textContent = test.goal_found ? "goal found" : "goal not found yet";
    }
  };

  /* The option chosen on this page is the one pressed. */
  Game.prototype.markOption = function () {
    var pick = this.pick;
    this.el.options.querySelectorAll(".gs-option").forEach(function (b) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.option) === pick));
    });
  };

  /* Change detection: keep each test frame as it is shown (its index is the step count),
   * and a frame the server showed on request, so the picker draws them without asking. */
  Game.prototype.keepFrame = function (state) {
    var test = state.test;
    if (!test || test.kind !== "cd") { return; }
    if (state.phase === "test" || (state.phase === "select" && test.chosen === null)) {
      this.cdFrames[test.steps] = state.frame;
    } else if (state.phase === "select") {
      this.cdFrames[test.chosen] = state.frame;
    }
  };

  /* What the server stored as the answer, in the page's words. */
  function stored(test) {
    if (!test || test.chosen === null || test.chosen === undefined) { return ""; }
    if (test.kind === "cd") { return "Your answer, as saved: frame " + test.chosen + "."; }
    if (test.kind === "mfp") { return "Your answer, as saved: option " + (test.chosen + 1) + "."; }
    return "";
  }

  var ENDINGS = {goal: "You reached the goal.", budget: "Your moves ran out.", "gave-up": "You gave up."};

  /* The game itself could not go on (one of its steps went over its limit): the
     attempt is over, through no fault of the participant, who may continue. */
  var STOPPED = "Sorry: this game stopped because of a fault in the game itself, not " +
    "anything you did. Please continue.";

  Game.prototype.stop = function () {
    if (this.stopped) { return; }
    this.stopped = true;
    this.release();
    this.root.dataset.stopped = "true";
    this.el.phase.textContent = "stopped";
    this.say(STOPPED);
    this.root.dispatchEvent(new CustomEvent("gridstudy:done", { detail: this.state, bubbles: true }));
  };

  Game.prototype.finish = function (state) {
    this.release();
    var ending = (state.test && state.test.ending) || (this.gaveUp ? "gave-up" : null);
    this.el.ending.textContent = ENDINGS[ending] || "Finished.";
    this.el.score.textContent = state.score;
    if (this.local && this.acked < this.local.logged()) {  // not all stored yet: not "as saved"
      this.say("Saving...");
      this.pendingFinish = state;
      this.flush();
      return;
    }
    this.announce(state);
  };

  Game.prototype.announce = function (state) {
    this.el.stored.textContent = stored(state.test);
    this.say("Saved.");
    if (this.options.onDone) { this.options.onDone(state); }
    this.root.dispatchEvent(new CustomEvent("gridstudy:done", { detail: state, bubbles: true }));
  };

  window.GridStudy = {
    mount: function (root, options) { return new Game(root, options); },
    optionFrame: optionFrame
  };

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-gs-autostart]").forEach(function (root) {
      root.gridstudy = window.GridStudy.mount(root);
    });
  });
})();
