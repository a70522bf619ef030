/**
 * Name → agent. Names are unique among live agents (a name is reserved while its agent starts), each agent
 * lives in its own scope under the fleet's, and starts are admitted a few at a time. Closing the registry's
 * scope closes every agent: children never outlive the fleet.
 */
import { Cause, Clock, Deferred, Effect, Either, ExecutionStrategy, Exit, FiberId, Metric, Option, Scope } from "effect"
import * as Agent from "./Agent.js"
import { NAME_PATTERN, NAME_RULE } from "./AgentView.js"
import type { ForkOrigin } from "./AgentView.js"
import { ClaudeCli } from "./ClaudeCli.js"
import { AgentAlreadyExists, AgentClosed, AgentNotFound, InvalidName, InvalidSpec } from "./Errors.js"
import type { CannotHibernate, SandboxUnavailable, SpawnFailed, StoreUnavailable } from "./Errors.js"
import { FleetConfig } from "./FleetConfig.js"
import * as Admission from "./internal/admission.js"
import type { AgentDeps, Restored } from "./internal/agentState.js"
import * as Alarms from "./internal/alarms.js"
import * as Budget from "./internal/budget.js"
import * as ClosedAgent from "./internal/closedAgent.js"
import * as Dormant from "./internal/dormant.js"
import * as LiveSlots from "./internal/liveSlots.js"
import { startAgent } from "./internal/startAgent.js"
import * as TurnRecords from "./internal/turnRecord.js"
import { Parking } from "./Parking.js"
import { Permission } from "./Permission.js"
import { ReportLog } from "./ReportLog.js"
import * as Sandbox from "./Sandbox.js"
import { ownTurns, Store } from "./Store.js"
import * as Telemetry from "./Telemetry.js"

export { NAME_PATTERN } from "./AgentView.js"

/** Agent and run names: lower-case, 1 to 63 characters, usable as a directory and a branch name. */
export const validateName = Effect.fnUntraced(function*(name: unknown) {
  if (typeof name !== "string") return yield* new InvalidName({ name: String(name), reason: "a name must be a string" })
  if (!NAME_PATTERN.test(name)) {
    return yield* new InvalidName({
      name,
      reason: `use ${NAME_RULE}`
    })
  }
  return yield* Effect.succeed(name)
})

/**
 * A name's entry: an agent starting, one live (its own scope, maybe asleep with no process), one kept as its record
 * while it hibernates (`Dormant`), or one being brought back from that record.
 */
type Entry =
  | { readonly _tag: "Starting" }
  | {
    readonly _tag: "Live"
    readonly agent: Agent.Agent
    readonly scope: Scope.CloseableScope
    /** Its record, once it sleeps (see `agentHandle.Made`). */
    readonly dormancy: () => Option.Option<Dormant.Dormant>
  }
  | { readonly _tag: "Dormant"; readonly dormant: Dormant.Dormant }
  | {
    readonly _tag: "Reviving"
    readonly dormant: Dormant.Dormant
    readonly done: Deferred.Deferred<Agent.Agent, AgentClosed | StoreUnavailable>
  }

