/**
 * The facade: every public operation of the fleet, as Effects. `Flotta.layer(options)` is the whole engine
 * (Registry, ReportLog, FleetConfig, the claude executable) in one Layer, over the platform's services
 * (`CommandExecutor`, `FileSystem`, `Path`), which the edge provides: `Layer.provide(NodeContext.layer)`.
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { FileSystem } from "@effect/platform/FileSystem"
import { Effect, Layer } from "effect"
import * as Agent from "./Agent.js"
import * as AgentOptions from "./AgentOptions.js"
import { errorView } from "./AgentView.js"
import { Approvals } from "./Approvals.js"
import type { ApprovalDecision, ApprovalQuery } from "./Approvals.js"
import { ClaudeCli } from "./ClaudeCli.js"
import type { ClaudeExecutable } from "./ClaudeCli.js"
import * as Costs from "./Costs.js"
import { InvalidSpec } from "./Errors.js"
import type { AgentClosed, AgentNotFound, NoResult, StoreUnavailable, TurnError } from "./Errors.js"
import { FleetConfig } from "./FleetConfig.js"
import type { FleetSettingsInput } from "./FleetConfig.js"
import type { BootReport, FlottaShape } from "./FlottaShape.js"
import { Git } from "./Git.js"
import * as Http from "./Http.js"
import * as Restore from "./internal/restore.js"
import type { AskOptions, BroadcastOutcome } from "./Operations.js"
import { Parking } from "./Parking.js"
import type { PendingDecisions } from "./Permission.js"
import { Permission } from "./Permission.js"
import { Registry } from "./Registry.js"
import { ReportLog } from "./ReportLog.js"
import type { ReportQuery, SubscribeOptions } from "./ReportLog.js"
import { Runs } from "./Run.js"
import { RunRecords } from "./RunRecord.js"
import * as Spec from "./Spec.js"
import { Store } from "./Store.js"
import type { StoreOptions } from "./Store.js"
import * as StoreConfig from "./StoreConfig.js"

export type { BootReport, FlottaShape } from "./FlottaShape.js"
export type { AskOptions, BroadcastOutcome } from "./Operations.js"

/** The agent options a spec describes. */
export const specOptions = (spec: Spec.Spec): Agent.AgentOptions => ({
  ...Spec.agentOptions(spec),
  role: spec.role,
  ...(spec.maxBudgetUsd === undefined ? {} : { maxBudgetUsd: spec.maxBudgetUsd }),
  ...(spec.budgetPer === undefined ? {} : { budgetPer: spec.budgetPer })
})

