/*
 * Claimgate's generic annotation form: any codebook of format 2, from its fields
 * (server-rendered in templates/annotator/fields/). Plugs into the shared machinery of
 * annotate.js (autosave, browser copy, submission); spans are made with spans.js.
 *
 * The state is the annotation itself: {values, reasons, spans, rationale}. A field not
 * answered is absent from `values`; U is null. The server checks everything again
 * through the record contract and names every problem next to its field.
 */
(function () {
  "use strict";

  function fieldsForm(core) {
    const codebook = core.data.codebook;
    const form = document.getElementById("label-form");
    const fields = codebook.fields;
    const byCode = {};
    fields.forEach(function (field) {
      byCode[field.code] = field;
    });
    const rationale = form.querySelector('textarea[name="rationale"]');
    const toolbar = document.getElementById("span-toolbar");
    const snapshotNames = {};
    core.snapshots.forEach(function (snapshot) {
      snapshotNames[snapshot.kind] = true;
    });
    let spans = [];
    let pending = null;
    let active = null;
    let highlighted = null;

    function fieldset(code) {
      return form.querySelector('fieldset[data-field="' + code + '"]');
    }

    function uBox(code) {
      return form.querySelector('input[data-u-for="' + code + '"]');
    }

    function readValue(field) {
      const name = "field-" + field.code;
      if (field.type === "choice" || field.type === "grade" || field.type === "verdict") {
        const raw = core.radioValue(form, name);
        if (raw === undefined) {
          return undefined;
        }
        if (raw === "U") {
          return null;
        }
        if (field.type === "grade") {
          return Number(raw);
        }
        if (field.type === "verdict") {
          return raw === "true";
        }
        return raw;
      }
      if (field.type === "number" || field.type === "date" || field.type === "text") {
        const box = uBox(field.code);
        if (box && box.checked) {
          return null;
        }
        const input = form.querySelector('[name="' + name + '"]');
        const raw = input.value;
        if (raw.trim() === "") {
          return undefined;
        }
        if (field.type === "number") {
          const number = Number(raw);
          return Number.isFinite(number) ? number : raw;
        }
        return raw;
      }
      return undefined;
    }

    function writeValue(field, present, value) {
      const name = "field-" + field.code;
      if (field.type === "choice" || field.type === "grade" || field.type === "verdict") {
        let radio;
        if (!present) {
          radio = undefined;
        } else if (value === null) {
          radio = "U";
        } else {
          radio = String(value);
        }
        core.setRadio(form, name, radio);
        return;
      }
      const input = form.querySelector('[name="' + name + '"]');
      const box = uBox(field.code);
      if (box) {
        box.checked = present && value === null;
      }
      if (input) {
        input.value = present && value !== null && value !== undefined ? String(value) : "";
        input.disabled = Boolean(box && box.checked);
      }
    }

    function collect() {
      const state = { values: {}, reasons: {}, spans: [], rationale: null };
      fields.forEach(function (field) {
        const value = readValue(field);
        if (value !== undefined) {
          state.values[field.code] = value;
        }
        const reason = form.querySelector('textarea[data-reason-for="' + field.code + '"]');
        if (reason && reason.value.trim()) {
          state.reasons[field.code] = reason.value;
        }
      });
      // A spans field holds its spans as its value; every other field's evidence is in
      // the annotation's span list, each span naming its field.
      fields.forEach(function (field) {
        if (field.type === "spans") {
          const own = spansFor(field.code).map(function (span) {
            return { snapshot: span.snapshot, start: span.start, end: span.end, quote: span.quote };
          });
          if (own.length || !field.required) {
            if (own.length) {
              state.values[field.code] = own;
            }
          } else {
            state.values[field.code] = [];
          }
        }
      });
      state.spans = spans
        .filter(function (span) {
          return byCode[span.field].type !== "spans";
        })
        .map(function (span) {
          return { field: span.field, snapshot: span.snapshot, start: span.start, end: span.end, quote: span.quote };
        });
      state.rationale = rationale.value.trim() ? rationale.value : null;
      return state;
    }

    function apply(state) {
      state = state && typeof state === "object" ? state : {};
      const values = state.values && typeof state.values === "object" ? state.values : {};
      const reasons = state.reasons && typeof state.reasons === "object" ? state.reasons : {};
      fields.forEach(function (field) {
        if (field.type === "spans") {
          return;
        }
        writeValue(field, field.code in values, values[field.code]);
        const reason = form.querySelector('textarea[data-reason-for="' + field.code + '"]');
        if (reason) {
          reason.value = typeof reasons[field.code] === "string" ? reasons[field.code] : "";
        }
      });
      spans = [];
      const given = (Array.isArray(state.spans) ? state.spans : []).slice();
      fields.forEach(function (field) {
        if (field.type === "spans" && Array.isArray(values[field.code])) {
          values[field.code].forEach(function (span) {
            given.push(Object.assign({}, span, { field: field.code }));
          });
        }
      });
      given.forEach(function (span) {
        if (
          span &&
          byCode[span.field] &&
          snapshotNames[span.snapshot] &&
          Number.isInteger(span.start) &&
          Number.isInteger(span.end)
        ) {
          spans.push({ field: span.field, snapshot: span.snapshot, start: span.start, end: span.end, quote: String(span.quote) });
        }
      });
      rationale.value = typeof state.rationale === "string" ? state.rationale : "";
    }

    function toAnnotation(state) {
      return { values: state.values, reasons: state.reasons, spans: state.spans, rationale: state.rationale };
    }

    function resolved(state, field) {
      return field.code in state.values && state.values[field.code] !== null;
    }

    function spansFor(code) {
      return spans.filter(function (span) {
        return span.field === code;
      });
    }

    function problems(state) {
      const found = [];
      fields.forEach(function (field) {
        const present = field.code in state.values;
        if (field.required && !present && field.type !== "spans") {
          found.push(field.label + ": give a value" + (field.allow_u ? " or U." : "."));
        }
        if (present && state.values[field.code] === null && !field.allow_u) {
          found.push(field.label + ": U is not allowed here.");
        }
        const hasReason = Boolean(state.reasons[field.code]);
        if (field.reason === "required" && present && !hasReason) {
          found.push(field.label + ": give a reason.");
        }
        if (field.reason === "required_when_resolved" && resolved(state, field) && !hasReason) {
          found.push(field.label + ": a resolved value needs a reason.");
        }
        if (field.evidence === "required" && resolved(state, field) && !spansFor(field.code).length) {
          found.push(field.label + ": a resolved value needs an evidence span: select the passage and attach it.");
        }
      });
      return found;
    }

    function spanItem(span, index) {
      return core.el(
        "li",
        { className: "span-item", "data-field": span.field, "data-start": span.start, "data-end": span.end, "data-in": span.snapshot },
        [
          core.el("button", {
            type: "button",
            className: "span-quote",
            "data-span-index": index,
            title: "Show in the " + span.snapshot,
            text: "“" + core.shorten(span.quote, 90) + "”",
          }),
          core.el("span", { className: "span-where muted", text: span.snapshot + " " + span.start + "–" + span.end }),
          core.el("button", {
            type: "button",
            className: "span-remove",
            "data-span-index": index,
            "aria-label": "Remove this span from " + byCode[span.field].label,
            text: "×",
          }),
        ]
      );
    }

    function refresh(state) {
      fields.forEach(function (field) {
        const missing = form.querySelector('[data-missing-for="' + field.code + '"]');
        if (missing) {
          const lacking = resolved(state, field) && spansFor(field.code).length === 0;
          missing.hidden = !lacking;
          fieldset(field.code).classList.toggle("has-problem", lacking);
        }
        const box = uBox(field.code);
        const input = form.querySelector('[name="field-' + field.code + '"]:not([type="radio"])');
        if (box && input) {
          input.disabled = box.checked;
        }
      });
      const key = JSON.stringify(spans);
      if (key === highlighted) {
        return;
      }
      highlighted = key;
      form.querySelectorAll("[data-spans-for]").forEach(function (list) {
        const items = [];
        spans.forEach(function (span, index) {
          if (span.field === list.dataset.spansFor) {
            items.push(spanItem(span, index));
          }
        });
        list.replaceChildren.apply(list, items);
      });
      core.highlight(function (snapshot) {
        const marks = [];
        spans.forEach(function (span, index) {
          if (span.snapshot === snapshot.kind) {
            marks.push({
              start: span.start,
              end: span.end,
              className: "j-field",
              key: "span:" + index,
              title: byCode[span.field].label,
            });
          }
        });
        return marks;
      });
    }

    form.addEventListener("click", function (event) {
      const remove = event.target.closest("button.span-remove");
      if (remove) {
        spans.splice(Number(remove.dataset.spanIndex), 1);
        core.changed();
        return;
      }
      const quote = event.target.closest("button.span-quote");
      if (quote) {
        core.flash("span:" + quote.dataset.spanIndex);
      }
    });

    // --- the toolbar after a selection ------------------------------------------------
    function placeToolbar(found) {
      if (!toolbar || !found) {
        if (toolbar) {
          toolbar.hidden = true;
        }
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
    document.addEventListener(
      "mousedown",
      function (event) {
        if (toolbar && !toolbar.hidden && event.button === 0 && !toolbar.contains(event.target)) {
          placeToolbar(null);
        }
      },
      true
    );
    if (toolbar) {
      toolbar.addEventListener("mousedown", function (event) {
        event.preventDefault(); // keep the selection while a button is pressed
      });
      toolbar.addEventListener("click", function (event) {
        const button = event.target.closest("button[data-attach]");
        const found = core.selection() || pending;
        if (!button || !found) {
          return;
        }
        const span = Object.assign({ field: button.dataset.attach }, found.span);
        const duplicate = spans.some(function (item) {
          return item.field === span.field && item.snapshot === span.snapshot && item.start === span.start && item.end === span.end;
        });
        if (!duplicate) {
          spans.push(span);
          spans.sort(function (a, b) {
            if (a.field !== b.field) {
              return a.field < b.field ? -1 : 1;
            }
            if (a.snapshot !== b.snapshot) {
              return a.snapshot < b.snapshot ? -1 : 1;
            }
            return a.start - b.start || a.end - b.end;
          });
        }
        core.clearSelection();
        core.changed();
      });
    }

    // --- keyboard: a field's key goes to it, an option's key chooses it -----------------
    const byShortcut = {};
    fields.forEach(function (field) {
      if (field.key) {
        byShortcut[field.key.toLowerCase()] = field.code;
      }
    });

    function activate(code) {
      active = code;
      form.querySelectorAll("fieldset[data-field]").forEach(function (node) {
        node.classList.toggle("is-active", node.dataset.field === code);
      });
      const node = fieldset(code);
      const target =
        node.querySelector('input[type="radio"]:checked') ||
        node.querySelector("input, textarea, select");
      if (target) {
        target.focus({ preventScroll: true });
      }
      node.scrollIntoView({ block: "nearest" });
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
        if (toolbar && !toolbar.hidden) {
          core.clearSelection();
        }
        return;
      }
      const focused = event.target.closest && event.target.closest("fieldset[data-field]");
      const code = focused ? focused.dataset.field : active;
      if (code) {
        const option = fieldset(code).querySelector('input[type="radio"][data-key="' + CSS.escape(key) + '"]');
        if (option) {
          event.preventDefault();
          option.checked = true;
          option.focus({ preventScroll: true });
          option.dispatchEvent(new Event("change", { bubbles: true }));
          return;
        }
      }
      if (byShortcut[key]) {
        event.preventDefault();
        activate(byShortcut[key]);
      }
    });

    return { collect: collect, apply: apply, toAnnotation: toAnnotation, problems: problems, refresh: refresh };
  }

  window.ClaimgateAnnotate.register("fields", fieldsForm);
})();
