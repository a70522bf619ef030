/**
 * The unit ring's guards (loaded as a vitest setup file, before the test file's imports):
 * - every way to start a child process throws, so a unit test that would spawn one fails at once and says why;
 * - a timer of 1 ms or more that fires in a test fails that test, naming the delay and where it was scheduled
 *   (see sleepGuard.ts): unit tests drive time with `TestClock`, they never wait on the wall clock.
 */
import { createRequire, syncBuiltinESMExports } from "node:module"
import { afterAll, afterEach, beforeEach } from "vitest"
import * as SleepGuard from "./sleepGuard.js"

const require = createRequire(import.meta.url)

const childProcess: object = require("node:child_process")
for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
  Reflect.set(childProcess, name, () => {
    throw new Error(`the unit ring starts no process: child_process.${name} was called (use @flotta/core/Testing)`)
  })
}

const guard = SleepGuard.make()
guard.install(globalThis)
guard.install(require("node:timers"))
guard.installPromises(require("node:timers/promises"))
syncBuiltinESMExports()

const check = (when: string) => {
  const firings = guard.take()
  if (firings.length > 0) throw new Error(SleepGuard.message(firings, when))
}
// Timers that fired in a file's `beforeAll` (a layer being built, say) or between tests fail the next test.
let before: ReadonlyArray<SleepGuard.Firing> = []
beforeEach(() => {
  before = guard.take()
})
afterEach(() => {
  const firings = [...before, ...guard.take()]
  before = []
  if (firings.length > 0) throw new Error(SleepGuard.message(firings, "during this test (or its hooks)"))
})
afterAll(() => check("after this file's last test"))
