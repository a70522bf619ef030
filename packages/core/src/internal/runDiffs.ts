/**
 * Runs' diffs as the `Runs` service keeps them: while a run in a worktree goes on, its worktree and the commit it
 * started from (its changes so far are read on demand); when it ends, however it ends, its changes recorded in the
 * store's key/value state by name; read back from there, also once gc or `cleanup` has removed the worktree.
 */
import { DateTime, Effect, Option, Schema } from "effect"
import { RunNotFound } from "../Errors.js"
import type { StoreUnavailable } from "../Errors.js"
import type { GitShape } from "../Git.js"
import { NoDiff, RunDiff, stateKey } from "../RunDiff.js"
import { unreadable } from "../Store.js"
import type { StoreShape } from "../Store.js"
import type { Worktree } from "../Worktrees.js"

export interface RunDiffsDeps {
  readonly store: StoreShape
  readonly git: GitShape
  /** Whether a run of this name is known (going on, kept in the store, or an agent that was a run). */
  readonly known: (name: string) => Effect.Effect<boolean, StoreUnavailable>
}

interface Going {
  readonly worktree: Worktree
  readonly base: string
}

const decode = Schema.decodeUnknownOption(RunDiff)

export const make = (deps: RunDiffsDeps) => {
  const going = new Map<string, Going>()

  const changesOf = (name: string, run: Going, running: boolean) =>
    Effect.gen(function*() {
      const changes = yield* deps.git.diff(run.worktree, run.base)
      const at = DateTime.formatIso(yield* DateTime.now)
      return {
        name,
        worktree: run.worktree.path,
        branch: run.worktree.branch,
        base: run.base,
        ...changes,
        running,
        at
      } satisfies RunDiff
    })

  /** A run in a worktree has started from `base`. */
  const started = (name: string, worktree: Worktree, base: string) =>
    Effect.sync(() => void going.set(name, { worktree, base }))

  /** The run has ended: its changes recorded in the store (a failure to read them is logged, never the run's). */
  const ended = (name: string) =>
    Effect.suspend(() => {
      const run = going.get(name)
      if (run === undefined) return Effect.void
      return changesOf(name, run, false).pipe(
        Effect.map((diff) => deps.store.saveState(stateKey(name), diff)),
        Effect.catchAll((error) => Effect.logWarning(`the diff of run ${name} could not be recorded`, error)),
        Effect.ensuring(Effect.sync(() => going.delete(name)))
      )
    })

  /** `name`'s diff is `of`'s (a best-of-N run's is its winner's), recorded under `name` too. */
  const alias = (name: string, of: string) =>
    Effect.flatMap(deps.store.loadState(stateKey(of)), (kept) =>
      Effect.sync(() => {
        const recorded = Option.flatMap(kept, decode)
        if (Option.isSome(recorded)) deps.store.saveState(stateKey(name), { ...recorded.value, name })
      }))

  /** A run's diff: as it stands while the run goes on, as recorded once it ended. */
  const diff = Effect.fn("Runs.diff")(function*(name: string) {
    const run = going.get(name)
    if (run !== undefined) return yield* changesOf(name, run, true)
    const kept = yield* deps.store.loadState(stateKey(name))
    if (Option.isSome(kept)) {
      const recorded = decode(kept.value)
      if (Option.isSome(recorded)) return recorded.value
      return yield* unreadable(deps.store, `the recorded diff of run ${name}`)
    }
    if (yield* deps.known(name)) return yield* new NoDiff({ name })
    return yield* new RunNotFound({ name })
  })

  return { started, ended, alias, diff } as const
}
