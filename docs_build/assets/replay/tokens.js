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
