// Typeset a batch of formulas with the pinned KaTeX, in one Node.js process per build
// (docs_build/site/katex.py runs it). argv[2]: KaTeX's package folder (node_modules/katex).
// stdin: JSON {"formulas": [[tex, display], ...], "options": {"inline": output, "display": output}}
// stdout: JSON [[html, error], ...] in the same order; error is null, or the message of the
// ParseError KaTeX refused the formula with (html is then KaTeX's own red error span).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const katex = (await import(pathToFileURL(join(process.argv[2], "dist", "katex.mjs")).href)).default;
const request = JSON.parse(readFileSync(0, "utf-8"));

// LaTeX-incompatible input is an error, like a parse error, except a character KaTeX's fonts
// lack inside \text{} (the byte labels ␣ and ⏎): the browser draws it from another font.
function strict(code) {
  return code === "unknownSymbol" ? "ignore" : "error";
}

const answers = request.formulas.map(([tex, display]) => {
  const options = { displayMode: display, output: request.options[display ? "display" : "inline"], strict };
  try {
    return [katex.renderToString(tex, { ...options, throwOnError: true }), null];
  } catch (error) {
    if (!(error instanceof katex.ParseError)) throw error;
    return [katex.renderToString(tex, { ...options, throwOnError: false }), error.message];
  }
});
process.stdout.write(JSON.stringify({ version: katex.version, answers }));
