/* glassllm replay: the recording format's fixed numbers, as glassllm/interpret/recording/ has them
 * (tests/replay/js/format.test.mjs compares them with Python's, through
 * tests/fixtures/recordings/format.json).
 */

export const FORMAT = "glassllm.recording";
export const VERSION = 2; // the newest version read
export const JSON_VERSION = 1;
export const MAGIC = [0x89, 0x47, 0x4c, 0x52, 0x45, 0x43, 0x0d, 0x0a]; // "\x89GLREC\r\n"
export const HEADER_BYTES = 16; // MAGIC, then version and index length as uint32 LE
export const ALIGN = 8; // the data and each array in it start at multiples of 8 bytes
export const DTYPE_BYTES = { float32: 4, float16: 2, int32: 4 };
export const FLOAT_DTYPES = ["float32", "float16"];
// the first request for a URL: the header and, for most recordings, the whole index
export const PROBE_BYTES = 256 * 1024;
export const MAX_SIZE = 2 ** 31 - 1; // any Config size: the sampled token is stored as int32
export const MAX_AXES = 32;
export const MAX_DEPTH = 32; // the format nests 4 levels; Python's parser fails near 1000
export const MAX_NUMBER_CHARS = 64; // a float32 written by repr takes at most 24
