/*
 * Claimgate annotation forms: the shared machinery (snapshot texts, selections, autosave
 * through htmx, a copy of the work in this browser, submission). The generic form of
 * every codebook on the engine (fields.js) plugs into it with ClaimgateAnnotate.register;
 * a codebook's claims field brings its editor (claims.js).
 *
 * The page's data comes from one json_script element (#annotate-data). The server checks
 * every annotation again; the checks here only help people before they submit.
 */
(function () {
  "use strict";

  const Spans = window.ClaimgateSpans;
  const factories = {};

  function register(unit, factory) {
    factories[unit] = factory;
  }

  window.ClaimgateAnnotate = { register: register };

  // --- small helpers ------------------------------------------------------------------

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(function ([name, value]) {
      if (value === null || value === undefined || value === false) {
        return;
      }
      if (name === "text") {
        node.textContent = value;
      } else if (name === "className") {
        node.className = value;
      } else if (name.startsWith("data-")) {
        node.setAttribute(name, String(value));
      } else {
        node.setAttribute(name, value === true ? "" : String(value));
      }
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function clock(date) {
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function shorten(text, size) {
    return text.length > size ? text.slice(0, size - 1) + "…" : text;
  }

  /** The value of a radio group: the chosen value as typed, or undefined when none is. */
  function radioValue(scope, name) {
    const checked = scope.querySelector('input[type="radio"][name="' + name + '"]:checked');
    return checked ? checked.value : undefined;
  }

  function setRadio(scope, name, value) {
    scope.querySelectorAll('input[type="radio"][name="' + name + '"]').forEach(function (input) {
      input.checked = value !== undefined && input.value === value;
    });
  }

  function isTyping(target) {
    if (!target || !target.tagName) {
      return false;
    }
    if (target.isContentEditable) {
      return true;
    }
    const tag = target.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select") {
      return true;
    }
    if (tag !== "input") {
      return false;
    }
    const type = (target.getAttribute("type") || "text").toLowerCase();
    return ["radio", "checkbox", "range", "button", "submit", "reset"].indexOf(type) < 0;
  }

  // --- the page ---------------------------------------------------------------------

  function start() {
    const dataNode = document.getElementById("annotate-data");
    if (!dataNode || !Spans) {
      return;
    }
    const data = JSON.parse(dataNode.textContent);
    // Every codebook on the engine has one generic form (fields.js), whatever its unit kind.
    const factory = factories[data.form || data.unit];
    if (!factory) {
      return;
    }
    const core = createCore(data);
    const controller = factory(core);
    core.run(controller);
  }

  function createCore(data) {
    const labelForm = document.getElementById("label-form");
    const draftForm = document.getElementById("draft-form");
    const payloadInput = document.getElementById("draft-payload");
    const versionInput = document.getElementById("draft-version");
    const annotationInput = document.getElementById("annotation-input");
    const submitButton = document.getElementById("submit-label");
    const errorsBox = document.getElementById("form-errors");
    const statusBox = document.getElementById("draft-status");
    const expiredBanner = document.getElementById("session-expired");
    const restoreNotice = document.getElementById("restore-notice");
    const storageKey = data.storage_key;

    let controller = null;
    let ackedJson = null; // the payload the server last confirmed
    let inflightJson = null;
    let submission = null; // the submit guard (submit.js), set up below
    // An autosave on its way when the label is submitted could reach the server after the
    // submission and bring back the draft it deleted: the submission waits for its answer.
    let saving = false;
    let selection = null; // the last selection inside one snapshot
    const selectionListeners = [];

    // A selection made while the page loaded: setting the texts and drawing the highlights
    // replace the text nodes it lies in, so it is taken here and given back once the form
    // runs (see run).
    const early = Spans.selectionWithin(document.querySelectorAll("[data-snapshot]"));
    // Each snapshot element shows exactly its text (set again from the byte-exact JSON).
    const snapshots = ClaimgateSpans.attachSnapshots(data);

    // --- browser copy ------------------------------------------------------------------

    function readLocal() {
      try {
        const raw = window.localStorage.getItem(storageKey);
        return raw ? JSON.parse(raw) : null;
      } catch (err) {
        return null;
      }
    }

    function writeLocal(state, dirty) {
      try {
        window.localStorage.setItem(
          storageKey,
          JSON.stringify({
            state: state,
            dirty: dirty,
            base: Number(versionInput.value),
            parent: data.parent_digest,
            at: Date.now(),
          })
        );
      } catch (err) {
        // Storage full or disabled: the server draft still holds the work.
      }
    }

    function dropLocal() {
      try {
        window.localStorage.removeItem(storageKey);
      } catch (err) {
        // nothing to do
      }
    }

    // --- state changes and autosave -----------------------------------------------------

    function currentJson() {
      return JSON.stringify(controller.collect());
    }

    function changed() {
      const state = controller.collect();
      const json = JSON.stringify(state);
      payloadInput.value = json;
      writeLocal(state, json !== ackedJson);
      controller.refresh(state);
      submission.refresh();
      if (json !== ackedJson && !submission.isSubmitting()) {
        draftForm.dispatchEvent(new CustomEvent("cg-change"));
      }
    }

    function setStatus(text, className) {
      statusBox.replaceChildren(el("span", { className: className || "", text: text }));
    }

    function showExpired() {
      expiredBanner.hidden = false;
    }

    draftForm.addEventListener("htmx:confirm", function (event) {
      if (submission.isSubmitting()) {
        event.preventDefault();
      }
    });
    draftForm.addEventListener("htmx:configRequest", function () {
      inflightJson = payloadInput.value;
    });
    draftForm.addEventListener("htmx:beforeSend", function () {
      saving = true;
    });
    draftForm.addEventListener("htmx:afterRequest", function (event) {
      const xhr = event.detail.xhr;
      const status = xhr ? xhr.status : 0;
      if (status === 200) {
        const version = xhr.getResponseHeader("X-Draft-Version");
        if (version) {
          versionInput.value = version;
        }
        ackedJson = inflightJson;
        expiredBanner.hidden = true;
        const state = controller.collect();
        writeLocal(state, JSON.stringify(state) !== ackedJson);
      } else if (status === 401) {
        showExpired();
      } else if (status === 403) {
        showExpired();
        setStatus(
          "Not stored: the server refused the request (403). Your session may have expired or " +
            "changed — log in again or reload; your work is kept in this browser.",
          "draft-bad"
        );
      } else if (status === 0) {
        setStatus("Not stored: no connection. Your work is kept in this browser.", "draft-bad");
      } else if (status >= 500) {
        setStatus("Not stored: server error " + status + ". Your work is kept in this browser.", "draft-bad");
      }
      saving = false;
      submission.release();
    });
    statusBox.addEventListener("click", function (event) {
      const button = event.target.closest("[data-draft-action]");
      if (!button) {
        return;
      }
      if (button.dataset.draftAction === "reload") {
        dropLocal();
        window.location.reload();
      } else if (button.dataset.draftAction === "overwrite") {
        versionInput.value = button.dataset.version;
        setStatus("Storing this tab’s work…", "");
        draftForm.dispatchEvent(new CustomEvent("cg-change"));
      }
    });

    // --- selections ----------------------------------------------------------------------

    function readSelection() {
      const sel = window.getSelection();
      if (!sel || sel.rangeCount === 0 || sel.isCollapsed) {
        return null;
      }
      const range = sel.getRangeAt(0);
      const hits = snapshots.filter(function (snapshot) {
        return range.intersectsNode(snapshot.el);
      });
      if (hits.length !== 1) {
        return null;
      }
      const snapshot = hits[0];
      const offsets = Spans.rangeOffsets(snapshot.el, range);
      if (!offsets) {
        return null;
      }
      const span = Spans.spanFromUtf16(snapshot.text, snapshot.kind, offsets[0], offsets[1]);
      if (!span) {
        return null;
      }
      return { snapshot: snapshot, span: span, rect: range.getBoundingClientRect() };
    }

    function collapsedInsideSnapshot() {
      const sel = window.getSelection();
      if (!sel || sel.rangeCount === 0 || !sel.isCollapsed) {
        return false;
      }
      const node = sel.anchorNode;
      return snapshots.some(function (snapshot) {
        return snapshot.el.contains(node);
      });
    }

    let selectionTimer = null;
    // While the mouse button is down the person is still dragging: a toolbar shown under
    // the pointer then would be dragged into the selection. Wait for the release.
    let dragging = false;
    function selectionChanged() {
      window.clearTimeout(selectionTimer);
      selectionTimer = window.setTimeout(function () {
        if (dragging) {
          return;
        }
        const found = readSelection();
        const live = found !== null;
        if (found) {
          selection = found;
        } else if (collapsedInsideSnapshot()) {
          selection = null;
        }
        selectionListeners.forEach(function (listener) {
          listener(selection, live);
        });
      }, 60);
    }
    document.addEventListener("selectionchange", selectionChanged);
    document.addEventListener(
      "mousedown",
      function (event) {
        dragging = event.button === 0;
      },
      true,
    );
    document.addEventListener(
      "mouseup",
      function () {
        dragging = false;
        selectionChanged();
      },
      true,
    );

    function clearSelection() {
      selection = null;
      const sel = window.getSelection();
      if (sel) {
        sel.removeAllRanges();
      }
      selectionListeners.forEach(function (listener) {
        listener(null, false);
      });
    }

    // --- highlights ----------------------------------------------------------------------

    /** Highlight every snapshot: `marksFor(snapshot)` gives that snapshot's marks. */
    function highlight(marksFor) {
      snapshots.forEach(function (snapshot) {
        Spans.renderHighlights(snapshot.el, snapshot.text, marksFor(snapshot));
      });
    }

    function flash(key) {
      let first = null;
      document.querySelectorAll("mark.span-highlight").forEach(function (mark) {
        if ((mark.dataset.keys || "").split(" ").indexOf(key) >= 0) {
          mark.classList.add("flash");
          window.setTimeout(function () {
            mark.classList.remove("flash");
          }, 1200);
          first = first || mark;
        }
      });
      if (first) {
        first.scrollIntoView({ block: "center", behavior: "smooth" });
      }
    }

    // --- problems and submission --------------------------------------------------------

    submission = ClaimgateSubmit.guard({
      form: labelForm,
      button: submitButton,
      errorsBox: errorsBox,
      heading: "Before you submit:",
      busyText: "Submitting…",
      problems: function () {
        return controller.problems(controller.collect());
      },
      waiting: function () {
        return saving; // sent by the autosave's htmx:afterRequest (release)
      },
      prepare: function () {
        const state = controller.collect();
        annotationInput.value = JSON.stringify(controller.toAnnotation(state));
        // Kept until the server has the label: a submission lost to an expired session
        // comes back after the next login.
        writeLocal(state, true);
      },
    });

    labelForm.addEventListener("input", function (event) {
      if (event.target.closest("[data-no-state]")) {
        return;
      }
      changed();
    });
    labelForm.addEventListener("change", function (event) {
      if (event.target.closest("[data-no-state]")) {
        return;
      }
      changed();
    });

    // --- start ---------------------------------------------------------------------------

    function restoreChoice(local) {
      restoreNotice.replaceChildren(
        el("span", {
          text:
            "This browser holds unsent work on this item from " +
            clock(new Date(local.at)) +
            ", but a newer draft was stored since (another tab or device). ",
        }),
        el("button", { type: "button", "data-restore": "local", text: "Use this browser’s copy" }),
        " ",
        el("button", { type: "button", "data-restore": "discard", text: "Keep the stored draft" })
      );
      restoreNotice.hidden = false;
      restoreNotice.addEventListener("click", function (event) {
        const button = event.target.closest("[data-restore]");
        if (!button) {
          return;
        }
        if (button.dataset.restore === "local") {
          controller.apply(local.state);
          changed();
        } else {
          dropLocal();
        }
        restoreNotice.hidden = true;
      });
    }

    function run(ctrl) {
      controller = ctrl;
      const initial = data.initial || {};
      controller.apply(initial.state || null);
      // What the server already holds: nothing to autosave until the user changes it
      // (a refused or stale submission is not held yet, so it is saved as the draft).
      ackedJson = initial.origin === "submitted" ? null : currentJson();
      const local = readLocal();
      // A copy the form cannot read (kept by an earlier form, in another shape) is left
      // out: the server's draft holds that form's work.
      const readable = !controller.readable || (local && controller.readable(local.state));
      const fresh =
        local && local.dirty && local.state && readable && local.parent === data.parent_digest;
      if (local && (local.parent !== data.parent_digest || !readable)) {
        dropLocal(); // made for an earlier revision (submitted since), or unreadable
      }
      if (initial.origin === "submitted") {
        // Refused or stale: the form holds what was sent; store it as the draft too.
        changed();
      } else if (fresh && local.base === data.draft_version) {
        controller.apply(local.state);
        if (JSON.stringify(controller.collect()) !== ackedJson) {
          restoreNotice.replaceChildren(
            el("span", {
              text:
                "Restored your unsent work from this browser (" + clock(new Date(local.at)) + ").",
            })
          );
          restoreNotice.hidden = false;
        }
        changed();
      } else if (fresh && JSON.stringify(local.state) !== currentJson()) {
        controller.refresh(controller.collect());
        restoreChoice(local);
      } else {
        payloadInput.value = currentJson();
        controller.refresh(controller.collect());
      }
      const useLatest = document.getElementById("use-latest");
      if (useLatest && data.head_state) {
        useLatest.addEventListener("click", function () {
          controller.apply(data.head_state);
          changed();
        });
      }
      if (Spans.reselect(early)) {
        selectionChanged();
      }
    }

    return {
      data: data,
      snapshots: snapshots,
      el: el,
      shorten: shorten,
      radioValue: radioValue,
      setRadio: setRadio,
      isTyping: isTyping,
      changed: changed,
      highlight: highlight,
      flash: flash,
      clearSelection: clearSelection,
      /** The selection to use now: the live one, else the last one made in a snapshot. */
      selection: function () {
        const live = readSelection();
        if (live) {
          selection = live;
        }
        return selection;
      },
      onSelection: function (listener) {
        selectionListeners.push(listener);
      },
      run: run,
    };
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    window.setTimeout(start, 0);
  }
})();
