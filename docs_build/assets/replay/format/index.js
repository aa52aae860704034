/* glassllm replay: reading a recording file (format: glassllm/interpret/recording/), everything the
 * page and the tests use of format/.
 *
 * Both versions are accepted exactly as `glassllm.recording.loads` accepts them, and
 * checked against the model's Config and the build's step table before the page builds
 * anything, so no size in a file can make the page build more than the file holds.
 * - Version 1 (JSON, base64 arrays): `readRecording(bytes or text, table)` decodes it all.
 * - Version 2 (binary: header, JSON index, aligned arrays): `openRecording(source, table)`
 *   reads only the header and the index; an event's values are read (`loadEvent`) and
 *   decoded (`event.values`) when it is shown. A source is the whole file's bytes
 *   (`bytesSource`), a File (`blobSource`) or a URL (`urlSource`).
 * Pure modules: no DOM, they run under `node --test`.
 */

export * from "./constants.js";
export { RecordingError } from "./error.js";
export { scanText } from "./scan.js";
export { CONFIG_FIELDS, defaultMlpWidth } from "./config.js";
export { eventsPerPass, expectedShape, generationPasses, passKind } from "./shapes.js";
export { decodeBinary, decodeValues } from "./decode.js";
export { blobSource, bytesSource, rangeTotal, streamSource, urlSource } from "./sources.js";
export { readHeader } from "./version2.js";
export { eventReady, loadEvent, openRecording, readRecording } from "./read.js";
export { fileStepInfo } from "./file-steps.js";
export { adamwByHand, checkUpdate, parameterLayer, parameterShapes, phaseOf, UPDATE_VALUES } from "./update.js";
