/*
 * The claims editor: claims selected in the answer, each with a source, a quote span in
 * that source, a kind, a reason and its claim verdicts (true, false or unknown), with its
 * keyboard (a, q, n, p, s, c, v, then t / f / u; ? lists them; Ctrl+Enter submits).
 *
 * It is the widget of a `claims` field in the generic form: fields.js mounts it through
 * window.ClaimgateFieldWidgets.claims; its elements are templates/annotator/fields/_claims.html.
 * Uses the shared machinery of annotate.js (core) and the span helpers of spans.js.
 *
 * The field says what a claim looks like (`field.claims`, annotator/labelling/fields_page.py):
 * a format-2 claim cites its source by snapshot name (`source`: "source:N") and has one key
 * per claim verdict of the field; a format-1 claim cites it by digest (`source_digest`) and
 * has `supported` and `accurate`.
 */
(function () {
  "use strict";

  const VALUES = { true: true, false: false, null: null, U: null };
  // The radio values of true / false / unknown: a claim's unknown is "null", a verdict
  // field's U is "U".
  const KEY_VALUES = { t: ["true"], f: ["false"], u: ["null", "U"] };
  // Where t / f / u act when it has the focus: a claim's verdict, a verdict field.
  const VERDICT_SETS = "fieldset.claim-judgment, fieldset.judgment.field-verdict";
  const VERDICT_PROBLEMS = {
    supported: "choose whether the quote supports it (true, false or unknown).",
    accurate: "choose whether it is accurate (true, false or unknown).",
  };

  function toRadio(value) {
    if (value === true) {
      return "true";
    }
    if (value === false) {
      return "false";
    }
    return value === null ? "null" : undefined;
  }

  function fromRadio(value) {
    return value === undefined ? undefined : VALUES[value];
  }

  function shown(value) {
    if (value === true) {
      return "true";
    }
    if (value === false) {
      return "false";
    }
    return "unknown";
  }

  /**
   * The claims editor on the page's claims elements (#claims, #claim-template, #add-claim,
   * #selection-preview, #show-shortcuts, #shortcuts-dialog; one editor per page).
   *
   * `config`: {shape ("format1" | "format2"), source_key, kinds [{key, label}], verdicts
   * [{code, label, key}], summary, summary_verdict, reason_required, keys {add, quote, next,
   * previous, verdicts}} (a key "" is not used). The sources a claim may cite are the
   * template's source list (each option's value as the claim stores it, its snapshot name,
   * digest and label).
   * `hooks`: {failed, stated(state) (the answer-level summary verdict, undefined when not
   * chosen), verdictLabel, verdictSets() (the answer-level verdict fieldsets that v goes
   * through)}.
   *
   * Its value is the list of claims in the field's shape; a claim verdict not chosen is
   * left out (`toValue` writes it as null for format 1, whose claims always have both;
   * the page names it before).
   */
  function claimsEditor(core, config, hooks) {
    const form = document.getElementById("label-form");
    const list = document.getElementById("claims");
    const template = document.getElementById("claim-template");
    const addButton = document.getElementById("add-claim");
    const preview = document.getElementById("selection-preview");
    const summaryValue = document.getElementById("claims-summary-value");
    const mismatch = document.getElementById("summary-mismatch");
    const mismatchValue = document.getElementById("summary-mismatch-value");
    const format1 = config.shape === "format1";
    const sourceKey = config.source_key || (format1 ? "source_digest" : "source");
    const keys = config.keys || {};
    const verdicts = config.verdicts.map(function (item) {
      return item.code;
    });
    const verdictLabels = {};
    const verdictByKey = {};
    config.verdicts.forEach(function (item) {
      verdictLabels[item.code] = item.label || item.code;
      if (item.key) {
        verdictByKey[item.key] = item.code;
      }
    });
    const hasSupported = verdicts.indexOf("supported") >= 0;
    const kinds = config.kinds.map(function (item) {
      return item.key;
    });
    // The sources a claim may cite: its value in the claim (digest or snapshot name), its
    // snapshot name and digest (whichever the page's snapshots carry) and label.
    const sources = Array.from(template.content.querySelectorAll("select.claim-source option"))
      .filter(function (option) {
        return option.value !== "";
      })
      .map(function (option) {
        return {
          value: option.value,
          name: option.dataset.sourceName || null,
          digest: option.dataset.sourceDigest || null,
          label: option.dataset.sourceLabel || option.textContent,
        };
      });
    const byValue = {};
    sources.forEach(function (source) {
      if (!(source.value in byValue)) {
        byValue[source.value] = source;
      }
    });

    /** The source a snapshot shows (by its name, or its digest where a page marks it), or null. */
    function sourceOf(snapshot) {
      for (const source of sources) {
        if ((snapshot.digest && source.digest === snapshot.digest) || (source.name && source.name === snapshot.kind)) {
          return source;
        }
      }
      return null;
    }

    function sourceLabel(value) {
      return byValue[value] ? byValue[value].label : "a source";
    }

    // --- one claim's element -------------------------------------------------------------

    function buildClaim(claim) {
      const node = template.content.firstElementChild.cloneNode(true);
      const id = claim.id;
      node.dataset.claimId = id;
      node.claimSpan = claim.span;
      node.claimQuote = claim.quote_span || null;
      node.querySelector(".claim-title").textContent = "Claim " + id;
      const prefix = "claim-" + id;
      node.querySelectorAll('input[type="radio"]').forEach(function (input, index) {
        input.name = prefix + "-" + input.dataset.field;
        input.id = prefix + "-" + input.dataset.field + "-" + index;
      });
      const source = node.querySelector("select.claim-source");
      source.id = prefix + "-source";
      node.querySelector(".claim-source-label").htmlFor = source.id;
      const kind = node.querySelector("select.claim-kind");
      kind.id = prefix + "-kind";
      node.querySelector(".claim-kind-label").htmlFor = kind.id;
      const reason = node.querySelector("textarea.claim-reason");
      reason.id = prefix + "-reason";
      node.querySelector(".claim-reason-label").htmlFor = reason.id;
      const cited = claim[sourceKey];
      source.value = typeof cited === "string" && cited in byValue ? cited : "";
      kind.value = kinds.indexOf(claim.kind) >= 0 ? claim.kind : kinds[0];
      verdicts.forEach(function (code) {
        core.setRadio(node, prefix + "-" + code, toRadio(claim[code]));
      });
      reason.value = typeof claim.reason === "string" ? claim.reason : "";
      paintClaim(node);
      return node;
    }

    function paintClaim(node) {
      const span = node.claimSpan;
      const text = node.querySelector(".claim-text");
      text.replaceChildren(
        core.el("button", {
          type: "button",
          className: "span-quote",
          "data-span-key": "claim:" + node.dataset.claimId,
          title: "Show in the answer",
          text: "“" + core.shorten(span.quote, 200) + "”",
        }),
        core.el("span", { className: "span-where muted", text: " answer " + span.start + "–" + span.end })
      );
      const quote = node.claimQuote;
      const quoteText = node.querySelector(".claim-quote-text");
      quoteText.hidden = !quote;
      node.querySelector(".claim-quote-clear").hidden = !quote;
      if (quote) {
        quoteText.replaceChildren(
          core.el("button", {
            type: "button",
            className: "span-quote",
            "data-span-key": "quote:" + node.dataset.claimId,
            title: "Show in the source",
            text: "“" + core.shorten(quote.quote, 200) + "”",
          }),
          core.el("span", { className: "span-where muted", text: " source " + quote.start + "–" + quote.end })
        );
      }
      const opinion = node.querySelector("select.claim-kind").value !== "verifiable";
      node.querySelectorAll("fieldset.claim-judgment input").forEach(function (input) {
        input.disabled = opinion;
        if (opinion) {
          input.checked = input.value === "null";
        }
      });
      node.classList.toggle("is-opinion", opinion);
    }

    /** A message on one claim; `sticky` ones stay until the next action on the claim. */
    function problem(node, message, sticky) {
      const box = node.querySelector(".claim-problem");
      box.textContent = message || "";
      box.hidden = !message;
      box.dataset.sticky = message && sticky ? "1" : "";
    }

    function readClaim(node) {
      const id = node.dataset.claimId;
      const prefix = "claim-" + id;
      const claim = { id: id, span: node.claimSpan };
      claim[sourceKey] = node.querySelector("select.claim-source").value || null;
      claim.quote_span = node.claimQuote;
      claim.kind = node.querySelector("select.claim-kind").value;
      verdicts.forEach(function (code) {
        const value = fromRadio(core.radioValue(node, prefix + "-" + code));
        if (value !== undefined) {
          claim[code] = value;
        }
      });
      const reason = node.querySelector("textarea.claim-reason").value;
      claim.reason = reason.trim() ? reason : null;
      return claim;
    }

    // --- the value -------------------------------------------------------------------------

    function read() {
      return Array.from(list.querySelectorAll(".claim")).map(readClaim);
    }

    function write(claims) {
      list.replaceChildren();
      (Array.isArray(claims) ? claims : []).forEach(function (claim) {
        if (claim && typeof claim.id === "string" && claim.span && Number.isInteger(claim.span.start)) {
          list.appendChild(buildClaim(claim));
        }
      });
    }

    /** The claims as the annotation stores them. */
    function toValue(claims) {
      return claims.map(function (claim) {
        const opinion = claim.kind !== "verifiable";
        const stored = { id: claim.id, span: claim.span };
        stored[sourceKey] = claim[sourceKey];
        stored.quote_span = claim.quote_span;
        verdicts.forEach(function (code) {
          if (opinion || (format1 && claim[code] === undefined)) {
            stored[code] = null;
          } else if (claim[code] !== undefined) {
            stored[code] = claim[code];
          }
        });
        stored.kind = claim.kind;
        stored.reason = claim.reason;
        return stored;
      });
    }

    function summary(claims) {
      return ClaimgateSpans.summarizeSupported(toValue(claims));
    }

    function stated(state) {
      return config.summary_verdict && hooks.stated ? hooks.stated(state) : undefined;
    }

    /** What a claim still needs, claim by claim. */
    function claimProblems(claims) {
      if (hooks.failed) {
        return [];
      }
      const found = [];
      claims.forEach(function (claim) {
        const name = "Claim " + claim.id;
        if (claim.kind === "verifiable") {
          verdicts.forEach(function (code) {
            if (claim[code] === undefined) {
              found.push(
                name + ": " + (VERDICT_PROBLEMS[code] || "choose " + verdictLabels[code] + " (true, false or unknown).")
              );
            }
          });
          if (hasSupported && (claim.supported === true || claim.supported === false) && !claim.quote_span) {
            found.push(name + ": a resolved “supported” needs a quote: select the passage in the source.");
          }
        }
        if (claim.quote_span && !claim[sourceKey]) {
          found.push(name + ": choose the source the quote is taken from.");
        }
        if (config.reason_required && claim.kind === "verifiable" && !claim.reason) {
          found.push(name + ": give a reason (the codebook requires one for every verdict).");
        }
      });
      return found;
    }

    /** The answer-level verdict against the claims' summary, where it must equal it. */
    function summaryProblems(claims, state) {
      const said = hooks.failed ? undefined : stated(state);
      if (said === undefined || said === summary(claims)) {
        return [];
      }
      return [
        hooks.verdictLabel +
          " is " +
          shown(said) +
          ", but the claims summarize to " +
          shown(summary(claims)) +
          " (summary_mismatch).",
      ];
    }

    function problems(claims, state) {
      return claimProblems(claims).concat(summaryProblems(claims, state));
    }

    function refresh(claims, state) {
      const total = hooks.failed ? null : summary(claims);
      if (summaryValue) {
        summaryValue.textContent = shown(total);
      }
      const said = stated(state);
      const mismatched = said !== undefined && said !== total;
      if (mismatch) {
        mismatch.hidden = !mismatched;
        mismatchValue.textContent = shown(total);
        mismatch.closest("fieldset").classList.toggle("has-problem", mismatched);
      }
      list.querySelectorAll(".claim").forEach(function (node) {
        const claim = readClaim(node);
        const needsQuote =
          hasSupported &&
          claim.kind === "verifiable" &&
          (claim.supported === true || claim.supported === false) &&
          !claim.quote_span;
        node.classList.toggle("has-problem", needsQuote);
        if (needsQuote) {
          problem(node, "A resolved “supported” needs a quote: select the passage in the source, then “Use selection as quote”.");
        } else if (node.querySelector(".claim-problem").dataset.sticky !== "1") {
          problem(node, "");
        }
      });
    }

    /** What the highlights depend on (they are drawn again when it changes). */
    function marksKey(claims) {
      return JSON.stringify(
        claims.map(function (claim) {
          return [claim.id, claim.span, claim[sourceKey], claim.quote_span];
        })
      );
    }

    /** The claims' marks in one snapshot: each claim in the answer, each quote in its source. */
    function marks(snapshot, claims) {
      const found = [];
      const shows = sourceOf(snapshot);
      claims.forEach(function (claim) {
        if (snapshot.kind === "answer" && claim.span) {
          found.push({
            start: claim.span.start,
            end: claim.span.end,
            className: "j-claim",
            key: "claim:" + claim.id,
            title: "Claim " + claim.id,
          });
        }
        if (shows && claim.quote_span && claim[sourceKey] === shows.value) {
          found.push({
            start: claim.quote_span.start,
            end: claim.quote_span.end,
            className: "j-quote",
            key: "quote:" + claim.id,
            title: "Quote for claim " + claim.id,
          });
        }
      });
      return found;
    }

    // --- actions ---------------------------------------------------------------------------

    function nextId() {
      let largest = 0;
      list.querySelectorAll(".claim").forEach(function (node) {
        const match = /^c(\d+)$/.exec(node.dataset.claimId);
        if (match) {
          largest = Math.max(largest, Number(match[1]));
        }
      });
      return "c" + (largest + 1);
    }

    function say(message) {
      preview.textContent = message;
      preview.classList.add("is-warning");
    }

    core.onSelection(function (found) {
      preview.classList.remove("is-warning");
      if (!found) {
        preview.textContent = "No text selected.";
        return;
      }
      const source = sourceOf(found.snapshot);
      const where = source ? source.label : "the " + found.snapshot.kind;
      preview.textContent = "Selected in " + where + ": “" + core.shorten(found.span.quote, 120) + "”";
    });

    // Pressing these buttons must not take the selection away first.
    addButton.addEventListener("mousedown", function (event) {
      event.preventDefault();
    });
    list.addEventListener("mousedown", function (event) {
      if (event.target.closest("button.claim-quote")) {
        event.preventDefault();
      }
    });

    addButton.addEventListener("click", function () {
      const found = core.selection();
      if (!found || found.snapshot.kind !== "answer") {
        say("Select the claim in the answer text first, then press “Add claim”.");
        return;
      }
      const node = buildClaim({ id: nextId(), span: found.span, kind: kinds[0], reason: null });
      list.appendChild(node);
      core.clearSelection();
      core.changed();
      node.querySelector("select.claim-source").focus({ preventScroll: true });
      node.scrollIntoView({ block: "nearest" });
    });

    list.addEventListener("click", function (event) {
      const node = event.target.closest(".claim");
      if (!node) {
        return;
      }
      if (event.target.closest("button.claim-remove")) {
        node.remove();
        core.changed();
        return;
      }
      if (event.target.closest("button.claim-quote-clear")) {
        node.claimQuote = null;
        paintClaim(node);
        core.changed();
        return;
      }
      const quoteButton = event.target.closest("button.claim-quote");
      if (quoteButton) {
        const found = core.selection();
        const select = node.querySelector("select.claim-source");
        const source = found ? sourceOf(found.snapshot) : null;
        if (!source) {
          problem(node, "Select the passage in the claim’s source first, then press “Use selection as quote”.", true);
          return;
        }
        if (!select.value) {
          select.value = source.value;
        } else if (select.value !== source.value) {
          problem(
            node,
            "The selection is in " +
              source.label +
              ", but this claim relies on " +
              sourceLabel(select.value) +
              ". Select the passage in that source, or change the claim’s source first.",
            true
          );
          return;
        }
        node.claimQuote = {
          snapshot: format1 ? "source" : found.snapshot.kind,
          start: found.span.start,
          end: found.span.end,
          quote: found.span.quote,
        };
        problem(node, "");
        paintClaim(node);
        core.clearSelection();
        core.changed();
        return;
      }
      const show = event.target.closest("button.span-quote");
      if (show) {
        core.flash(show.dataset.spanKey);
      }
    });

    function sourceCard(source) {
      let shown = null;
      core.snapshots.forEach(function (snapshot) {
        if (!shown && sourceOf(snapshot) === source) {
          shown = snapshot.el;
        }
      });
      return shown ? shown.closest(".source-card") : null;
    }

    list.addEventListener("change", function (event) {
      const node = event.target.closest(".claim");
      if (!node) {
        return;
      }
      if (event.target.matches("select.claim-source")) {
        if (node.claimQuote) {
          node.claimQuote = null;
          problem(node, "The quote was removed: it belonged to the previous source.", true);
        }
        paintClaim(node);
        const card = byValue[event.target.value] ? sourceCard(byValue[event.target.value]) : null;
        if (card) {
          card.scrollIntoView({ block: "nearest", behavior: "smooth" });
        }
      } else if (event.target.matches("select.claim-kind")) {
        paintClaim(node);
      }
    });

    // --- keyboard (listed beside the claims and in the ? dialog) ------------------------

    const dialog = document.getElementById("shortcuts-dialog");
    const submitButton = document.getElementById("submit-label");
    let current = null; // the claim the keys act on
    let active = null; // the verdict fieldset chosen with s, c or v

    function claimNodes() {
      return Array.from(list.querySelectorAll(".claim"));
    }

    function makeCurrent(node) {
      current = node;
      claimNodes().forEach(function (claim) {
        claim.classList.toggle("is-current", claim === node);
      });
    }

    function choose(fieldset) {
      active = fieldset;
      form.querySelectorAll("fieldset.is-active").forEach(function (other) {
        other.classList.toggle("is-active", other === fieldset);
      });
      fieldset.classList.add("is-active");
      const radio =
        fieldset.querySelector('input[type="radio"]:checked:not(:disabled)') ||
        fieldset.querySelector('input[type="radio"]:not(:disabled)');
      (radio || fieldset).focus({ preventScroll: true });
      fieldset.scrollIntoView({ block: "nearest" });
    }

    function currentClaim() {
      if (current && current.isConnected) {
        return current;
      }
      const all = claimNodes();
      return all.length ? all[all.length - 1] : null;
    }

    function noClaim() {
      say("No claim yet: select a claim in the answer, then press " + (keys.add ? keys.add + " (or “Add claim”)." : "“Add claim”."));
    }

    function step(by) {
      const all = claimNodes();
      if (!all.length) {
        noClaim();
        return;
      }
      const at = all.indexOf(currentClaim());
      const next = all[Math.max(0, Math.min(all.length - 1, at + by))];
      makeCurrent(next);
      next.focus({ preventScroll: true });
      next.scrollIntoView({ block: "nearest" });
    }

    /** The fieldset t / f / u act on: a claim's verdict or an answer-level verdict that is
     * focused, else the one chosen with s, c or v; none while another field has the focus. */
    function verdictTarget() {
      const focused = document.activeElement;
      const own =
        focused && focused.closest ? focused.closest(VERDICT_SETS) : null;
      if (own) {
        return own;
      }
      if (!active || !active.isConnected) {
        return null;
      }
      const field = focused && focused.closest ? focused.closest("fieldset.judgment") : null;
      return !field || field.contains(active) ? active : null;
    }

    function setVerdict(key) {
      const fieldset = verdictTarget();
      if (!fieldset) {
        return false;
      }
      let radio = null;
      KEY_VALUES[key].forEach(function (value) {
        radio = radio || fieldset.querySelector('input[type="radio"][value="' + value + '"]');
      });
      if (!radio || radio.disabled) {
        return false;
      }
      radio.checked = true;
      radio.focus({ preventScroll: true });
      radio.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    }

    function openShortcuts() {
      if (dialog && !dialog.open) {
        dialog.showModal();
      }
    }

    document.getElementById("show-shortcuts").addEventListener("click", openShortcuts);
    document.getElementById("close-shortcuts").addEventListener("click", function () {
      dialog.close();
    });
    list.addEventListener("focusin", function (event) {
      const node = event.target.closest(".claim");
      if (node) {
        makeCurrent(node);
      }
    });
    // Another field taken with its own key or the mouse: t / f / u are its keys again.
    form.addEventListener("focusin", function (event) {
      if (!active || active.contains(event.target) || event.target.closest(VERDICT_SETS)) {
        return;
      }
      const field = event.target.closest("fieldset.judgment");
      if (field && !field.contains(active)) {
        active = null;
      }
    });
    // A claim just added becomes the current one.
    new MutationObserver(function (records) {
      records.forEach(function (record) {
        record.addedNodes.forEach(function (node) {
          if (node.classList && node.classList.contains("claim")) {
            makeCurrent(node);
          }
        });
      });
    }).observe(list, { childList: true });

    /** Whether `key` chooses an option of the generic form's field that has the focus
     * (as its key leaves it): there, the option's key wins. */
    function optionKey(target, key) {
      const own = list.closest("fieldset.judgment");
      const field = target && target.closest ? target.closest("fieldset.judgment") : null;
      return Boolean(
        field && field !== own && field.querySelector('input[type="radio"][data-key="' + CSS.escape(key) + '"]')
      );
    }

    // Registered before the generic form's own keys (fields.js), which skip a key handled here.
    document.addEventListener("keydown", function (event) {
      if (dialog && dialog.open) {
        return;
      }
      // Ctrl+Enter submits from anywhere, a choice too (whose plain Enter submit.js stops).
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        form.requestSubmit(submitButton);
        return;
      }
      if (event.defaultPrevented) {
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey || core.isTyping(event.target)) {
        return;
      }
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      if (key === "?") {
        event.preventDefault();
        openShortcuts();
        return;
      }
      if (hooks.failed || optionKey(event.target, key)) {
        return;
      }
      const claim = currentClaim();
      if (key === keys.add) {
        event.preventDefault();
        addButton.click();
      } else if (key === keys.next || key === keys.previous) {
        event.preventDefault();
        step(key === keys.next ? 1 : -1);
      } else if (key === keys.quote || verdictByKey[key]) {
        event.preventDefault();
        if (!claim) {
          noClaim();
        } else if (key === keys.quote) {
          claim.querySelector("button.claim-quote").click();
        } else {
          choose(claim.querySelector('fieldset.claim-judgment[data-field="' + verdictByKey[key] + '"]'));
        }
      } else if (key === keys.verdicts) {
        const sets = hooks.verdictSets();
        if (sets.length) {
          event.preventDefault();
          const at = sets.indexOf(active);
          choose(sets[(at + 1) % sets.length]);
        }
      } else if (KEY_VALUES[key]) {
        if (setVerdict(key)) {
          event.preventDefault();
        }
      }
    });

    return {
      read: read,
      write: write,
      toValue: toValue,
      problems: problems,
      refresh: refresh,
      marks: marks,
      marksKey: marksKey,
    };
  }

  // --- the widget of a claims field in the generic form (fields.js) -------------------------

  window.ClaimgateFieldWidgets = window.ClaimgateFieldWidgets || {};
  /** The editor of claims field `field` (its `claims` configuration from the page). */
  window.ClaimgateFieldWidgets.claims = function (core, field, fields) {
    const config = field.claims;
    const form = document.getElementById("label-form");
    if (!config || !document.getElementById("claims")) {
      return null;
    }
    const summaryField = fields.filter(function (other) {
      return other.code === config.summary_verdict;
    })[0];
    const editor = claimsEditor(core, config, {
      failed: Boolean(core.data.failed),
      stated: function (state) {
        const values = state && state.values;
        return values && config.summary_verdict in values ? values[config.summary_verdict] : undefined;
      },
      verdictLabel: summaryField ? summaryField.label : config.summary_verdict,
      verdictSets: function () {
        return Array.from(form.querySelectorAll("fieldset.judgment.field-verdict"));
      },
    });
    return {
      /** The field's value as the form's state holds it (always a list: no claim is an answer). */
      read: editor.read,
      write: function (present, value) {
        editor.write(present ? value : []);
      },
      toValue: editor.toValue,
      problems: editor.problems,
      refresh: editor.refresh,
      marks: editor.marks,
      marksKey: editor.marksKey,
    };
  };
})();
