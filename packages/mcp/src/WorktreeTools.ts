/**
 * A repository's run worktrees over MCP: `flotta_worktrees` lists them, `flotta_gc_worktrees` removes those whose run
 * has ended (the work of a dirty one committed to its branch first, with `force`; dropped, with `discard` too).
 */
import { Flotta } from "@flotta/core/Flotta"
import { GcResult } from "@flotta/core/WorktreeGc"
import { Effect, Schema } from "effect"
import * as S from "./Schemas.js"
import * as Tool from "./Tool.js"

export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: "flotta_worktrees",
    title: "List run worktrees",
    description: "The runs' git worktrees in a repository: path, branch, clean or dirty, locked, age.",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: S.CwdArgs,
    output: Schema.Struct({ worktrees: Schema.Array(S.WorktreeInfo) }),
    run: ({ cwd }) =>
      Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.worktrees(cwd ?? ".")), (worktrees) => ({ worktrees }))
  }),
  Tool.make({
    name: "flotta_gc_worktrees",
    title: "Remove finished run worktrees",
    description: "Remove the run worktrees whose run has ended: clean ones; with force the ones with uncommitted " +
      "changes too, their work committed to their branch first (with force and discard: dropped instead). A locked " +
      "worktree is never touched, and branches stay. Returns what was removed (the work committed, with the commit, " +
      "and the work discarded, by file) and what was kept, and why.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: S.GcArgs,
    output: GcResult,
    run: ({ cwd, discard, force }) =>
      Effect.flatMap(
        Flotta,
        (fleet) =>
          fleet.gcWorktrees(cwd ?? ".", {
            ...(force === undefined ? {} : { force }),
            ...(discard === undefined ? {} : { discard })
          })
      )
  })
]
