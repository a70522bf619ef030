/**
 * Lint confines `unsafe*` calls and `Effect.run*`/`Runtime.run*` to the src files ARCHITECTURE.md lists under
 * "Where `unsafe*` is allowed" (eslint.config.mjs reads the list from there): the rule fires in any other src file,
 * not in a listed one, and every listed file still needs it.
 */
import { ESLint } from "eslint"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.join(import.meta.dirname, "..")
const OUTSIDE = "packages/core/src/NotListed.ts"
const UNSAFE_DONE = `import { Deferred, Exit, FiberId } from "effect"

export const done = () => {
  const deferred = Deferred.unsafeMake<number>(FiberId.none)
  Deferred.unsafeDone(deferred, Exit.succeed(1))
  return deferred
}
`

const refusals = async (eslint: ESLint, text: string, file: string) => {
  const [result] = await eslint.lintText(text, { filePath: path.join(ROOT, file) })
  return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-syntax" && m.message.includes("unsafe*"))
}

describe("lint: unsafe* only where ARCHITECTURE.md allows it", () => {
  const eslint = new ESLint({ cwd: ROOT })
  const allowed = (): Promise<ReadonlyArray<string>> =>
    import(path.join(ROOT, "eslint.config.mjs")).then((config: { unsafeAllowed: ReadonlyArray<string> }) =>
      config.unsafeAllowed
    )

  it("fails a src file outside the list that calls Deferred.unsafeDone", async () => {
    const messages = await refusals(eslint, UNSAFE_DONE, OUTSIDE)
    expect(messages.map((m) => m.line)).toEqual([4, 5])
  })

  it("fails Effect.runSync, Runtime.runFork and a bare unsafe* call outside the list", async () => {
    const text = `import { Effect, Runtime } from "effect"
import { unsafeFail } from "./internal/turn.js"

export const a = Effect.runSync(Effect.succeed(1))
export const b = (runtime: Runtime.Runtime<never>) => Runtime.runFork(runtime)(Effect.void)
export const c = () => unsafeFail
export const d = () => unsafeFail(...([] as unknown as Parameters<typeof unsafeFail>))
`
    const messages = await refusals(eslint, text, OUTSIDE)
    expect(messages.map((m) => m.line)).toEqual([4, 5, 7])
  })

  it("lets a listed file call them", async () => {
    const list = await allowed()
    expect(list).toContain("packages/core/src/internal/turn.ts")
    expect(await refusals(eslint, UNSAFE_DONE, "packages/core/src/internal/turn.ts")).toEqual([])
  })

  it("lists only files that exist and still need it", async () => {
    const list = await allowed()
    expect(list.length).toBeGreaterThan(10)
    const stale: Array<string> = []
    for (const file of list) {
      const text = fs.readFileSync(path.join(ROOT, file), "utf8")
      if ((await refusals(eslint, text, OUTSIDE)).length === 0) stale.push(file)
    }
    expect(stale, "files ARCHITECTURE.md allows unsafe* in that no longer use it").toEqual([])
  })
})
