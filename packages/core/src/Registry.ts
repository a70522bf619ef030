/**
 * Name → agent. Names are unique among live agents (a name is reserved while its agent starts), each agent
 * lives in its own scope under the fleet's, and starts are admitted a few at a time. Closing the registry's
 * scope closes every agent: children never outlive the fleet.
 */
import { Effect, Either, ExecutionStrategy, Exit, Metric, Scope } from "effect"
import * as Agent from "./Agent.js"
import { NAME_PATTERN, NAME_RULE } from "./AgentView.js"
import type { ForkOrigin } from "./AgentView.js"
import { ClaudeCli } from "./ClaudeCli.js"
import { AgentAlreadyExists, AgentClosed, AgentNotFound, InvalidName, InvalidSpec } from "./Errors.js"
import type { SandboxUnavailable, SpawnFailed } from "./Errors.js"
import { FleetConfig } from "./FleetConfig.js"
import * as Admission from "./internal/admission.js"
import type { AgentDeps, Restored } from "./internal/agentState.js"
import * as Alarms from "./internal/alarms.js"
import * as LiveSlots from "./internal/liveSlots.js"
import { startAgent } from "./internal/startAgent.js"
import { Parking } from "./Parking.js"
import { Permission } from "./Permission.js"
import { ReportLog } from "./ReportLog.js"
import * as Sandbox from "./Sandbox.js"
import { Store } from "./Store.js"
import * as Telemetry from "./Telemetry.js"

export { NAME_PATTERN } from "./AgentView.js"

/** Agent and run names: lower-case, 1 to 63 characters, usable as a directory and a branch name. */
export const validateName = (name: unknown): Effect.Effect<string, InvalidName> => {
  if (typeof name !== "string") return new InvalidName({ name: String(name), reason: "a name must be a string" })
  if (!NAME_PATTERN.test(name)) {
    return new InvalidName({
      name,
      reason: `use ${NAME_RULE}`
    })
  }
  return Effect.succeed(name)
}

type Entry =
  | { readonly _tag: "Starting" }
  | { readonly _tag: "Live"; readonly agent: Agent.Agent; readonly scope: Scope.CloseableScope }

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

    const liveNames = () => [...entries.entries()].filter(([, e]) => e._tag === "Live").map(([n]) => n).sort()

    const journal = { on: true }
    const liveSlots = yield* LiveSlots.make(settings.maxLive)
    const deps: AgentDeps = {
      cli,
      alarms: yield* Alarms.make,
      permission,
      reports,
      settings,
      startPermit: admit,
      liveSlots,
      store: yield* Store,
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
      if (shuttingDown) return yield* shutDownError(name)
      if (entries.has(name)) return yield* new AgentAlreadyExists({ name })
      entries.set(name, { _tag: "Starting" })
      const scope = yield* Scope.fork(agentsScope, ExecutionStrategy.sequential)
      const agent = yield* startAgent(name, options, deps, restored, fork).pipe(
        Scope.extend(scope),
        Effect.tapErrorCause(() =>
          Effect.zipRight(Scope.close(scope, Exit.void), Effect.sync(() => entries.delete(name)))
        ),
        Effect.onInterrupt(() =>
          Effect.zipRight(Scope.close(scope, Exit.void), Effect.sync(() => entries.delete(name)))
        )
      )
      const entry = { _tag: "Live", agent, scope } as const
      entries.set(name, entry)
      if (shuttingDown) {
        yield* stop(name, entry, "the fleet shut down while it started")
        return yield* shutDownError(name)
      }
      yield* updateGauge
      return agent
    }) as (name: string, options?: Agent.AgentOptions, restored?: Restored, fork?: ForkOrigin) => Effect.Effect<
      Agent.Agent,
      InvalidName | InvalidSpec | AgentAlreadyExists | SpawnFailed | SandboxUnavailable | AgentClosed
    >

    const get = (name: string): Effect.Effect<Agent.Agent, AgentNotFound> =>
      Effect.suspend(() => {
        const entry = entries.get(name)
        return entry?._tag === "Live" ? Effect.succeed(entry.agent) : new AgentNotFound({ name, live: liveNames() })
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
      if (entry?._tag !== "Live") return yield* new AgentNotFound({ name, live: liveNames() })
      yield* stop(name, entry, reason, options.wait ?? true)
    })

    const list = Effect.suspend(() =>
      Effect.forEach(
        [...entries.values()].flatMap((e) => (e._tag === "Live" ? [e.agent] : [])),
        (agent) => agent.info
      )
    )

    const agents = Effect.sync(() => [...entries.values()].flatMap((e) => (e._tag === "Live" ? [e.agent] : [])))

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
      close,
      list,
      agents,
      liveNames: Effect.sync(liveNames),
      /** Live claude processes now (or starting), and the most there may be (`maxLive`). */
      processes: Effect.sync(() => ({ live: liveSlots.live(), max: liveSlots.max }))
    } as const
  })
}) {}
