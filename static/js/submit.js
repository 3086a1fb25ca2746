/*
 * Claimgate submit guard, shared by the annotation form (annotate.js) and the
 * adjudication page (adjudicate.js):
 * - the problems the page finds are listed live in the action bar ("Before you submit"):
 *   a one-line count that expands on demand, updated as each problem is fixed; pressing
 *   submit with problems left opens the list and offers "Submit anyway" on the same line
 *   (the server checks everything again and answers with its own reasons);
 * - a server refusal shown with the page stays until the form is changed, then gives way
 *   to the live list (the change is checked again when it is submitted);
 * - a form is sent once: a second submit while one is in flight is dropped, and the
 *   button says it is busy;
 * - a page the browser restores from its back/forward cache can submit again;
 * - Enter in a one-line field never submits by accident.
 */
(function () {
  "use strict";

  function plural(count, one, many) {
    return count + " " + (count === 1 ? one : many);
  }

  /**
   * The bar's content: a <details> whose summary is the one-line count (and, after a
   * refused attempt, "Submit anyway" beside it), its list the problems.
   */
  function problemBar(heading, problems, open, anyway) {
    const bar = document.createElement("div");
    bar.className = "problems-bar";
    if (!problems.length) {
      const ready = document.createElement("p");
      ready.className = "problems-ready";
      ready.textContent = "Ready to submit: the page finds nothing missing.";
      bar.appendChild(ready);
      return [bar];
    }
    const details = document.createElement("details");
    details.className = "problems";
    details.open = open;
    const summary = document.createElement("summary");
    const count = document.createElement("span");
    count.className = "form-error problems-count";
    count.textContent = heading + " " + plural(problems.length, "thing to fix", "things to fix");
    const hint = document.createElement("span");
    hint.className = "problems-toggle muted";
    hint.textContent = open ? "hide" : "show";
    summary.append(count, " ", hint);
    const list = document.createElement("ul");
    problems.forEach(function (problem) {
      const item = document.createElement("li");
      item.textContent = problem;
      list.appendChild(item);
    });
    details.append(summary, list);
    bar.appendChild(details);
    if (anyway) {
      const button = document.createElement("button");
      button.type = "button";
      button.setAttribute("data-action", "submit-anyway");
      button.textContent = "Submit anyway (the server checks again)";
      bar.appendChild(button);
    }
    return [bar];
  }

  /**
   * Guard `options.form`, sent with `options.button`:
   *   errorsBox  where the problems are listed (focused when submitting is refused)
   *   heading    the words before the count
   *   busyText   the button's text while the form is on its way
   *   problems() the problems the page finds now (an empty list: none)
   *   prepare()  fills the form's hidden inputs, just before it is sent
   * Returns {isSubmitting(), release(), refresh()}.
   */
  function guard(options) {
    const form = options.form;
    const button = options.button;
    const errorsBox = options.errorsBox;
    let submitting = false;
    let forceSubmit = false;
    let held = false;
    let attempted = false; // submit was pressed with problems left: offer "Submit anyway"
    let open = false; // the list is expanded
    let serverRefusal = errorsBox.querySelector(".form-error[data-code]") !== null;
    let shownKey = null;
    // Updates are announced politely; a refused submit moves the focus to the list instead.
    errorsBox.setAttribute("role", "status");
    errorsBox.setAttribute("aria-live", "polite");

    function render(force) {
      if (serverRefusal) {
        return;
      }
      const problems = options.problems();
      const key = JSON.stringify([problems, open, attempted]);
      if (key === shownKey && !force) {
        return;
      }
      shownKey = key;
      errorsBox.replaceChildren.apply(
        errorsBox,
        problemBar(options.heading, problems, open, attempted && problems.length > 0)
      );
    }

    function refreshSoon() {
      window.setTimeout(function () {
        render(false);
      }, 0);
    }

    /** A change by the person: a refusal shown with the page has been acted on. */
    function userChanged(event) {
      if (errorsBox.contains(event.target)) {
        return;
      }
      if (serverRefusal && (event.type !== "click" || event.target.closest("button"))) {
        serverRefusal = false;
      }
      refreshSoon();
    }

    errorsBox.addEventListener("click", function (event) {
      if (event.target.closest('[data-action="submit-anyway"]')) {
        forceSubmit = true;
        form.requestSubmit(button);
        return;
      }
      // The summary opens and closes the list (Enter and Space on it click too); the state
      // is kept here, so that the next update draws the list as the person left it.
      if (event.target.closest(".problems > summary")) {
        event.preventDefault();
        open = !open;
        render(true);
        const summary = errorsBox.querySelector(".problems > summary");
        if (summary) {
          summary.focus();
        }
      }
    });
    ["input", "change", "click"].forEach(function (type) {
      form.addEventListener(type, userChanged);
    });

    form.addEventListener("submit", function (event) {
      if (submitting) {
        event.preventDefault();
        return;
      }
      const problems = options.problems();
      if (problems.length && !forceSubmit) {
        event.preventDefault();
        serverRefusal = false;
        attempted = true;
        open = true;
        render(true);
        errorsBox.focus();
        return;
      }
      forceSubmit = false;
      submitting = true;
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      button.dataset.label = button.textContent;
      button.textContent = options.busyText;
      if (options.waiting && options.waiting()) {
        event.preventDefault();
        held = true;
        return;
      }
      options.prepare();
    });

    window.addEventListener("pageshow", function (event) {
      if (event.persisted) {
        submitting = false;
        held = false;
        button.disabled = false;
        button.removeAttribute("aria-busy");
        if (button.dataset.label) {
          button.textContent = button.dataset.label;
        }
      }
    });

    form.addEventListener("keydown", function (event) {
      const target = event.target;
      if (event.key === "Enter" && target.tagName === "INPUT" && target.type !== "submit") {
        event.preventDefault();
      }
    });

    // The sticky panes leave room for the bar, whatever its height (see annotate.css).
    const actionbar = errorsBox.closest(".actionbar");
    if (actionbar && window.ResizeObserver) {
      new ResizeObserver(function () {
        document.documentElement.style.setProperty(
          "--actionbar-height",
          Math.ceil(actionbar.getBoundingClientRect().height) + "px"
        );
      }).observe(actionbar);
    }

    // The first count once the page has set its state (the caller fills it after this).
    refreshSoon();

    return {
      isSubmitting: function () {
        return submitting;
      },
      /** Send a held form (no submit event: its checks were made when it was pressed). */
      release: function () {
        if (!held) {
          return;
        }
        held = false;
        options.prepare();
        form.submit();
      },
      /** The page's state changed without an event on the form (e.g. a restored copy). */
      refresh: refreshSoon,
    };
  }

  window.ClaimgateSubmit = { guard: guard };
})();
