// Render the math of every page with the vendored KaTeX (docs/assets/katex): pymdownx.arithmatex
// (generic mode) leaves \( .. \) and \[ .. \] in the page; mkdocs-material's document$ fires on
// every page load, including instant navigation. Afterwards the body records how many formulas
// were rendered, how many failed, and the page size (read by validation/screenshot.py).
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "\\[", right: "\\]", display: true },
      { left: "\\(", right: "\\)", display: false },
    ],
    throwOnError: false,
  });
  const root = document.documentElement;
  document.body.setAttribute("data-math-rendered", String(body.querySelectorAll(".katex").length));
  document.body.setAttribute("data-math-errors", String(body.querySelectorAll(".katex-error").length));
  document.body.setAttribute("data-page-height", String(root.scrollHeight));
  document.body.setAttribute("data-page-width", String(root.scrollWidth));
});

// Images: how many decoded and how many failed, once everything has loaded.
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter((i) => !(i.complete && i.naturalWidth > 0));
  document.body.setAttribute("data-images-ok", String(imgs.length - broken.length));
  document.body.setAttribute("data-images-broken", String(broken.length));
});
