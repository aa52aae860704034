// The format's fixed numbers and Config's fields, restated by the page's reader, against
// Python's (tests/fixtures/recordings/format.json, written by make_fixtures.format_tables).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import * as constants from "../../../docs_build/assets/replay/format/constants.js";
import { CONFIG_FIELDS } from "../../../docs_build/assets/replay/format/config.js";
import { FIXTURES } from "./fixtures.mjs";

const tables = JSON.parse(readFileSync(new URL("format.json", FIXTURES), "utf8"));

test("the page's format numbers equal Python's", () => {
  assert.equal(constants.FORMAT, tables.format);
  assert.equal(constants.VERSION, tables.version);
  assert.equal(constants.JSON_VERSION, tables.json_version);
  assert.deepEqual(constants.MAGIC, tables.magic);
  assert.equal(constants.HEADER_BYTES, tables.header_bytes);
  assert.equal(constants.ALIGN, tables.align);
  assert.deepEqual(constants.DTYPE_BYTES, tables.dtype_bytes);
  assert.deepEqual(constants.FLOAT_DTYPES, tables.float_dtypes);
  assert.deepEqual(CONFIG_FIELDS, tables.config_fields);
  assert.equal(constants.MAX_SIZE, tables.max_size);
  assert.equal(constants.MAX_AXES, tables.max_axes);
  assert.equal(constants.MAX_DEPTH, tables.max_depth);
  assert.equal(constants.MAX_NUMBER_CHARS, tables.max_number_chars);
});
