// Typeset the math that pymdownx.arithmatex (generic mode) leaves in .arithmatex elements,
// with the KaTeX the site carries (Material's documented KaTeX recipe, without a CDN).
(function () {
  "use strict";
  function typeset(root) {
    if (typeof renderMathInElement !== "function") return;
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      renderMathInElement(el, {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true }
        ],
        throwOnError: false
      });
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(function (doc) { typeset(doc.body || document.body); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { typeset(document.body); });
  } else {
    typeset(document.body);
  }
  window.glassllmTypeset = typeset;
})();
