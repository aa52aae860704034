/* glassllm replay: the error of a file the page refuses. */

/* `reason` names the page's UI string, `vars` fills it, `where` is the place in the file
   ("events[3]", "config", ...), as Python's message names it. */
export class RecordingError extends Error {
  constructor(reason, vars, where) {
    super(reason + (where ? " at " + where : ""));
    this.name = "RecordingError";
    this.reason = reason;
    this.vars = vars || {};
    this.where = where || "";
  }
}
