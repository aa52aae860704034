/* glassllm replay: building the page's elements. */

/* An element: `attrs` sets attributes, except `text` (its text), `className` and `on<event>`
   (a listener); null, undefined and false leave an attribute out, true sets it empty. */
export function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children || []) {
    if (child !== null && child !== undefined) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

/* An inline SVG icon of one 24x24 path: no icon font, no request, and no glyph the
   reader's fonts may lack. */
export function icon(path) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "gr-icon");
  const shape = document.createElementNS(ns, "path");
  shape.setAttribute("d", path);
  svg.appendChild(shape);
  return svg;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}
