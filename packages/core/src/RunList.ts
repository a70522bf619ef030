/**
 * The list of async runs and verifies (`Flotta.runs`): what a person or a client sees of each (`RunView`: small,
 * from the store's row and, while a run goes on, what it has spent so far), newest first, narrowed by state and
 * count. Pure functions: the `Runs` service reads the rows, a cluster merges the hosts' lists with `selectRuns`.
 */
import { Option, Predicate, Schema } from "effect"
import * as path from "node:path"
import { hasLabels } from "./AgentOptions.js"
import type { Labels } from "./AgentOptions.js"
import { exact } from "./Decode.js"
import type { RunRow } from "./Store.js"

/** Where an async run (or verify) stands. */
export type RunState = RunRow["status"]

/** One async run (or verify) as `runs()` lists it: small, for a person's table or a client's choice. */
export interface RunView {
  readonly name: string
  readonly kind: "run" | "verify"
  readonly state: RunState
  readonly startedAt: string
  readonly finishedAt: string | null
  /** A run's spend: so far while it runs, its total once it ends; null for a verify, or when nothing reported it. */
  readonly costUsd: number | null
  /** The run's worktree, while it has one (or where it was, once cleanup removed it). */
  readonly worktree: string | null
  /** The worktree's branch; for a verify, the branch it checked. */
  readonly branch: string | null
  /** A finished verify's verdict: every check passed; null for a run, or a verify not finished. */
  readonly passed: boolean | null
  /** The failure's tag (TurnFailed, HostRestarted, ...), when it failed. */
  readonly error: string | null
  /** In a cluster: the host that runs it. */
  readonly host?: string
  /** Its labels, when it has any. */
  readonly labels?: Labels
}

export interface RunQuery {
  /** Only the runs in this state. */
  readonly state?: RunState
  /** Only runs, or only verifies. */
  readonly kind?: RunView["kind"]
  /** At most this many, newest first. */
  readonly limit?: number
  /** Only the runs with every one of these labels (`{ team: "a" }`). */
  readonly labels?: Labels
}

/** What a list shows of a stored result: only the fields it needs, so a partial row still shows what it has. */
const Shown = Schema.Struct({
  kind: Schema.Literal("run", "verify"),
  costUsd: exact(Schema.Number),
  worktree: exact(Schema.Struct({ path: Schema.String, branch: Schema.String })),
  branch: exact(Schema.String),
  passed: exact(Schema.Boolean)
})
const decodeShown = Schema.decodeUnknownOption(Shown)

/** What a stored run row shows in a list (`liveCost`: what a run still going has spent so far, if known). */
export const viewOf = (row: RunRow, liveCost: number | null = null): RunView => {
  const outcome = row.status === "succeeded" ? Option.getOrUndefined(decodeShown(row.result)) : undefined
  const result = outcome?.kind === "run" ? outcome : undefined
  const verified = outcome?.kind === "verify" ? outcome : undefined
  // A failure's encoded error: its tag, and what a failed turn had spent.
  const error = row.status === "failed" && Predicate.isRecord(row.error) ? row.error : null
  const worktree = result?.worktree?.path ?? row.worktree
  const branch = result?.worktree?.branch ?? verified?.branch ??
    (worktree === null ? null : `worktree-${path.basename(worktree)}`)
  const cost = result?.costUsd ?? (typeof error?.costUsd === "number" ? error.costUsd : null)
  return {
    name: row.name,
    kind: row.kind,
    state: row.status,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    costUsd: row.kind === "verify"
      ? null
      : row.status === "running"
      ? liveCost
      : typeof cost === "number"
      ? cost
      : null,
    worktree,
    branch: branch ?? null,
    passed: verified?.passed ?? null,
    error: row.status !== "failed" ? null : typeof error?._tag === "string" ? error._tag : "Failed",
    ...(row.labels === undefined ? {} : { labels: row.labels })
  }
}

/** Newest first (by start, then name), filtered and cut as the query asks. */
export const selectRuns = (views: ReadonlyArray<RunView>, query: RunQuery = {}): ReadonlyArray<RunView> => {
  const chosen = views
    .filter((v) =>
      (query.state === undefined || v.state === query.state) && (query.kind ?? v.kind) === v.kind &&
      hasLabels(v.labels, query.labels)
    )
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt) || a.name.localeCompare(b.name))
  return query.limit === undefined ? chosen : chosen.slice(0, Math.max(0, query.limit))
}
