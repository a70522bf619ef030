/**
 * A run's record: everything a finished run left in its fleet's store (its run row, its agents and their turns,
 * the diffs it recorded, its report entries without their sequence numbers), as one Schema, so that a run made in
 * one fleet (a shell `flotta run`'s, in memory) lands in another's store as if it had run there: `runs()`,
 * `runResult`, `diff`, `costs`, the transcript and the report log then show it.
 *
 * `exportFrom` reads a finished run's record out of a store. `importInto` writes one into a store in one go (all
 * of it in one batch of the write-behind buffer, hence one transaction of a durable store), its entries numbered by
 * the log it is given. A record whose name the store already knows is `RunNameTaken` (nothing is overwritten),
 * unless it is the very same run (`AlreadyImported`): importing a record twice changes nothing. `RunRecords` is the
 * same over an engine's own store, report log and registry, so a host's live subscribers see the entries.
 */
import { Effect, Option, Schema } from "effect"
import { AgentRow, TurnRow } from "./AgentView.js"
import type { ReportEntry } from "./AgentView.js"
import { exact } from "./Decode.js"
import { RunNotFound, TurnPending } from "./Errors.js"
import { Registry } from "./Registry.js"
import { ReportLog } from "./ReportLog.js"
import { MAX_LIMIT } from "./ReportLog.js"
import { isOwnAgent } from "./RunAttempts.js"
import { RunDiff, stateKey } from "./RunDiff.js"
import { RunRow, Store } from "./Store.js"
import type { StoreShape } from "./Store.js"

/** The format of a record; a reader refuses a newer one (and leaves it for a newer flotta). */
export const RECORD_VERSION = 1

/** A report entry as a record keeps it: without its `seq`, which the log it lands in gives it. */
export const ReportDraft = Schema.Struct({
  at: Schema.String,
  agent: Schema.String,
  kind: Schema.String,
  turnId: exact(Schema.String),
  data: Schema.Unknown
})
export type ReportDraft = typeof ReportDraft.Type

export const RunRecord = Schema.Struct({
  version: Schema.Literal(RECORD_VERSION),
  /** The run's name. */
  name: Schema.String,
  /** Its row: state, times, worktree, and its result or typed error (as `runResult` reads it back). */
  run: RunRow,
  /** Its agent, and a best-of-N run's attempts (each a run agent of its own), closed. */
  agents: Schema.Array(AgentRow),
  /** Their turns (each carries its cost per model: the cost console's rows come from them). */
  turns: Schema.Array(TurnRow),
  /** The diffs it recorded: its own, and each attempt's under the attempt's name. */
  diffs: Schema.Array(RunDiff),
  /** Its report entries (`run_finished` among them), oldest first. */
  reports: Schema.Array(ReportDraft)
})
export type RunRecord = typeof RunRecord.Type

/** What an import did: the record landed, or this very run was there already. */
export type ImportOutcome =
  | { readonly _tag: "Imported"; readonly name: string; readonly entries: number }
  | { readonly _tag: "AlreadyImported"; readonly name: string }

/** A record cannot land: the store (or the fleet) already has a run or agent under one of its names. */
export class RunNameTaken extends Schema.TaggedError<RunNameTaken>()("RunNameTaken", {
  name: Schema.String,
  /** What holds the name already. */
  holder: Schema.String
}) {
  override get message() {
    return `the run "${this.name}" cannot be recorded: ${this.holder}; give the run another name`
  }
}

/** Whether an agent is one of `name`'s: the run's own, or one of its attempts. */
const ownedBy = (name: string) => (agent: AgentRow) =>
  agent.name === name || (agent.lifecycle === "run" && isOwnAgent(name, agent.name))

const decodeDiff = Schema.decodeUnknownOption(RunDiff)

/** Every report entry of one agent in `store`, oldest first. */
const entriesOf = (store: StoreShape, agent: string) =>
  Effect.gen(function*() {
    const out: Array<ReportEntry> = []
    let since = 0
    while (true) {
      const page = yield* store.readReports({ agent, since, limit: MAX_LIMIT })
      out.push(...page.entries)
      if (page.entries.length < MAX_LIMIT || page.next <= since) return out
      since = page.next
    }
  })

/**
 * The record of a finished run `name` in `store`: RunNotFound for a name the store has no run of, TurnPending for one
 * still going. Its agents are recorded as closed (a run's agent may still be closing as it is read).
 */
export const exportFrom = Effect.fn("RunRecord.export")(function*(store: StoreShape, name: string) {
  const row = yield* store.run(name)
  if (Option.isNone(row)) return yield* new RunNotFound({ name })
  if (row.value.status === "running") return yield* new TurnPending({ name, turnId: name, status: "running" })
  const agents = (yield* store.agents).filter(ownedBy(name)).map((agent): AgentRow =>
    agent.status === "closed" ? agent : {
      ...agent,
      status: "closed",
      closedReason: agent.closedReason ?? "the run ended",
      process: null
    }
  )
  const names = [...new Set([name, ...agents.map((a) => a.name)])]
  const turns = (yield* Effect.forEach(agents, (agent) => store.turns(agent.name))).flat()
  const diffs = (yield* Effect.forEach(names, (n) => store.loadState(stateKey(n)))).flatMap((kept) =>
    Option.toArray(Option.flatMap(kept, decodeDiff))
  )
  const entries = (yield* Effect.forEach(names, (n) => entriesOf(store, n))).flat().sort((a, b) => a.seq - b.seq)
  return {
    version: RECORD_VERSION,
    name,
    run: row.value,
    agents,
    turns,
    diffs,
    reports: entries.map((e): ReportDraft =>
      e.turnId === undefined
        ? { at: e.at, agent: e.agent, kind: e.kind, data: e.data }
        : { at: e.at, agent: e.agent, kind: e.kind, turnId: e.turnId, data: e.data }
    )
  } satisfies RunRecord
})

