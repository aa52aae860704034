/* glassllm replay: reading JSON objects without trusting them (a key such as "constructor"
 * or "__proto__" is only ever the file's own). */

export const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
export const own = (obj, key) => (has(obj, key) ? obj[key] : undefined);
export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
