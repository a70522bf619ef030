/**
 * The unit ring's guard is on: nothing here can start a child process (see test/support/noProcess.ts).
 */
import { assert, it } from "@effect/vitest"
import * as childProcess from "node:child_process"

it("starting a process in the unit ring throws, naming the way out", () => {
  assert.throws(() => childProcess.spawn("true"), /the unit ring starts no process.*@flotta\/core\/Testing/)
  assert.throws(() => childProcess.execFileSync("true"), /child_process\.execFileSync was called/)
})
