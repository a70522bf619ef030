/**
 * The unit ring's guard: every way to start a child process throws, so a unit test that would spawn one
 * fails at once and says why. (Loaded as a vitest setup file, before the test file's imports.)
 */
import { createRequire, syncBuiltinESMExports } from "node:module"

const childProcess = createRequire(import.meta.url)("node:child_process") as Record<string, unknown>
for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
  childProcess[name] = () => {
    throw new Error(`the unit ring starts no process: child_process.${name} was called (use @flotta/core/Testing)`)
  }
}
syncBuiltinESMExports()
