/*
 * Claimgate submit guard, shared by the annotation form (annotate.js) and the
 * adjudication page (adjudicate.js):
 * - the problems the page finds are listed before anything is sent, with "Submit anyway"
 *   (the server checks everything again and answers with its own reasons);
 * - a form is sent once: a second submit while one is in flight is dropped, and the
 *   button says it is busy;
 * - a page the browser restores from its back/forward cache can submit again;
 * - Enter in a one-line field never submits by accident.
 */
(function () {
  "use strict";

  function problemList(heading, problems) {
    const intro = document.createElement("p");
    intro.className = "form-error";
    intro.textContent = heading;
    const list = document.createElement("ul");
    problems.forEach(function (problem) {
      const item = document.createElement("li");
      item.textContent = problem;
      list.appendChild(item);
    });
    const anyway = document.createElement("button");
    anyway.type = "button";
    anyway.setAttribute("data-action", "submit-anyway");
    anyway.textContent = "Submit anyway (the server checks again)";
    return [intro, list, anyway];
  }

  /**
   * Guard `options.form`, sent with `options.button`:
   *   errorsBox  where the problems are listed (focused when they are)
   *   heading    the sentence above them
   *   busyText   the button's text while the form is on its way
   *   problems() the problems the page finds now (an empty list: none)
   *   prepare()  fills the form's hidden inputs, just before it is sent
   * Returns {isSubmitting()}.
   */
  function guard(options) {
    const form = options.form;
    const button = options.button;
    const errorsBox = options.errorsBox;
    let submitting = false;
    let forceSubmit = false;
    let held = false;

    errorsBox.addEventListener("click", function (event) {
      if (event.target.closest('[data-action="submit-anyway"]')) {
        forceSubmit = true;
        form.requestSubmit(button);
      }
    });

    form.addEventListener("submit", function (event) {
      if (submitting) {
        event.preventDefault();
        return;
      }
      const problems = options.problems();
      if (problems.length && !forceSubmit) {
        event.preventDefault();
        errorsBox.replaceChildren.apply(errorsBox, problemList(options.heading, problems));
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
    };
  }

  window.ClaimgateSubmit = { guard: guard };
})();
