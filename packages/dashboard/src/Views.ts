/**
 * What the pages show, gathered from the fleet (`Flotta`) and, when one runs, the scheduler (what other packages
 * show is their contributed panels: `Http.panels`). Plain data, no markup: `Pages` renders it. An agent that goes away between two reads (closed
 * meanwhile) is left out or read again, never an error; a closed one is read back from the store.
 */
import type { AgentInfo, AgentStatusView, TurnRecord } from "@flotta/core/Agent"
import type { Approval } from "@flotta/core/Approvals"
import * as EngineEvents from "@flotta/core/EngineEvents"
import type { HostLost, HostUnavailable, StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { RunResult, VerifyReport } from "@flotta/core/Run"
import type { RunDiff } from "@flotta/core/RunDiff"
import type { RunView } from "@flotta/core/RunList"
import { WORKTREES_DIR } from "@flotta/core/Worktrees"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import * as SchedulerEvents from "@flotta/scheduler/SchedulerEvents"
import type { Finding, SchedulerStatus } from "@flotta/scheduler/Steering"
import { Array as Arr, Effect, Either, Option } from "effect"
import * as path from "node:path"

/** What a fleet may fail to answer with, on any page: a host lost or unavailable, a store that cannot be read. */
export type Unanswered = HostLost | HostUnavailable | StoreUnavailable

/** The report log's cursor now: the client replays from here, so read it before the data it renders. */
export const cursor = Effect.flatMap(Flotta, (fleet) => fleet.reports({ last: 1 })).pipe(
  Effect.map((page) => page.next)
)

export interface AgentRow {
  readonly info: AgentInfo
  /** When the turn in flight started (ISO). */
  readonly currentStartedAt: string | null
  /** A run's worktree, when it runs in one. */
  readonly worktree: string | null
}

/** The worktree a run's working directory is in (`<repo>/.claude/worktrees/<name>`), if any. */
export const worktreeOf = (cwd: string): string | null => {
  const marker = path.sep + WORKTREES_DIR + path.sep
  const at = cwd.indexOf(marker)
  if (at === -1) return null
  const name = cwd.slice(at + marker.length).split(path.sep)[0]!
  return cwd.slice(0, at + marker.length) + name
}

/** Every live agent and run in progress, by name. */
export const agents: Effect.Effect<ReadonlyArray<AgentRow>, Unanswered, Flotta> = Effect.gen(function*() {
  const fleet = yield* Flotta
  const infos = yield* fleet.list()
  const rows = yield* Effect.forEach(infos, (info) =>
    fleet.status(info.name).pipe(
      Effect.map((status): Option.Option<AgentRow> =>
        Option.some({
          info,
          currentStartedAt: status.currentStartedAt,
          worktree: info.lifecycle === "run" ? worktreeOf(info.cwd) : null
        })
      ),
      Effect.catchTag("AgentNotFound", () => Effect.succeedNone)
    ))
  return Arr.getSomes(rows).sort((a, b) => a.info.name.localeCompare(b.info.name))
})

/** A finished async run's (or verify's) outcome, kept by name: its result, or its failure. */
export interface RunOutcomeView {
  readonly result: RunResult | VerifyReport | null
  readonly error: { readonly _tag: string; readonly message: string } | null
}

export type AgentView =
  | {
    readonly _tag: "Live"
    readonly info: AgentInfo
    readonly status: AgentStatusView
    readonly transcript: ReadonlyArray<TurnRecord>
    readonly approvals: ReadonlyArray<Approval>
    readonly worktree: string | null
  }
  /** Closed, read back from the store: its facts and transcript, and a run's outcome when it was an async run. */
  | {
    readonly _tag: "Closed"
    readonly info: AgentInfo
    readonly transcript: ReadonlyArray<TurnRecord>
    readonly worktree: string | null
    readonly run: RunOutcomeView | null
  }
  /** A finished async run (or verify) whose agent the store no longer has (or never had: a verify): its outcome. */
  | ({ readonly _tag: "Finished"; readonly name: string } & RunOutcomeView)
  /** Neither live nor in the store: what the report log last said about it, if anything. */
  | { readonly _tag: "Gone"; readonly name: string; readonly last: ReportEntry | null }

/** An async run's (or verify's) outcome by name; none while it runs, or for a name no async run had. */
export const runOutcome = Effect.fn("Views.runOutcome")(function*(name: string) {
  return yield* Effect.flatMap(Flotta, (fleet) => fleet.runResult(name)).pipe(
    Effect.map((result) => Option.some<RunOutcomeView>({ result, error: null })),
    // The run's own failure is its outcome; a store that cannot be read is the page's (503), not the run's.
    Effect.catchAll((error) =>
      error._tag === "StoreUnavailable" ? Effect.fail(error) : Effect.succeed(
        error._tag === "RunNotFound" || error._tag === "TurnPending"
          ? Option.none()
          : Option.some<RunOutcomeView>({ result: null, error: { _tag: error._tag, message: error.message } })
      )
    )
  )
})

const worktreeOfAgent = (info: AgentInfo) => (info.lifecycle === "run" ? worktreeOf(info.cwd) : null)

/**
 * One agent or async run, however it stands now: live, closed (from the store), finished, or gone. `again`: read
 * once more after a live agent went between two reads.
 */
export const agent: (name: string, again?: boolean) => Effect.Effect<AgentView, Unanswered, Flotta> = Effect.fn(
  "Views.agent"
)(function*(name: string, again = true) {
  const fleet = yield* Flotta
  const found = yield* Effect.option(fleet.info(name))
  if (Option.isSome(found) && found.value.status !== "closed") {
    const live = yield* Effect.all({
      status: fleet.status(name),
      transcript: fleet.transcript(name),
      approvals: fleet.approvals({ agent: name })
    }).pipe(Effect.option)
    const info = found.value
    if (Option.isSome(live)) return { _tag: "Live", info, ...live.value, worktree: worktreeOfAgent(info) } as const
    // Closed in between: read it again, from the store.
    if (again) return yield* agent(name, false)
  } else if (Option.isSome(found)) {
    const info = found.value
    return {
      _tag: "Closed",
      info,
      transcript: yield* fleet.transcript(name).pipe(Effect.orElseSucceed((): ReadonlyArray<TurnRecord> => [])),
      worktree: worktreeOfAgent(info),
      run: info.lifecycle === "run" ? Option.getOrNull(yield* runOutcome(name)) : null
    } as const
  }
  const finished = yield* runOutcome(name)
  if (Option.isSome(finished)) return { _tag: "Finished", name, ...finished.value } as const
  const last = yield* fleet.reports({ agent: name, last: 1 })
  return { _tag: "Gone", name, last: last.entries.at(-1) ?? null } as const
})

/** A run's diff, or why there is none (no worktree: NoDiff; no such run: RunNotFound; or another failure). */
export type RunDiffView =
  | { readonly _tag: "Diff"; readonly diff: RunDiff }
  | { readonly _tag: "None"; readonly error: string; readonly name: string; readonly message: string }

export const runDiff = Effect.fn("Views.runDiff")(function*(name: string) {
  return yield* Effect.flatMap(Flotta, (fleet) => fleet.diff(name)).pipe(
    Effect.map((diff): RunDiffView => ({ _tag: "Diff", diff })),
    Effect.catchAll((error) =>
      error._tag === "StoreUnavailable"
        ? Effect.fail(error)
        : Effect.succeed<RunDiffView>({ _tag: "None", error: error._tag, name, message: error.message })
    )
  )
})

/** What the run page shows: the run as `runs()` lists it, its outcome, its agent, and its diff. */
export interface RunPageView {
  readonly name: string
  /** As `runs()` lists it (an async run or verify); null for a run that is not one (a sync run, an attempt). */
  readonly run: RunView | null
  /** Its outcome once it has finished (an async run or verify). */
  readonly outcome: RunOutcomeView | null
  /** The run's own agent (live, or closed and read from the store), when it had one and `runs()` has no row. */
  readonly agent: { readonly info: AgentInfo; readonly last: TurnRecord | null } | null
  readonly diff: RunDiffView
}

/** Everything known of a run by name; `found` is false when nothing is. */
export const run = Effect.fn("Views.run")(function*(name: string) {
  const fleet = yield* Flotta
  const [listed, outcome, diff] = yield* Effect.all([
    fleet.runs().pipe(
      Effect.map((views) => views.find((v) => v.name === name) ?? null),
      Effect.orElseSucceed(() => null)
    ),
    runOutcome(name),
    runDiff(name)
  ])
  const info = listed === null ? yield* Effect.option(fleet.info(name)) : Option.none()
  const agent = Option.isSome(info) && info.value.lifecycle === "run"
    ? {
      info: info.value,
      last: (yield* fleet.transcript(name).pipe(Effect.orElseSucceed((): ReadonlyArray<TurnRecord> => []))).at(-1) ??
        null
    }
    : null
  const found = listed !== null || Option.isSome(outcome) || agent !== null ||
    !(diff._tag === "None" && diff.error === "RunNotFound")
  return { name, run: listed, outcome: Option.getOrNull(outcome), agent, diff, found }
})

export const RUN_STATES = ["running", "succeeded", "failed"] as const
export const RUN_KINDS = ["run", "verify"] as const

export interface RunsFilter {
  readonly state: RunView["state"] | undefined
  readonly kind: RunView["kind"] | undefined
}

/** A filter value the runs page does not know: the parameter, what it was, and what it may be. */
export interface BadFilter {
  readonly param: string
  readonly value: string
  readonly allowed: ReadonlyArray<string>
}

const pick = <A extends string>(
  query: URLSearchParams,
  param: string,
  allowed: ReadonlyArray<A>
): Either.Either<A | undefined, BadFilter> => {
  const value = query.get(param)?.trim() ?? ""
  if (value === "" || value === "all") return Either.right(undefined)
  return (allowed as ReadonlyArray<string>).includes(value)
    ? Either.right(value as A)
    : Either.left({ param, value, allowed: ["all", ...allowed] })
}

/** `?state=&kind=` (blank or `all`: any), or the first value it does not know. */
export const runsFilter = (query: URLSearchParams): Either.Either<RunsFilter, BadFilter> =>
  Either.all({ state: pick(query, "state", RUN_STATES), kind: pick(query, "kind", RUN_KINDS) })

export const RUNS_SHOWN = 200

/** The async runs and verifies under a filter, newest first, at most `RUNS_SHOWN`. */
export const runs = Effect.fn("Views.runs")(function*(filter: RunsFilter) {
  return yield* Effect.flatMap(Flotta, (fleet) =>
    fleet.runs({
      limit: RUNS_SHOWN,
      ...(filter.state === undefined ? {} : { state: filter.state }),
      ...(filter.kind === undefined ? {} : { kind: filter.kind })
    }))
})

export const approvals: Effect.Effect<ReadonlyArray<Approval>, Unanswered, Flotta> = Effect.flatMap(
  Flotta,
  (fleet) => fleet.approvals()
)

export interface ScheduleView {
  readonly status: SchedulerStatus
  readonly findings: ReadonlyArray<Finding>
}

/** The scheduler's status and findings, or none when no scheduler runs in this fleet. */
export const schedule: Effect.Effect<Option.Option<ScheduleView>, StoreUnavailable> = Effect.serviceOption(
  Scheduler
).pipe(
  Effect.flatMap(Option.match({
    onNone: () => Effect.succeedNone,
    onSome: (scheduler) =>
      Effect.all({ status: scheduler.status, findings: scheduler.findings({ limit: 50 }) }).pipe(Effect.asSome)
  }))
)

export interface ReportFilter {
  readonly agent: string | undefined
  readonly kinds: ReadonlyArray<string>
}

/** `?agent=&kind=`: kind may repeat, or list several separated by commas or spaces. */
export const reportFilter = (query: URLSearchParams): ReportFilter => {
  const agent = query.get("agent")?.trim()
  return {
    agent: agent === undefined || agent.length === 0 ? undefined : agent,
    kinds: query.getAll("kind").flatMap((k) => k.split(/[\s,]+/)).filter((k) => k.length > 0)
  }
}

export const REPORTS_SHOWN = 200

/** The report log's tail under a filter, newest first. */
export const reports = Effect.fn("Views.reports")(function*(filter: ReportFilter) {
  return yield* Effect.flatMap(Flotta, (fleet) =>
    fleet.reports({
      last: REPORTS_SHOWN,
      ...(filter.agent === undefined ? {} : { agent: filter.agent }),
      ...(filter.kinds.length === 0 ? {} : { kinds: filter.kinds })
    })).pipe(Effect.map((page) => [...page.entries].reverse()))
})

/**
 * One line about an entry, by its kind's own summary: whichever package loaded in this process declares the kind
 * (the engine's, the scheduler's, the webhooks'...). An entry of another kind (a newer host's) or whose data does
 * not fit its kind is shown raw: its data as compact JSON. The live rows get the same line: the page's event
 * stream carries it (`Events`).
 */
export const summary: (entry: ReportEntry) => string = ReportEvent.line([
  ...EngineEvents.engine,
  ...SchedulerEvents.kinds
])