const make = Effect.gen(function*() {
  const registry = yield* Registry
  const reportLog = yield* ReportLog
  const runs = yield* Runs
  const parkingLot = yield* Parking
  const store = yield* Store
  const approvalBook = yield* Approvals
  // What the store has from an earlier host comes back before anything else is served.
  const restored = yield* Restore.restore({ store, registry, runs, reports: reportLog })

  const spawn = Effect.fn("Flotta.spawn")(function*(name: string, options: Agent.AgentOptions = {}) {
    if (options.host !== undefined) {
      return yield* new InvalidSpec({
        path: "host",
        reason: `this fleet runs on one host; choosing one needs a cluster (the config's "cluster" section)`
      })
    }
    const agent = yield* registry.spawn(name, options)
    return yield* agent.info
  })

  /**
   * A new session agent `name` whose conversation is `source`'s up to and including turn `at` (default: its last
   * turn that succeeded), under a session id of its own; it takes the source's options unless `options` says
   * otherwise. The source is left as it is: its session file, its queue and its turn in flight.
   */
  const fork = Effect.fn("Flotta.fork")(function*(source: string, name: string, options: Agent.ForkOptions = {}) {
    const { at, ...given } = options
    if (given.host !== undefined) {
      return yield* new InvalidSpec({
        path: "host",
        reason: `this fleet runs on one host; choosing one needs a cluster (the config's "cluster" section)`
      })
    }
    const point = yield* (yield* registry.get(source)).forkPoint(at)
    const agent = yield* registry.spawn(name, { ...point.options, ...given }, undefined, point.origin)
    return yield* agent.info
  })

  // The turn path (prompt, ask, wait, watch) is plain: each turn has its own span, `flotta.turn`, and a span
  // per call on top of it would double the tracing cost of every turn.
  const prompt = (name: string, text: string, options: AskOptions = {}) =>
    registry.get(name).pipe(Effect.flatMap((agent) => agent.prompt(text, options)))

  /** The whole result of one turn; interrupting the caller cancels the turn. */
  const askResult = (
    name: string,
    text: string,
    options: AskOptions = {}
  ): Effect.Effect<
    Agent.TurnResult,
    AgentNotFound | AgentClosed | InvalidSpec | TurnError | NoResult | StoreUnavailable
  > => registry.get(name).pipe(Effect.flatMap((agent) => Effect.flatMap(agent.prompt(text, options), agent.await)))

  /** Blocks for the reply text. */
  const ask = (name: string, text: string, options: AskOptions = {}) =>
    Effect.map(askResult(name, text, options), (result) => result.text)

  /** Waits for a turn started with `prompt`; interrupting the caller cancels the turn. */
  const wait = (name: string, turnId: string) => registry.get(name).pipe(Effect.flatMap((a) => a.await(turnId)))
  /** Waits for a turn like `wait`, but interrupting the caller only stops the waiting: the turn goes on. */
  const watch = (name: string, turnId: string) => registry.get(name).pipe(Effect.flatMap((a) => a.watch(turnId)))

  const status = Effect.fn("Flotta.status")(function*(name: string) {
    return yield* (yield* registry.get(name)).status
  })
  const result = Effect.fn("Flotta.result")(function*(name: string, turnId: string = "latest") {
    return yield* (yield* registry.get(name)).result(turnId)
  })
  /**
   * An agent's turns, oldest first (at most the fleet's `historyLimit`): a live one's, or a closed one's as the
   * store still has them (until retention removes them). AgentNotFound for a name never seen.
   */
  const transcript = Effect.fn("Flotta.transcript")(function*(name: string) {
    return yield* (yield* registry.readable(name)).transcript
  })
  /** An agent's info: a live one's, or a closed one's from the store (status `closed`, `closedAt`, `closedReason`). */
  const info = Effect.fn("Flotta.info")(function*(name: string) {
    return yield* (yield* registry.readable(name)).info
  })
  /** Interrupts the turn in flight (`TurnInterrupted`); queued turns go on. False when nothing was running. */
  const interrupt = Effect.fn("Flotta.interrupt")(function*(name: string) {
    return yield* (yield* registry.get(name)).interrupt
  })
  /**
   * Queues a compaction of a session's conversation as its next turn (`/compact`, with what to keep), and returns
   * its turn id: its result carries the compaction (`compaction`: trigger, tokens before and after).
   */
  const compact = Effect.fn("Flotta.compact")(function*(name: string, instructions?: string) {
    return yield* (yield* registry.get(name)).compact(instructions)
  })
  /** Queues a fresh conversation as a session's next turn: a new session under the same name; the turn id. */
  const clear = Effect.fn("Flotta.clear")(function*(name: string) {
    return yield* (yield* registry.get(name)).clear
  })
  /**
   * Ends a session's process cleanly and keeps everything else: its status is `hibernated` until a prompt, a
   * broadcast or `wake` starts it again with `--resume`. False when it was asleep already.
   */
  const hibernate = Effect.fn("Flotta.hibernate")(function*(name: string) {
    return yield* registry.hibernate(name)
  })
  /** Wakes a hibernated session and waits until its process is up; false when it was not asleep. */
  const wake = Effect.fn("Flotta.wake")(function*(name: string) {
    return yield* (yield* registry.get(name)).wake("by request")
  })
  /** Changes a live agent's labels: each later turn's cost is booked under them. Its info. */
  const label = Effect.fn("Flotta.label")(function*(name: string, labels: AgentOptions.Labels) {
    const agent = yield* registry.get(name)
    yield* agent.relabel(labels)
    return yield* agent.info
  })
  const close = Effect.fn("Flotta.close")(function*(name: string) {
    return yield* registry.close(name)
  })
  /**
   * Unparks by hand (see `Parking`): one agent (the rest of its credentials' group stays parked), or every
   * parked agent, staggered. Returns the agents that resume; an agent that was not parked is not among them.
   */
  const unpark = Effect.fn("Flotta.unpark")(function*(options: { readonly agent?: string } = {}) {
    if (options.agent !== undefined) yield* registry.get(options.agent)
    return yield* parkingLot.unpark(options)
  })
  /** The credential groups parked now: until when, why, and which agents. */
  const parking = parkingLot.parked
  /** The live agents (runs in progress included); `{ labels }` keeps those with every one of them. */
  const list = (query: AgentOptions.ListQuery = {}) =>
    registry.list.pipe(
      Effect.map((infos) =>
        query.labels === undefined ? infos : infos.filter((i) => AgentOptions.hasLabels(i.labels, query.labels))
      ),
      Effect.withSpan("Flotta.list")
    )

  /**
   * Every live session at once; one slow or failing agent never holds up the others. Runs are left alone: a
   * queued turn would run with the run's permission inside its worktree.
   */
  const broadcast = Effect.fn("Flotta.broadcast")(function*(text: string, options: AskOptions = {}) {
    const agents = (yield* registry.agents).filter((agent) => agent.lifecycle === "session")
    return yield* Effect.forEach(agents, (agent) =>
      agent.prompt(text, options).pipe(
        Effect.flatMap((turnId) => agent.await(turnId)),
        Effect.match({
          onFailure: (error): BroadcastOutcome => ({ name: agent.name, ok: false, error: errorView(error) }),
          onSuccess: (r): BroadcastOutcome => ({
            name: agent.name,
            ok: true,
            turnId: r.turnId,
            text: r.text,
            costUsd: r.costUsd
          })
        })
      ), { concurrency: "unbounded" })
  })

  const reports = Effect.fn("Flotta.reports")(function*(query: ReportQuery = {}) {
    return yield* reportLog.reports(query)
  })
  /** A live feed of the report log, subscribed once this effect has run (see ReportLog.subscribe). */
  const subscribe = (options: SubscribeOptions = {}) => reportLog.subscribe(options)
  const stream = (options: SubscribeOptions = {}) => reportLog.stream(options)
  /**
   * One live agent's feed: its turns as they happen (text, tool calls and their results, a streaming agent's
   * words) and the rest of its report entries, from now on; AgentNotFound for a name that is not live.
   */
  const follow = (name: string, options: Omit<SubscribeOptions, "agent"> = {}) =>
    Effect.zipRight(registry.get(name), reportLog.subscribe({ ...options, agent: name }))

  /** Pending approvals, oldest first (with `all`, also the ones that ended lately). */
  const approvals = (query: ApprovalQuery = {}) => approvalBook.approvals(query)
  /** A human's decision on a pending approval: the waiting tool call goes on, or is denied. */
  const decide = Effect.fn("Flotta.decide")(function*(id: string, decision: ApprovalDecision) {
    return yield* approvalBook.decide(id, decision)
  })

  /** Starts a validated fleet's sessions (at once, admitted a few at a time) and keeps its run templates. */
  const bootFleet = Effect.fn("Flotta.bootFleet")(function*(fleet: Spec.Fleet) {
    yield* runs.addTemplates(fleet.templates)
    for (const rejected of fleet.rejected) {
      yield* Effect.logWarning(`config entry skipped: ${rejected.path}: ${rejected.message}`)
    }
    const outcomes = yield* Effect.forEach(
      fleet.sessions,
      (spec) => Effect.either(registry.spawn(spec.name, specOptions(spec))),
      { concurrency: "unbounded" }
    )
    const started: Array<string> = []
    const failed: Array<BootReport["failed"][number]> = []
    outcomes.forEach((outcome, i) => {
      const name = fleet.sessions[i]!.name
      if (outcome._tag === "Right") started.push(name)
      else failed.push({ name, error: errorView(outcome.left) })
    })
    return {
      started,
      templates: fleet.templates.map((t) => t.name),
      rejected: fleet.rejected,
      failed
    } satisfies BootReport
  })

  /** Validates a declarative fleet (`{ fleetDefaults, agents }`, as in a config file) and boots it. */
  /** Spend in a window, by agent, run, model, day, hour or any label (`label:team`; see `Costs`). */
  const costs = Effect.fn("Flotta.costs")(function*(query: Costs.CostQuery = {}) {
    return yield* store.costs(yield* Costs.windowOf(query))
  })

  const boot = Effect.fn("Flotta.boot")(function*(config: unknown) {
    return yield* bootFleet(Spec.readFleet(config))
  })

  const shape: FlottaShape = {
    /** What came back from the store when the fleet started (nothing, for a new store). */
    restored,
    /** The store's kind, place, size, schema version and health. */
    store: store.info,
    spawn,
    fork,
    ask,
    askResult,
    prompt,
    wait,
    watch,
    status,
    result,
    transcript,
    info,
    list,
    costs,
    interrupt,
    compact,
    clear,
    hibernate,
    wake,
    /** Live claude processes now, and the most there may be (`maxLive`). */
    processes: registry.processes,
    close,
    label,
    unpark,
    parking,
    broadcast,
    reports,
    subscribe,
    stream,
    follow,
    approvals,
    decide,
    /** Each new pending approval, live, from the moment the stream runs. */
    approvalRequests: approvalBook.requests,
    /** The same, subscribed once this (scoped) effect has run. */
    subscribeApprovals: approvalBook.subscribe,
    boot,
    bootFleet,
    template: runs.template,
    run: runs.run,
    runAsync: runs.runAsync,
    runResult: runs.runResult,
    awaitRun: runs.awaitRun,
    /** The async runs and verifies, running and finished, newest first (`{ state, limit }` narrow it). */
    runs: runs.runs,
    verify: runs.verify,
    verifyAsync: runs.verifyAsync,
    worktrees: runs.worktrees,
    gcWorktrees: runs.gcWorktrees,
    /** What a run in a worktree changed against the commit it started from (kept after gc); NoDiff without one. */
    diff: runs.diff
  }
  return shape
})

