/*
 * The answer-claims form: claims selected in the answer, each with a source, a quote span
 * in that source and its judgments, then the six answer-level verdicts. Uses the shared
 * machinery of annotate.js (ClaimgateAnnotate) and the span helpers of spans.js.
 */
(function () {
  "use strict";

  if (!window.ClaimgateAnnotate) {
    return;
  }

  const VALUES = { true: true, false: false, null: null };

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

  function claimsForm(core) {
    const data = core.data;
    const codebook = data.codebook;
    const form = document.getElementById("label-form");
    const list = document.getElementById("claims");
    const template = document.getElementById("claim-template");
    const addButton = document.getElementById("add-claim");
    const preview = document.getElementById("selection-preview");
    const summaryValue = document.getElementById("claims-summary-value");
    const mismatch = document.getElementById("summary-mismatch");
    const mismatchValue = document.getElementById("summary-mismatch-value");
    const rationale = form.querySelector('textarea[name="rationale"]');
    const verdictKeys = codebook.verdicts.map(function (item) {
      return item.key;
    });
    // Reasons are required unless the codebook says "optional" (audit.contract.codebook).
    const reasonsRequired = codebook.reasons !== "optional";
    const kinds = codebook.claim_kinds.map(function (item) {
      return item.key;
    });
    const sourceLabels = {};
    data.sources.forEach(function (source) {
      if (!(source.digest in sourceLabels)) {
        sourceLabels[source.digest] = source.label;
      }
    });
    let highlighted = null;

    // --- one claim's element -------------------------------------------------------------

    function claimNode(id) {
      return list.querySelector('.claim[data-claim-id="' + CSS.escape(id) + '"]');
    }

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
      source.value = claim.source_digest && claim.source_digest in sourceLabels ? claim.source_digest : "";
      kind.value = kinds.indexOf(claim.kind) >= 0 ? claim.kind : kinds[0];
      core.setRadio(node, prefix + "-supported", toRadio(claim.supported));
      core.setRadio(node, prefix + "-accurate", toRadio(claim.accurate));
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
      const claim = {
        id: id,
        span: node.claimSpan,
        source_digest: node.querySelector("select.claim-source").value || null,
        quote_span: node.claimQuote,
        kind: node.querySelector("select.claim-kind").value,
      };
      const supported = fromRadio(core.radioValue(node, prefix + "-supported"));
      const accurate = fromRadio(core.radioValue(node, prefix + "-accurate"));
      if (supported !== undefined) {
        claim.supported = supported;
      }
      if (accurate !== undefined) {
        claim.accurate = accurate;
      }
      const reason = node.querySelector("textarea.claim-reason").value;
      claim.reason = reason.trim() ? reason : null;
      return claim;
    }

    // --- the form's state ----------------------------------------------------------------

    function collect() {
      const state = { claims: [], verdicts: {} };
      list.querySelectorAll(".claim").forEach(function (node) {
        state.claims.push(readClaim(node));
      });
      verdictKeys.forEach(function (key) {
        const value = fromRadio(core.radioValue(form, "verdict-" + key));
        const reason = form.querySelector('textarea[name="verdict-' + key + '-reason"]').value;
        const verdict = { reason: reason.trim() ? reason : null };
        if (value !== undefined) {
          verdict.value = value;
        }
        state.verdicts[key] = verdict;
      });
      state.rationale = rationale.value.trim() ? rationale.value : null;
      return state;
    }

    function apply(state) {
      state = state && typeof state === "object" ? state : {};
      list.replaceChildren();
      (Array.isArray(state.claims) ? state.claims : []).forEach(function (claim) {
        if (claim && typeof claim.id === "string" && claim.span && Number.isInteger(claim.span.start)) {
          list.appendChild(buildClaim(claim));
        }
      });
      const verdicts = state.verdicts && typeof state.verdicts === "object" ? state.verdicts : {};
      verdictKeys.forEach(function (key) {
        const verdict = verdicts[key] && typeof verdicts[key] === "object" ? verdicts[key] : {};
        core.setRadio(form, "verdict-" + key, "value" in verdict ? toRadio(verdict.value) : undefined);
        form.querySelector('textarea[name="verdict-' + key + '-reason"]').value =
          typeof verdict.reason === "string" ? verdict.reason : "";
      });
      rationale.value = typeof state.rationale === "string" ? state.rationale : "";
    }

    function toAnnotation(state) {
      if (data.failed) {
        return { claims: [], verdicts: null, rationale: state.rationale };
      }
      const claims = state.claims.map(function (claim) {
        const opinion = claim.kind !== "verifiable";
        return {
          id: claim.id,
          span: claim.span,
          source_digest: claim.source_digest,
          quote_span: claim.quote_span,
          supported: opinion || claim.supported === undefined ? null : claim.supported,
          accurate: opinion || claim.accurate === undefined ? null : claim.accurate,
          kind: claim.kind,
          reason: claim.reason,
        };
      });
      const verdicts = {};
      verdictKeys.forEach(function (key) {
        const verdict = state.verdicts[key];
        verdicts[key] = { value: verdict.value === undefined ? null : verdict.value, reason: verdict.reason };
      });
      return { claims: claims, verdicts: verdicts, rationale: state.rationale };
    }

    function problems(state) {
      if (data.failed) {
        return [];
      }
      const found = [];
      state.claims.forEach(function (claim) {
        const name = "Claim " + claim.id;
        if (claim.kind === "verifiable") {
          if (claim.supported === undefined) {
            found.push(name + ": choose whether the quote supports it (true, false or unknown).");
          }
          if (claim.accurate === undefined) {
            found.push(name + ": choose whether it is accurate (true, false or unknown).");
          }
          if ((claim.supported === true || claim.supported === false) && !claim.quote_span) {
            found.push(name + ": a resolved “supported” needs a quote: select the passage in the source.");
          }
        }
        if (claim.quote_span && !claim.source_digest) {
          found.push(name + ": choose the source the quote is taken from.");
        }
        if (reasonsRequired && claim.kind === "verifiable" && !claim.reason) {
          found.push(name + ": give a reason (the codebook requires one for every verdict).");
        }
      });
      const labels = {};
      codebook.verdicts.forEach(function (item) {
        labels[item.key] = item.label;
      });
      verdictKeys.forEach(function (key) {
        if (state.verdicts[key].value === undefined) {
          found.push(labels[key] + ": choose true, false or unknown.");
        }
        if (reasonsRequired && !state.verdicts[key].reason) {
          found.push(labels[key] + ": give a reason (the codebook requires one for every verdict).");
        }
      });
      const summary = ClaimgateSpans.summarizeSupported(toAnnotation(state).claims);
      const stated = state.verdicts.supported ? state.verdicts.supported.value : undefined;
      if (stated !== undefined && stated !== summary) {
        found.push(
          labels.supported +
            " is " +
            shown(stated) +
            ", but the claims summarize to " +
            shown(summary) +
            " (summary_mismatch)."
        );
      }
      return found;
    }

    function refresh(state) {
      const annotation = toAnnotation(state);
      const summary = data.failed ? null : ClaimgateSpans.summarizeSupported(annotation.claims);
      summaryValue.textContent = shown(summary);
      const stated = state.verdicts.supported ? state.verdicts.supported.value : undefined;
      const mismatched = stated !== undefined && stated !== summary;
      if (mismatch) {
        mismatch.hidden = !mismatched;
        mismatchValue.textContent = shown(summary);
        mismatch.closest("fieldset").classList.toggle("has-problem", mismatched);
      }
      list.querySelectorAll(".claim").forEach(function (node) {
        const claim = readClaim(node);
        const needsQuote =
          claim.kind === "verifiable" && (claim.supported === true || claim.supported === false) && !claim.quote_span;
        node.classList.toggle("has-problem", needsQuote);
        if (needsQuote) {
          problem(node, "A resolved “supported” needs a quote: select the passage in the source, then “Use selection as quote”.");
        } else if (node.querySelector(".claim-problem").dataset.sticky !== "1") {
          problem(node, "");
        }
      });
      const key = JSON.stringify(
        annotation.claims.map(function (claim) {
          return [claim.id, claim.span, claim.source_digest, claim.quote_span];
        })
      );
      if (key === highlighted) {
        return;
      }
      highlighted = key;
      core.highlight(function (snapshot) {
        const marks = [];
        annotation.claims.forEach(function (claim) {
          if (snapshot.kind === "answer" && claim.span) {
            marks.push({
              start: claim.span.start,
              end: claim.span.end,
              className: "j-claim",
              key: "claim:" + claim.id,
              title: "Claim " + claim.id,
            });
          }
          if (snapshot.kind === "source" && claim.quote_span && claim.source_digest === snapshot.digest) {
            marks.push({
              start: claim.quote_span.start,
              end: claim.quote_span.end,
              className: "j-quote",
              key: "quote:" + claim.id,
              title: "Quote for claim " + claim.id,
            });
          }
        });
        return marks;
      });
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
      const where =
        found.snapshot.kind === "source"
          ? sourceLabels[found.snapshot.digest] || "a source"
          : "the " + found.snapshot.kind;
      preview.textContent = "Selected in " + where + ": “" + core.shorten(found.span.quote, 120) + "”";
    });

    // Pressing these buttons must not take the selection away first.
    [addButton].forEach(function (button) {
      button.addEventListener("mousedown", function (event) {
        event.preventDefault();
      });
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
        if (!found || found.snapshot.kind !== "source") {
          problem(node, "Select the passage in the claim’s source first, then press “Use selection as quote”.", true);
          return;
        }
        if (!select.value) {
          select.value = found.snapshot.digest;
        } else if (select.value !== found.snapshot.digest) {
          problem(
            node,
            "The selection is in " +
              sourceLabels[found.snapshot.digest] +
              ", but this claim relies on " +
              sourceLabels[select.value] +
              ". Select the passage in that source, or change the claim’s source first.",
            true
          );
          return;
        }
        node.claimQuote = {
          snapshot: "source",
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
        const digest = event.target.value;
        const card = digest
          ? document.querySelector('[data-snapshot="source"][data-source-digest="' + CSS.escape(digest) + '"]')
          : null;
        if (card) {
          card.closest(".source-card").scrollIntoView({ block: "nearest", behavior: "smooth" });
        }
      } else if (event.target.matches("select.claim-kind")) {
        paintClaim(node);
      }
    });

    // --- keyboard (listed on the form and in the ? dialog) ---------------------------------

    const dialog = document.getElementById("shortcuts-dialog");
    const submitButton = document.getElementById("submit-label");
    let current = null; // the claim the keys act on
    let active = null; // the verdict fieldset chosen with s, c or v

    function claims() {
      return Array.from(list.querySelectorAll(".claim"));
    }

    function makeCurrent(node) {
      current = node;
      claims().forEach(function (claim) {
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
      const all = claims();
      return all.length ? all[all.length - 1] : null;
    }

    function step(by) {
      const all = claims();
      if (!all.length) {
        say("No claim yet: select a claim in the answer, then press a (or “Add claim”).");
        return;
      }
      const at = all.indexOf(currentClaim());
      const next = all[Math.max(0, Math.min(all.length - 1, at + by))];
      makeCurrent(next);
      next.focus({ preventScroll: true });
      next.scrollIntoView({ block: "nearest" });
    }

    function setVerdict(value) {
      const focused = document.activeElement && document.activeElement.closest
        ? document.activeElement.closest("fieldset.claim-judgment, fieldset.verdict")
        : null;
      const fieldset = focused || (active && active.isConnected ? active : null);
      if (!fieldset) {
        return false;
      }
      const radio = fieldset.querySelector('input[type="radio"][value="' + value + '"]');
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

    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || (dialog && dialog.open)) {
        return;
      }
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        form.requestSubmit(submitButton);
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
      if (data.failed) {
        return;
      }
      const claim = currentClaim();
      if (key === "a") {
        event.preventDefault();
        addButton.click();
      } else if (key === "n" || key === "p") {
        event.preventDefault();
        step(key === "n" ? 1 : -1);
      } else if (key === "q" || key === "s" || key === "c") {
        event.preventDefault();
        if (!claim) {
          say("No claim yet: select a claim in the answer, then press a (or “Add claim”).");
        } else if (key === "q") {
          claim.querySelector("button.claim-quote").click();
        } else {
          choose(claim.querySelector('fieldset[data-field="' + (key === "s" ? "supported" : "accurate") + '"]'));
        }
      } else if (key === "v") {
        event.preventDefault();
        const verdicts = Array.from(form.querySelectorAll("fieldset.verdict"));
        const at = verdicts.indexOf(active);
        choose(verdicts[(at + 1) % verdicts.length]);
      } else if (key === "t" || key === "f" || key === "u") {
        if (setVerdict({ t: "true", f: "false", u: "null" }[key])) {
          event.preventDefault();
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

  window.ClaimgateAnnotate.register("answer", claimsForm);
})();
