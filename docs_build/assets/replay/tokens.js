/* glassllm replay: how a token reads, exactly as on the step pages.
 *
 * `labels` is the step table's `tokenLabels` (steps.json's token_labels, written from
 * glassllm.tokenizer.token_label): printable ASCII as itself, space ␣, newline ⏎, any other
 * byte its escape "\x07". Pure module: no DOM, runs under `node --test`.
 */

/* The label of one token: a byte's from `labels`; a token above 255 (a larger vocabulary
   recorded without its tokenizer) is no byte and reads as its ID, "#41809". */
export function tokenLabel(labels, token) {
  return Number.isInteger(token) && token >= 0 && token < labels.length ? labels[token] : "#" + token;
}

/* The tokens as UTF-8 text (bytes that are not valid UTF-8 become U+FFFD); tokens that are
   not bytes have no text of their own, so the line lists their labels. */
export function tokensText(labels, tokens) {
  if (tokens.some((token) => token >= labels.length)) return tokens.map((token) => tokenLabel(labels, token)).join(" ");
  return new TextDecoder("utf-8").decode(new Uint8Array(tokens));
}
