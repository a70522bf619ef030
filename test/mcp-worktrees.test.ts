/**
 * The worktree tools over MCP against real git repositories, in both protocol eras: a verify in a throwaway
 * worktree (a passing check, a missing branch), run worktrees listed and collected, and NotAGitRepo for a
 * directory outside any repository. The model is the in-memory Claude (`@flotta/core/Testing`); git and the
 * checks' shell are the processes here, which is why this is not in the MCP unit ring.
 */
import { assert, describe, it } from "@effect/vitest"
import type { CallToolResult, Client } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Era } from "./support/mcp.js"
import { call, connect, ERAS, fleet, handler, structured, tempDir, text } from "./support/mcp.js"

interface WaitResult {
  readonly done: boolean
  readonly kind: "turn" | "run"
  readonly result?: { readonly kind?: string; readonly passed?: boolean }
}

/** A client of a fresh in-process handler over the fleet in context. */
const session = (era: Era) => Effect.flatMap(handler(), (h) => connect(h.fetch, era))

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, "expected an isError result")
  return (result.structuredContent as { error: { _tag: string; message: string } }).error
}

const gitRepo = Effect.gen(function*() {
  const dir = yield* tempDir
  const git = (...args: Array<string>) =>
    execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: dir })
  git("init", "-q", "-b", "main")
  fs.writeFileSync(path.join(dir, "README.md"), "hello\n")
  git("add", ".")
  git("commit", "-q", "-m", "init")
  return dir
})

const verify = (client: Client, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const started = structured<{ name: string; kind: string }>(yield* call(client, "flotta_verify", args))
    assert.strictEqual(started.kind, "verify")
    return yield* call(client, "flotta_wait", { name: started.name, run: true })
  })

for (const era of ERAS) {
  describe(`the worktree tools over MCP, ${era.era} era`, () => {
    it.scopedLive("verifies branches, lists and collects worktrees, and refuses a directory outside git", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const repo = yield* gitRepo
        const verdict = structured<WaitResult>(
          yield* verify(client, { cwd: repo, branch: "main", checks: ["test -f README.md"] })
        )
        assert.deepInclude(verdict, { done: true, kind: "run" })
        assert.strictEqual(verdict.result?.kind, "verify")
        assert.isTrue(verdict.result?.passed)
        const missing = yield* verify(client, { cwd: repo, branch: "no-such-branch", checks: ["true"] })
        assert.strictEqual(errorOf(missing)._tag, "BranchNotFound")

        assert.deepStrictEqual(structured(yield* call(client, "flotta_worktrees", { cwd: repo })), { worktrees: [] })
        assert.deepStrictEqual(structured(yield* call(client, "flotta_gc_worktrees", { cwd: repo })), {
          removed: [],
          committed: [],
          discarded: [],
          kept: []
        })

        const notGit = yield* tempDir
        const worktrees = yield* call(client, "flotta_worktrees", { cwd: notGit })
        assert.strictEqual(errorOf(worktrees)._tag, "NotAGitRepo")
        assert.match(text(worktrees), /Pass a cwd inside a git repository/)
      }).pipe(Effect.provide(fleet())))
  })
}