export class Registry extends Effect.Service<Registry>()("@flotta/core/Registry", {
  scoped: Effect.gen(function*() {
    const settings = yield* FleetConfig
    const cli = yield* ClaudeCli
    const permission = yield* Permission
    const reports = yield* ReportLog
    // Agents live in a scope made before the registry's finalizer, so that finalizer runs first on shutdown:
    // it raises `shuttingDown` before any agent's scope starts closing.
    const agentsScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.parallel)
    const admit = yield* Admission.make(settings.maxConcurrentStarts)
    const entries = new Map<string, Entry>()
    /** Set when the fleet closes: no new agent may start, and one that finishes starting is stopped. */
    let shuttingDown = false
    const shutDownError = (name: string) => new AgentClosed({ name, reason: "the fleet is shutting down" })

    const updateGauge = Effect.suspend(() => Metric.set(Telemetry.agentsLive, entries.size))

    const liveNames = () => [...entries.entries()].filter(([, e]) => e._tag !== "Starting").map(([n]) => n).sort()

    const journal = { on: true }
    const liveSlots = yield* LiveSlots.make(settings.maxLive)
    const store = yield* Store
    const deps: AgentDeps = {
      cli,
      alarms: yield* Alarms.make,
      permission,
      reports,
      settings,
      startPermit: admit,
      liveSlots,
      sleep: (name, reason) => sleep(name, reason),
      revive: (name) => revive(name),
      store,
      parking: yield* Parking,
      journal
    }

    // The fleet's own span name (like flotta.turn, flotta.run): a child started here gets it as its TRACEPARENT.
    const spawn = Effect.fn("flotta.spawn")(function*(
      name: string,
      given: Agent.AgentOptions = {},
      restored?: Restored,
      fork?: ForkOrigin
    ) {
      yield* Effect.annotateCurrentSpan({ "flotta.agent": name, "flotta.restored": restored !== undefined })
      yield* validateName(name)
      // Its sandbox checked, and its paths made absolute: what the agent keeps and stores.
      const options = yield* Either.mapLeft(Sandbox.withOptions(given), (bad) => new InvalidSpec(bad))
      const threshold = options.autoCompactAt
      if (threshold !== undefined && !(typeof threshold === "number" && threshold > 0 && threshold <= 100)) {
        return yield* new InvalidSpec({
          path: "autoCompactAt",
          reason: "a percentage of the context window: above 0, at most 100"
        })
      }
      const badBudget = Budget.invalid(options)
      if (badBudget !== undefined) return yield* badBudget
      if (shuttingDown) return yield* shutDownError(name)
      if (entries.has(name)) return yield* new AgentAlreadyExists({ name })
      // A sleeper brought back by a restart of the host stays a record until it is woken.
      if (restored?.row.status === "hibernated" && restored.turns.every((t) => t.record.status !== "queued")) {
        const dormant = { info: Dormant.infoOf(restored.row, restored.turns), options, row: restored.row }
        entries.set(name, { _tag: "Dormant", dormant })
        yield* updateGauge
        return dormantFace(name, dormant)
      }
      entries.set(name, { _tag: "Starting" })
      const scope = yield* Scope.fork(agentsScope, ExecutionStrategy.sequential)
      const { agent, dormancy } = yield* startAgent(name, options, deps, restored, fork).pipe(
        Scope.extend(scope),
        Effect.tapErrorCause(() =>
          Effect.zipRight(Scope.close(scope, Exit.void), Effect.sync(() => entries.delete(name)))
        ),
        Effect.onInterrupt(() =>
          Effect.zipRight(Scope.close(scope, Exit.void), Effect.sync(() => entries.delete(name)))
        )
      )
      const entry = { _tag: "Live", agent, scope, dormancy } as const
      entries.set(name, entry)
      if (shuttingDown) {
        yield* stop(name, entry, "the fleet shut down while it started")
        return yield* shutDownError(name)
      }
      yield* updateGauge
      return agent
    }) as (name: string, options?: Agent.AgentOptions, restored?: Restored, fork?: ForkOrigin) => Effect.Effect<
      Agent.Agent,
      InvalidName | InvalidSpec | AgentAlreadyExists | SpawnFailed | SandboxUnavailable | AgentClosed | StoreUnavailable
    >

    /** The face of a sleeper kept as its record (see `internal/dormant`). */
    const dormantFace = (name: string, dormant: Dormant.Dormant) =>
      Dormant.handle(dormant, { store, historyLimit: settings.historyLimit, revive: revive(name) })

    /** No live agent of that name: one starting is not found yet; one the store has closed is said to be closed. */
    const missing = (name: string): Effect.Effect<never, AgentNotFound | StoreUnavailable> =>
      entries.has(name)
        ? new AgentNotFound({ name, live: liveNames() })
        : ClosedAgent.notFound(store, name, liveNames())

    const get = (name: string): Effect.Effect<Agent.Agent, AgentNotFound | StoreUnavailable> =>
      Effect.suspend(() => {
        const entry = entries.get(name)
        if (entry?._tag === "Live") return Effect.succeed(entry.agent)
        if (entry?._tag === "Dormant" || entry?._tag === "Reviving") {
          return Effect.succeed(dormantFace(name, entry.dormant))
        }
        return missing(name)
      })

    /**
     * What can be read of an agent by name: a live one (or a sleeper), else the closed one the store still has
     * (its info and transcript, read from its record); AgentNotFound for a name neither has.
     */
    const readable = (
      name: string
    ): Effect.Effect<Pick<Agent.Agent, "info" | "transcript">, AgentNotFound | StoreUnavailable> =>
      Effect.suspend((): Effect.Effect<Pick<Agent.Agent, "info" | "transcript">, AgentNotFound | StoreUnavailable> => {
        if (entries.has(name)) return get(name)
        return Effect.flatMap(
          ClosedAgent.read(store, name, settings.historyLimit),
          (closed) =>
            Option.isNone(closed)
              ? new AgentNotFound({ name, live: liveNames() })
              : Effect.succeed({
                info: Effect.succeed(closed.value.info),
                transcript: Effect.succeed(closed.value.transcript)
              })
        )
      })

    /**
     * A sleeper kept as its record comes back as a live agent, asleep with no process until it is woken (as a
     * restart of the host would bring it back): its turns are read from the store. Callers at the same moment
     * share one revival.
     */
    const revive = (name: string): Effect.Effect<Agent.Agent, AgentClosed | StoreUnavailable> =>
      Effect.suspend(() => {
        const entry = entries.get(name)
        if (entry?._tag === "Live") return Effect.succeed(entry.agent)
        if (entry?._tag === "Reviving") return Deferred.await(entry.done)
        if (entry?._tag !== "Dormant") return new AgentClosed({ name, reason: "it was closed while it slept" })
        if (shuttingDown) return shutDownError(name)
        const done = Deferred.unsafeMake<Agent.Agent, AgentClosed | StoreUnavailable>(FiberId.none)
        entries.set(name, { _tag: "Reviving", dormant: entry.dormant, done })
        return Effect.gen(function*() {
          const scope = yield* Scope.fork(agentsScope, ExecutionStrategy.sequential)
          const turns = ownTurns(entry.dormant.row, yield* store.turns(name))
          const { agent, dormancy } = yield* startAgent(name, entry.dormant.options, deps, {
            row: entry.dormant.row,
            turns
          }).pipe(
            Scope.extend(scope),
            // Asleep, it starts no process: only its store can fail it, anything else is a bug.
            Effect.catchTags({ SpawnFailed: Effect.die, SandboxUnavailable: Effect.die })
          )
          entries.set(name, { _tag: "Live", agent, scope, dormancy })
          yield* Deferred.succeed(done, agent)
          return agent
        }).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => {
              entries.set(name, entry)
              // Those waiting on the same revival learn why: the store, or it could not be woken.
              const failed = Cause.failureOption(exit.cause)
              Deferred.unsafeDone(
                done,
                Exit.fail(
                  Option.isSome(failed) && failed.value._tag === "StoreUnavailable"
                    ? failed.value
                    : new AgentClosed({ name, reason: "it could not be woken" })
                )
              )
            })
          )
        )
      })

    /**
     * Puts a live session to sleep: its process ends cleanly (the call returns once it has), and the registry
     * keeps nothing of it but its record; its scope closes behind. False when it was asleep already.
     */
    const sleep = (
      name: string,
      reason: string
    ): Effect.Effect<boolean, CannotHibernate | AgentNotFound | StoreUnavailable> =>
      Effect.gen(function*() {
        const entry = entries.get(name)
        if (entry?._tag === "Dormant" || entry?._tag === "Reviving") return false
        if (entry?._tag !== "Live") return yield* missing(name)
        const hibernated = yield* entry.agent.hibernate(reason)
        // Still the same agent, asleep with nothing on its way: it becomes its record.
        const dormant = entries.get(name) === entry ? entry.dormancy() : Option.none()
        if (Option.isSome(dormant)) {
          entries.set(name, { _tag: "Dormant", dormant: dormant.value })
          yield* Effect.forkIn(Scope.close(entry.scope, Exit.void), agentsScope)
        }
        return hibernated
      })

    /**
     * Stops an agent: its turns fail with AgentClosed, its name is free, and its child is stopped. With
     * `wait: false` the child's exit (EOF, SIGTERM, SIGKILL) finishes in the background, still within the fleet's
     * scope, so a run returns its answer without waiting for its process to exit.
     */
    const stop = (name: string, entry: Entry & { readonly _tag: "Live" }, reason: string, wait = true) =>
      Effect.gen(function*() {
        const wasClosed = (yield* entry.agent.status).status === "closed"
        yield* entry.agent.shutdown(reason)
        const stopChild = Scope.close(entry.scope, Exit.void)
        if (wait) yield* stopChild
        else yield* Effect.forkIn(stopChild, agentsScope)
        if (entries.get(name) === entry) entries.delete(name)
        // A fleet that stops leaves its agents to the next start over the same store: they are stopped, not closed.
        if (!wasClosed) yield* reports.post(name, journal.on ? "closed" : "stopped", { reason })
        yield* updateGauge
      })

    /** Closes one agent: its turns fail with AgentClosed, its child gets EOF, SIGTERM, then SIGKILL. */
    const close = Effect.fn("Registry.close")(function*(
      name: string,
      reason = "closed by request",
      options: { readonly wait?: boolean } = {}
    ) {
      const entry = entries.get(name)
      if (entry?._tag === "Reviving") yield* Deferred.await(entry.done).pipe(Effect.ignore)
      const now = entries.get(name)
      if (now?._tag === "Dormant") {
        // A sleeper has no process to stop: its record says closed, and its name is free.
        entries.delete(name)
        const closedAt = TurnRecords.iso(yield* Clock.currentTimeMillis)
        store.saveAgent({ ...now.dormant.row, status: "closed", closedReason: reason, closedAt })
        yield* reports.post(name, "closed", { reason })
        return yield* updateGauge
      }
      if (now?._tag !== "Live") return yield* missing(name)
      yield* stop(name, now, reason, options.wait ?? true)
    })

    const list = Effect.suspend(() =>
      Effect.forEach(
        [...entries.values()],
        (e) =>
          e._tag === "Live"
            ? Effect.map(e.agent.info, (info) => [info])
            : Effect.succeed(e._tag === "Starting" ? [] : [e.dormant.info])
      ).pipe(Effect.map((infos) => infos.flat()))
    )

    const agents = Effect.sync(() =>
      [...entries.entries()].flatMap(([name, e]) =>
        e._tag === "Live" ? [e.agent] : e._tag === "Starting" ? [] : [dormantFace(name, e.dormant)]
      )
    )

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        shuttingDown = true
        // What shutting down does to the agents is not their state: a restart brings them back as they were.
        journal.on = false
        return Effect.forEach(
          [...entries.entries()],
          ([name, entry]) => (entry._tag === "Live" ? stop(name, entry, "the fleet shut down") : Effect.void),
          { concurrency: "unbounded", discard: true }
        )
      })
    )

    return {
      spawn,
      get,
      readable,
      /** Puts a session to sleep (see `sleep`): false when it was asleep already. */
      hibernate: (name: string) => sleep(name, "by request"),
      close,
      list,
      agents,
      liveNames: Effect.sync(liveNames),
      /** Live claude processes now (or starting), and the most there may be (`maxLive`). */
      processes: Effect.sync(() => ({ live: liveSlots.live(), max: liveSlots.max }))
    } as const
  })
}) {}