/** The service: `FlottaShape` over the engine (`Flotta.make(shape)` makes another, a cluster's say). */
export class Flotta extends Effect.Service<Flotta>()("@flotta/core/Flotta", { effect: make }) {}

export interface FleetOptions extends FleetSettingsInput {
  /** A custom executable (a wrapper script, or a fake CLI in tests); overrides `claudePath`. */
  readonly executable?: Pick<ClaudeExecutable, "command" | "prefixArgs">
  /** Where state lives (default: memory, for the life of the fleet). */
  readonly store?: StoreConfig.StoreConfig
  readonly storeOptions?: StoreOptions
}

/**
 * The engine's services over a process seam (`ClaudeCli`), a `Store` and the repository seam (`Git`, by default
 * git on this machine): Flotta, Runs, RunRecords, Registry, Permission,
 * Approvals, ReportLog and the Store, with `pending` deciding what a policy leaves open (by default a human,
 * through `Approvals`). `layer` puts the real CLI below it; `@flotta/core/Testing` an in-memory one. Give the
 * same store to a second build to show a restart.
 */
export const services = <E, R, SE = never, GR = CommandExecutor | FileSystem>(
  cli: Layer.Layer<ClaudeCli, E, R>,
  settings: FleetSettingsInput = {},
  pending: Layer.Layer<PendingDecisions, never, Approvals> = Approvals.pendingDecisions,
  store: Layer.Layer<Store, SE> = Store.memory,
  git: Layer.Layer<Git, never, GR> = Git.live as Layer.Layer<Git, never, GR>
) =>
  // With the seam the packages above mount their routes and panels through (`Http.Contributions`).
  Layer.mergeAll(Flotta.Default, RunRecords.Default, Http.Contributions.layer).pipe(
    Layer.provideMerge(Runs.Default),
    Layer.provide(git),
    Layer.provideMerge(Registry.Default),
    Layer.provideMerge(Parking.Default),
    Layer.provideMerge(Permission.Default),
    Layer.provide(pending),
    Layer.provideMerge(Approvals.Default),
    Layer.provideMerge(ReportLog.Default),
    Layer.provideMerge(store),
    Layer.provide(FleetConfig.layer(settings)),
    Layer.provide(cli)
  )

/**
 * The whole engine as one Layer, over the real claude CLI (or `options.executable`). It needs the platform's
 * services: provide them at the edge (`Layer.provide(NodeContext.layer)` on Node).
 */
export const layer = (options: FleetOptions = {}) => {
  const { executable, store, storeOptions, ...settings } = options
  const cli = executable === undefined
    ? ClaudeCli.layer(settings.claudePath)
    : ClaudeCli.layerCommand(executable.command, executable.prefixArgs)
  return services(cli, settings, Approvals.pendingDecisions, StoreConfig.layer(store, storeOptions))
}
