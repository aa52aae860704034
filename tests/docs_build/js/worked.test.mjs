// node --test: where a worked entry points (docs_build/assets/worked.js)
import { test } from "node:test";
import assert from "node:assert/strict";

import { gridCell, placeIn, targetOf } from "../../../docs_build/assets/worked.js";

test("an entry's index names its head, its cell, or its token on the byte grid", () => {
  assert.deepEqual(targetOf([3, 10, 7]), { head: 3, cell: [10, 7] });
  assert.deepEqual(targetOf([10, 41]), { head: null, cell: [10, 41] });
  assert.deepEqual(targetOf([105]), { head: null, token: 105, cell: null }); // its grid's width decides
  assert.deepEqual(gridCell(105, 16), [6, 9]); // 105 = 16·6 + 9
  assert.deepEqual(gridCell(1321, 64), [20, 41]); // 1321 = 64·20 + 41
  assert.equal(targetOf([]), null); // a scalar: no cell to point at
});

test("the cell's place among a table's shown rows and columns, or null where it is cut", () => {
  assert.deepEqual(placeIn([10, 27], [0, 1, 2, 9, 10], [0, 1, 26, 27]), [4, 3]);
  assert.equal(placeIn([10, 13], [0, 1, 2, 9, 10], [0, 1, 26, 27]), null);
});
