/* glassllm replay: how a token reads, exactly as on the step pages.
 *
 * `labels` is the step table's `tokenLabels` (steps.json's token_labels, written from the
 * model's tokenizer's `labels`): one per token ID, a subword with its leading space as ␣
 * ("␣the"), newline ⏎, a byte that is no whole character its escape "\xc3". `bytes`, the
 * table's `tokenBytes`, holds each token's bytes as hex. Pure module: no DOM, runs under
 * `node --test`.
 */

/* The label of one token from `labels`; a token outside the table (a larger vocabulary
   recorded without its tokenizer) reads as its ID, "#41809". */
export function tokenLabel(labels, token) {
  return Number.isInteger(token) && token >= 0 && token < labels.length ? labels[token] : "#" + token;
}

/* The tokens as the text they stand for, decoded as UTF-8 from each token's bytes (`bytes`:
   the table's hex strings; without them, token t is byte t); bytes that are not valid UTF-8
   become U+FFFD. Tokens outside the table have no text of their own, so the line lists
   their labels. */
export function tokensText(labels, tokens, bytes) {
  if (tokens.some((token) => !(token >= 0 && token < labels.length))) {
    return tokens.map((token) => tokenLabel(labels, token)).join(" ");
  }
  const hex = bytes ? tokens.map((token) => bytes[token]).join("") : null;
  const data = hex === null ? new Uint8Array(tokens)
    : Uint8Array.from(hex.match(/../g) || [], (pair) => parseInt(pair, 16));
  return new TextDecoder("utf-8").decode(data);
}

/* A byte token as glassllm.tokenizer.token_label writes it (a test holds this to it): printable
   ASCII itself, space ␣, newline ⏎, any other byte its escape "\x09". */
export function byteLabel(token) {
  if (token === 32) return "␣";
  if (token === 10) return "⏎";
  if (token >= 33 && token <= 126) return String.fromCharCode(token);
  return "\\x" + token.toString(16).padStart(2, "0");
}

/* A token's text as a chip shows it (glassllm.tokenizer.bytes_label): each space ␣, each
   newline ⏎, any other character that does not print as its escape. */
export function chipText(text) {
  return Array.from(text, (c) => {
    if (c === " ") return "␣";
    if (c === "\n") return "⏎";
    if (!/[\p{C}\p{Z}]/u.test(c)) return c;
    const code = c.codePointAt(0);
    return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0")
      : code < 0x10000 ? "\\u" + code.toString(16).padStart(4, "0") : "\\U" + code.toString(16).padStart(8, "0");
  }).join("");
}

const hexOf = (n) => n.toString(16).padStart(2, "0");

/* The labels and bytes (hex) a recording's tokens read with: `table` is the step table (the
   site's model's labels, `tokenLabels`, and bytes, `tokenBytes`), `rec` the recording.
   - a recording of the site's model (its vocabulary, and the strings it recorded, if any,
     those of the table's tokens): the table's;
   - bytes (a vocabulary of 256 and no strings of a tokenizer): each token its byte;
   - any other: the strings the recording holds for its own tokens, the others their IDs
     ("#41809"), so no token is given another model's label. */
export function recordingLabels(table, rec) {
  const vocab = rec.config.vocab_size;
  const strings = rec.strings || null;
  if (vocab === table.tokenLabels.length && sameStrings(table, strings)) {
    return { labels: table.tokenLabels, bytes: table.tokenBytes };
  }
  if (vocab === 256 && strings === null) {
    const ids = Array.from({ length: 256 }, (_, t) => t);
    return { labels: ids.map(byteLabel), bytes: ids.map(hexOf) };
  }
  const labels = Array.from({ length: vocab }, (_, t) => "#" + t);
  const bytes = new Array(vocab).fill("");
  const encoder = new TextEncoder();
  for (const [token, text] of strings || []) {
    labels[token] = chipText(text);
    bytes[token] = Array.from(encoder.encode(text), hexOf).join("");
  }
  return { labels: labels, bytes: bytes };
}

/* Whether every recorded string is what the table's token decodes to on its own. */
function sameStrings(table, strings) {
  if (strings === null) return true;
  const decoder = new TextDecoder("utf-8");
  for (const [token, text] of strings) {
    const hex = table.tokenBytes[token];
    if (hex === undefined) return false;
    const data = Uint8Array.from(hex.match(/../g) || [], (pair) => parseInt(pair, 16));
    if (decoder.decode(data) !== text) return false;
  }
  return true;
}
