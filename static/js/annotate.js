/*
 * Claimgate annotation forms: the shared machinery (snapshot texts, selections, autosave
 * through htmx, a copy of the work in this browser, submission) and the source-risk form.
 * The claims form (claims.js) plugs into the same machinery with ClaimgateAnnotate.register.
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
    // A codebook of format 2 has one generic form (fields.js) whatever its unit kind.
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
      const fresh =
        local && local.dirty && local.state && local.parent === data.parent_digest;
      if (local && local.parent !== data.parent_digest) {
        dropLocal(); // made for an earlier revision, which has been submitted since
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

  // --- the source-risk form -------------------------------------------------------------

  const JUDGMENT_VALUES = { 1: "1", 0: "0" };

  function judgmentToRadio(value) {
    if (value === null) {
      return "U";
    }
    return JUDGMENT_VALUES[value];
  }

  function radioToJudgment(value) {
    if (value === undefined) {
      return undefined;
    }
    return value === "U" ? null : Number(value);
  }

  function sourceRiskForm(core) {
    const codebook = core.data.codebook;
    const form = document.getElementById("label-form");
    const predicates = codebook.predicates.map(function (item) {
      return item.key;
    });
    const judgments = predicates.concat(["passage_support"]);
    const labels = {};
    codebook.predicates.forEach(function (item) {
      labels[item.key] = item.key + " (" + item.label + ")";
    });
    labels.passage_support = codebook.passage_support.label;
    const dimensions = codebook.evidence_dimensions;
    const roleSelect = form.querySelector('select[name="source_role"]');
    const roleHelp = document.getElementById("source-role-help");
    const rationale = form.querySelector('textarea[name="rationale"]');
    const toolbar = document.getElementById("span-toolbar");
    const snapshotNames = { query: "query", answer: "answer", source: "source" };
    let spans = emptySpans();
    let pending = null; // the selection the toolbar would attach
    let active = null; // the predicate chosen with its shortcut
    let highlighted = null; // the spans the snapshots show now

    function emptySpans() {
      const result = {};
      judgments.forEach(function (key) {
        result[key] = [];
      });
      return result;
    }

    function inputName(judgment) {
      return judgment === "passage_support" ? "passage_support" : "pred-" + judgment;
    }

    function collect() {
      const state = { predicates: {}, spans: {}, evidence: {} };
      predicates.forEach(function (key) {
        const value = radioToJudgment(core.radioValue(form, inputName(key)));
        if (value !== undefined) {
          state.predicates[key] = value;
        }
      });
      const support = radioToJudgment(core.radioValue(form, "passage_support"));
      if (support !== undefined) {
        state.passage_support = support;
      }
      state.source_role = roleSelect.value || null;
      judgments.forEach(function (key) {
        if (spans[key].length) {
          state.spans[key] = spans[key].map(function (span) {
            return { snapshot: span.snapshot, start: span.start, end: span.end, quote: span.quote };
          });
        }
      });
      dimensions.forEach(function (dim) {
        const raw = form.querySelector('input[name="evidence-' + dim.key + '"]').value.trim();
        if (raw !== "") {
          const number = Number(raw);
          state.evidence[dim.key] = Number.isFinite(number) ? number : raw;
        }
      });
      state.rationale = rationale.value.trim() ? rationale.value : null;
      return state;
    }

    function apply(state) {
      state = state && typeof state === "object" ? state : {};
      const values = state.predicates && typeof state.predicates === "object" ? state.predicates : {};
      predicates.forEach(function (key) {
        core.setRadio(form, inputName(key), key in values ? judgmentToRadio(values[key]) : undefined);
      });
      core.setRadio(
        form,
        "passage_support",
        "passage_support" in state ? judgmentToRadio(state.passage_support) : undefined
      );
      const roles = codebook.source_roles.map(function (role) {
        return role.key;
      });
      roleSelect.value = roles.indexOf(state.source_role) >= 0 ? state.source_role : "";
      spans = emptySpans();
      const given = state.spans && typeof state.spans === "object" ? state.spans : {};
      judgments.forEach(function (key) {
        (Array.isArray(given[key]) ? given[key] : []).forEach(function (span) {
          if (span && snapshotNames[span.snapshot] && Number.isInteger(span.start)) {
            spans[key].push({
              snapshot: span.snapshot,
              start: span.start,
              end: span.end,
              quote: String(span.quote),
            });
          }
        });
      });
      const evidence = state.evidence && typeof state.evidence === "object" ? state.evidence : {};
      dimensions.forEach(function (dim) {
        const input = form.querySelector('input[name="evidence-' + dim.key + '"]');
        let value = evidence[dim.key];
        if (value && typeof value === "object") {
          value = value.value;
        }
        input.value = value === undefined || value === null ? "" : String(value);
      });
      rationale.value = typeof state.rationale === "string" ? state.rationale : "";
    }

    function toAnnotation(state) {
      const annotation = {
        predicates: state.predicates,
        source_role: state.source_role,
        spans: state.spans,
        evidence: state.evidence,
        rationale: state.rationale,
      };
      if ("passage_support" in state) {
        annotation.passage_support = state.passage_support;
      }
      return annotation;
    }

    function problems(state) {
      const found = [];
      predicates.forEach(function (key) {
        if (!(key in state.predicates)) {
          found.push(labels[key] + ": choose 1, 0 or U.");
        }
      });
      if (!("passage_support" in state)) {
        found.push(labels.passage_support + ": choose 1, 0 or U.");
      }
      judgments.forEach(function (key) {
        const value = key === "passage_support" ? state.passage_support : state.predicates[key];
        if ((value === 0 || value === 1) && !(state.spans[key] || []).length) {
          found.push(
            labels[key] +
              " is " +
              value +
              " but has no evidence span: select the passage and attach it to " +
              (key === "passage_support" ? "passage support" : key) +
              "."
          );
        }
      });
      if (!state.source_role) {
        found.push("Source role: choose one of the roles.");
      }
      dimensions.forEach(function (dim) {
        const value = state.evidence[dim.key];
        if (value === undefined) {
          found.push(dim.label + ": give a value between 0 and 1.");
        } else if (typeof value !== "number" || value < 0 || value > 1) {
          found.push(dim.label + ": " + value + " is not a number between 0 and 1.");
        }
      });
      return found;
    }

    function spanItem(key, span, index) {
      return core.el(
        "li",
        {
          className: "span-item",
          "data-judgment": key,
          "data-start": span.start,
          "data-end": span.end,
          "data-in": span.snapshot,
        },
        [
          core.el("button", {
            type: "button",
            className: "span-quote",
            "data-span-key": key + ":" + index,
            title: "Show in the " + span.snapshot,
            text: "“" + core.shorten(span.quote, 90) + "”",
          }),
          core.el("span", {
            className: "span-where muted",
            text: span.snapshot + " " + span.start + "–" + span.end,
          }),
          core.el("button", {
            type: "button",
            className: "span-remove",
            "data-span-key": key + ":" + index,
            "aria-label": "Remove this span from " + key,
            text: "×",
          }),
        ]
      );
    }

    /** Hints on every change; span lists and highlights only when the spans changed. */
    function refresh(state) {
      judgments.forEach(function (key) {
        const value = key === "passage_support" ? state.passage_support : state.predicates[key];
        const missing = (value === 0 || value === 1) && spans[key].length === 0;
        form.querySelector('[data-missing-for="' + key + '"]').hidden = !missing;
        form.querySelector('fieldset[data-judgment="' + key + '"]').classList.toggle("has-problem", missing);
      });
      const role = codebook.source_roles.find(function (item) {
        return item.key === state.source_role;
      });
      roleHelp.textContent = role
        ? "Look for: " + role.look_for
        : "Choose a role to see what evidence to look for.";
      form.querySelectorAll("input[data-range-for]").forEach(function (range) {
        const number = document.getElementById(range.dataset.rangeFor);
        const value = Number(number.value);
        const set = number.value.trim() !== "" && Number.isFinite(value);
        range.classList.toggle("unset", !set);
        if (set) {
          range.value = String(value);
        }
      });
      const spansKey = JSON.stringify(spans);
      if (spansKey === highlighted) {
        return;
      }
      highlighted = spansKey;
      judgments.forEach(function (key) {
        const list = form.querySelector('[data-spans-for="' + key + '"]');
        list.replaceChildren.apply(
          list,
          spans[key].map(function (span, index) {
            return spanItem(key, span, index);
          })
        );
      });
      core.highlight(function (snapshot) {
        const marks = [];
        judgments.forEach(function (key) {
          spans[key].forEach(function (span, index) {
            if (span.snapshot === snapshot.kind) {
              marks.push({
                start: span.start,
                end: span.end,
                className: "j-" + key,
                key: key + ":" + index,
                title: labels[key],
              });
            }
          });
        });
        return marks;
      });
    }

    form.addEventListener("click", function (event) {
      const remove = event.target.closest("button.span-remove");
      if (remove) {
        const [key, index] = remove.dataset.spanKey.split(":");
        spans[key].splice(Number(index), 1);
        core.changed();
        return;
      }
      const quote = event.target.closest("button.span-quote");
      if (quote) {
        core.flash(quote.dataset.spanKey);
      }
    });

    // Sliders mirror the number inputs, which hold the value.
    form.querySelectorAll("input[data-range-for]").forEach(function (range) {
      range.setAttribute("data-no-state", "");
      range.addEventListener("input", function () {
        const number = document.getElementById(range.dataset.rangeFor);
        number.value = range.value;
        core.changed();
      });
    });

    // The toolbar after a selection.
    function placeToolbar(found) {
      if (!found) {
        toolbar.hidden = true;
        pending = null;
        return;
      }
      pending = found;
      toolbar.hidden = false;
      const rect = found.rect;
      const width = toolbar.offsetWidth;
      const left = Math.max(8, Math.min(window.innerWidth - width - 8, rect.left + rect.width / 2 - width / 2));
      let top = rect.bottom + 8;
      if (top + toolbar.offsetHeight > window.innerHeight - 8) {
        top = Math.max(8, rect.top - toolbar.offsetHeight - 8);
      }
      toolbar.style.left = left + window.scrollX + "px";
      toolbar.style.top = top + window.scrollY + "px";
    }

    core.onSelection(function (found, live) {
      placeToolbar(live ? found : null);
    });
    // The snapshot panes scroll on their own: keep the toolbar beside the selection.
    document.addEventListener(
      "scroll",
      function () {
        if (!toolbar.hidden && pending) {
          const range = window.getSelection();
          if (range && range.rangeCount && !range.isCollapsed) {
            placeToolbar(Object.assign({}, pending, { rect: range.getRangeAt(0).getBoundingClientRect() }));
          }
        }
      },
      { capture: true, passive: true },
    );
    // A press elsewhere starts another selection (or ends this one): the toolbar goes until
    // that one is made, so that it never offers a selection that is no longer there.
    document.addEventListener(
      "mousedown",
      function (event) {
        if (!toolbar.hidden && event.button === 0 && !toolbar.contains(event.target)) {
          placeToolbar(null);
        }
      },
      true,
    );
    toolbar.addEventListener("mousedown", function (event) {
      event.preventDefault(); // keep the selection while a button is pressed
    });
    toolbar.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-attach]");
      const found = core.selection() || pending;
      if (!button || !found) {
        return;
      }
      const key = button.dataset.attach;
      const span = found.span;
      const duplicate = spans[key].some(function (item) {
        return item.snapshot === span.snapshot && item.start === span.start && item.end === span.end;
      });
      if (!duplicate) {
        spans[key].push(span);
        spans[key].sort(function (a, b) {
          return a.snapshot === b.snapshot ? a.start - b.start || a.end - b.end : a.snapshot < b.snapshot ? -1 : 1;
        });
      }
      core.clearSelection();
      core.changed();
    });

    // Keyboard: a predicate's letter chooses it, then 1 / 0 / u set it.
    const byShortcut = {};
    codebook.predicates.forEach(function (item) {
      if (item.shortcut) {
        byShortcut[item.shortcut.toLowerCase()] = item.key;
      }
    });

    function activate(key) {
      active = key;
      form.querySelectorAll("fieldset.judgment").forEach(function (fieldset) {
        fieldset.classList.toggle("is-active", fieldset.dataset.judgment === key);
      });
      const fieldset = form.querySelector('fieldset[data-judgment="' + key + '"]');
      const target =
        fieldset.querySelector('input[type="radio"]:checked') || fieldset.querySelector('input[type="radio"]');
      target.focus({ preventScroll: true });
      fieldset.scrollIntoView({ block: "nearest" });
    }

    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) {
        return;
      }
      if (core.isTyping(event.target)) {
        return;
      }
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      if (key === "Escape") {
        if (!toolbar.hidden) {
          core.clearSelection();
        }
        return;
      }
      if (byShortcut[key]) {
        event.preventDefault();
        activate(byShortcut[key]);
        return;
      }
      if (key === "1" || key === "0" || key === "u") {
        const focused = event.target.closest && event.target.closest("fieldset.judgment");
        const judgment = focused ? focused.dataset.judgment : active;
        if (!judgment) {
          return;
        }
        event.preventDefault();
        const value = key === "u" ? "U" : key;
        const radio = form.querySelector('input[name="' + inputName(judgment) + '"][value="' + value + '"]');
        if (radio) {
          radio.checked = true;
          radio.focus({ preventScroll: true });
          radio.dispatchEvent(new Event("change", { bubbles: true }));
        }
      }
    });

    return {
      collect: collect,
      apply: apply,
      toAnnotation: toAnnotation,
      problems: problems,
      refresh: refresh,
    };
  }

  register("tuple", sourceRiskForm);

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    window.setTimeout(start, 0);
  }
})();