/** Where a record is imported: a store, how its log appends entries, and the names live in the fleet over it. */
export interface ImportTarget {
  readonly store: StoreShape
  /** Appends entries made elsewhere, each at its own time, numbered here (synchronously). */
  readonly append: (drafts: ReadonlyArray<ReportDraft>) => void
  readonly liveNames: Effect.Effect<ReadonlyArray<string>>
}

/** A store on its own (no fleet over it): its entries appended straight to its log. */
export const storeTarget = (store: StoreShape): ImportTarget => ({
  store,
  append: (drafts) => {
    for (const d of drafts) {
      store.appendReport({ at: d.at, agent: d.agent, kind: d.kind, data: d.data, turnId: d.turnId })
    }
  },
  liveNames: Effect.succeed([])
})

/** The same run: the name, and when it started and ended. */
const sameRun = (a: RunRow, b: RunRow) =>
  a.name === b.name && a.startedAt === b.startedAt && a.finishedAt === b.finishedAt && a.status === b.status

/**
 * Writes `record` into `target`'s store: its agents, turns, diffs, entries, and its run row last, all at once (one
 * batch). `AlreadyImported` when the store has this very run; `RunNameTaken` when it has another run, or an agent,
 * under one of its names (or one of them is live in the fleet).
 */
export const importInto = Effect.fn("RunRecord.import")(function*(target: ImportTarget, record: RunRecord) {
  const { store } = target
  const existing = yield* store.run(record.name)
  if (Option.isSome(existing)) {
    if (sameRun(existing.value, record.run)) return { _tag: "AlreadyImported", name: record.name } as ImportOutcome
    return yield* new RunNameTaken({
      name: record.name,
      holder: `the store has a run of that name already, started ${existing.value.startedAt}`
    })
  }
  const names = [...new Set([record.name, ...record.agents.map((a) => a.name)])]
  const live = yield* target.liveNames
  const stored = new Set((yield* store.agents).map((a) => a.name))
  for (const name of names) {
    if (live.includes(name)) {
      return yield* new RunNameTaken({ name: record.name, holder: `an agent named "${name}" is live in the fleet` })
    }
    if (stored.has(name) || (yield* store.lastTurn(name)) > 0) {
      return yield* new RunNameTaken({ name: record.name, holder: `the store has an agent named "${name}" already` })
    }
  }
  // One synchronous block: nothing can commit half of it.
  return yield* Effect.sync((): ImportOutcome => {
    for (const agent of record.agents) store.saveAgent(agent)
    for (const turn of record.turns) store.saveTurn(turn)
    for (const diff of record.diffs) store.saveState(stateKey(diff.name), diff)
    target.append(record.reports)
    store.saveRun(record.run)
    return { _tag: "Imported", name: record.name, entries: record.reports.length }
  })
})

/**
 * `store` as a reader sees it with `records` laid over it (records not imported yet, waiting in its inbox): their
 * runs, agents, turns and diffs where the store has none of that name. Reports and costs are the store's alone.
 */
export const overlay = (store: StoreShape, records: ReadonlyArray<RunRecord>): StoreShape => {
  if (records.length === 0) return store
  const runs = new Map(records.map((record) => [record.name, record.run]))
  const agents = records.flatMap((record) => record.agents)
  const turns = records.flatMap((record) => record.turns)
  const diffs = new Map(records.flatMap((record) => record.diffs.map((diff) => [stateKey(diff.name), diff])))
  return {
    ...store,
    runs: Effect.map(store.runs, (rows) => {
      const stored = new Set(rows.map((row) => row.name))
      return [...rows, ...[...runs.values()].filter((row) => !stored.has(row.name))]
    }),
    run: (name) => Effect.map(store.run(name), Option.orElse(() => Option.fromNullable(runs.get(name)))),
    agents: Effect.map(store.agents, (rows) => {
      const stored = new Set(rows.map((row) => row.name))
      return [...rows, ...agents.filter((agent) => !stored.has(agent.name))]
    }),
    turns: (agent) =>
      Effect.map(
        store.turns(agent),
        (rows) => rows.length > 0 ? rows : turns.filter((turn) => turn.agent === agent).sort((a, b) => a.n - b.n)
      ),
    loadState: (key) => Effect.map(store.loadState(key), Option.orElse(() => Option.fromNullable(diffs.get(key))))
  }
}

/** Records over the engine's own store: exported from it, imported into it through its report log. */
export class RunRecords extends Effect.Service<RunRecords>()("@flotta/core/RunRecords", {
  effect: Effect.gen(function*() {
    const store = yield* Store
    const reports = yield* ReportLog
    const registry = yield* Registry
    const target: ImportTarget = { store, append: reports.unsafeReplay, liveNames: registry.liveNames }
    return {
      /** A finished run's record (see `exportFrom`). */
      exportRun: (name: string) => exportFrom(store, name),
      /** Lands a record here (see `importInto`); live subscribers of the log get its entries. */
      importRun: (record: RunRecord) => importInto(target, record)
    } as const
  })
}) {}
