/**
 * One fleet over several hosts. `Cluster.layer(section)` sits on a host's engine and replaces its `Flotta` with a
 * fleet-wide one: an operation on an agent goes to the host that runs it (the `Agent` entity whose id names that
 * host), `list`, `broadcast`, approvals and `runs` span every live host (a run's outcome and diff are found on the
 * host that started it, a closed agent's info and transcript on the host that closed it), and the report log is
 * the cluster store's, where every host copies its own entries. Names of agents are unique across the cluster.
 *
 * A host whose lease lapses is dead: the live hosts move its agents, each of which starts again on its new host
 * with `--resume` from the conversation mirrored into the store, and the turns that were in flight there end with
 * `HostLost` (see Hosting and Membership).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import type { FileSystem } from "@effect/platform/FileSystem"
import { hasLabels, type ListQuery } from "@flotta/core/AgentOptions"
import { errorView } from "@flotta/core/AgentView"
import type { ApprovalDecision, ApprovalQuery } from "@flotta/core/Approvals"
import * as Client from "@flotta/core/Client"
import * as Costs from "@flotta/core/Costs"
import { AgentNotFound } from "@flotta/core/Errors"
import type { RunNotFound } from "@flotta/core/Errors"
import type { StoreUnavailable } from "@flotta/core/Errors"
import * as Flottas from "@flotta/core/Flotta"
import { Flotta } from "@flotta/core/Flotta"
import type { AskOptions, BootReport, FlottaShape } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import type { Registry } from "@flotta/core/Registry"
import type { ReportLog, SubscribeOptions } from "@flotta/core/ReportLog"
import type { RunQuery } from "@flotta/core/RunList"
import { selectRuns } from "@flotta/core/RunList"
import * as Spec from "@flotta/core/Spec"
import { Cause, Clock, Context, Effect, Either, Layer, Option, Predicate, Stream, SubscriptionRef } from "effect"
import { randomUUID } from "node:crypto"
import * as ClosedAgents from "./ClosedAgents.js"
import * as ClusterConfig from "./ClusterConfig.js"
import type { ClusterConfigInput, ClusterSettings } from "./ClusterConfig.js"
import { ClusterStore } from "./ClusterStore.js"
import * as Entities from "./Entities.js"
import * as FleetLog from "./FleetLog.js"
import { Hosting, withHost } from "./Hosting.js"
import * as Housekeeping from "./Housekeeping.js"
import { Membership } from "./Membership.js"
import * as Protocol from "./Protocol.js"
import { HostLost } from "./Protocol.js"
import * as Runner from "./Runner.js"
import * as Starts from "./Starts.js"

export interface HostView {
  readonly host: string
  readonly live: boolean
  /** Milliseconds since it last renewed its lease. */
  readonly age: number
  readonly agents: number
}

/** This node's place in the cluster. */
export class Cluster extends Context.Tag("@flotta/cluster/Cluster")<Cluster, {
  readonly host: string
  /** The cluster store, described without credentials. */
  readonly store: string
  /** Every host the store knows, live or not, with how many agents are placed on it. */
  readonly hosts: Effect.Effect<ReadonlyArray<HostView>, StoreUnavailable>
}>() {}

export interface LayerOptions {
  /** Where a relative SQLite path is taken from (the config file's directory). */
  readonly baseDir?: string
  /** The children's extra environment, as given to the engine: where their CLI keeps its session files. */
  readonly env?: Readonly<Record<string, string>>
}

/** The cluster over a host's engine (its `Flotta`, `Registry` and `ReportLog`); `Layer.empty` without a section. */
export const layer = (
  input: ClusterConfigInput | undefined,
  options: LayerOptions = {}
): Layer.Layer<
  Flotta | Cluster,
  ClusterConfig.ClusterConfigError | StoreUnavailable,
  Flotta | Registry | ReportLog | FileSystem
> =>
  input === undefined
    ? Layer.empty as never
    : Layer.unwrapEffect(
      Effect.map(
        ClusterConfig.make(input, options.baseDir === undefined ? {} : { baseDir: options.baseDir }),
        (settings) => fromSettings(settings, options.env ?? {})
      )
    )

const fromSettings = (settings: ClusterSettings, env: Readonly<Record<string, string>>) => {
  const node = Hosting.layer(env).pipe(
    Layer.provideMerge(Membership.layer(settings)),
    Layer.provideMerge(ClusterStore.layer(settings.store))
  )
  const runner = Layer.provideMerge(Runner.layer(settings), node)
  return Layer.scopedContext(fleet(settings)).pipe(Layer.provide(Entities.layer), Layer.provide(runner))
}

const isRunNotFound = <E>(error: E): error is Extract<E, RunNotFound> => Predicate.isTagged(error, "RunNotFound")

const fleet = (settings: ClusterSettings) =>
  Effect.gen(function*() {
    const h = yield* Hosting
    const { local, store, membership } = h
    const me = settings.host
    const agentClient = yield* Protocol.AgentEntity.client
    const hostClient = yield* Protocol.HostEntity.client
    /** The live hosts as the store has them now (one that joined since this node's last look included). */
    const liveNow = Effect.map(
      store.hosts,
      (rows) => rows.filter((r) => r.age <= settings.leaseMs || r.host === me)
    )

    /** Fails with HostLost once `host` no longer runs, live, the incarnation it runs now. */
    const lost = (host: string, name: string) =>
      Effect.gen(function*() {
        const since = yield* Clock.currentTimeMillis
        const known = (yield* SubscriptionRef.get(membership.live)).hosts.get(host)
        const incarnation = known ?? (yield* liveNow).find((r) => r.host === host)?.incarnation
        if (incarnation !== undefined) {
          yield* membership.live.changes.pipe(
            // A host this node has not seen yet is lost only once a look taken after this call misses it.
            Stream.filter(({ at, hosts }) => hosts.has(host) ? hosts.get(host) !== incarnation : at > since),
            Stream.take(1),
            Stream.runDrain
          )
        }
        return yield* new HostLost({ name, host })
      })

    /** A call to another host, which ends with HostLost if that host dies under it. */
    const remote = <A, E>(
      host: string,
      name: string,
      call: Effect.Effect<A, E>
    ): Effect.Effect<A, Protocol.Reached<E> | HostLost | StoreUnavailable> =>
      Effect.raceFirst(
        // A call that could not reach its host, or whose host went away under it: the host is lost to it.
        Effect.catchIf(call, Protocol.unreachable, () => new HostLost({ name, host })),
        lost(host, name)
      ).pipe(
        // The host stopped under the call (its entities are interrupted as it shuts down): not this caller's doing.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? new HostLost({ name, host }) : Effect.failCause(cause)
        )
      )

    /** An operation on one agent: here when it lives here, else on its host. */
    const onAgent = <A, E, E2>(
      name: string,
      here: Effect.Effect<A, E>,
      there: (client: ReturnType<typeof agentClient>) => Effect.Effect<A, E2>
    ) =>
      Effect.gen(function*() {
        const placement = yield* store.placement(name)
        if (Option.isNone(placement)) {
          return yield* new AgentNotFound({ name, live: (yield* store.placements).map((p) => p.name) })
        }
        const host = placement.value.host
        if (host === me) return yield* h.whenReady(name, here)
        return yield* remote(host, name, there(agentClient(Protocol.agentId(host, name))))
      })

    const { fork, spawn } = Starts.make({ h, liveNow, remote, agentClient })
    const closed = ClosedAgents.make({ h, liveNow, remote, agentClient })

    /** An operation on one agent, from the table: the agent's host runs the engine's method of the same name. */
    const forwarded = Operations.implement(Protocol.agentOps, (name, op) => (...args) => {
      const input = op.encode(...args)
      const agent = op.agent(input)
      const here = Operations.invoke(local, name, input)
      if (agent === undefined) return here
      return onAgent(agent, here, (c) => Protocol.callAgent(c, name, input, randomUUID()))
    })
    const callId = () => randomUUID()

    /** Every live host's answer (this one's directly); a host that does not answer is left out. */
    const everyHost = <A, E, E2>(
      here: Effect.Effect<A, E>,
      there: (client: ReturnType<typeof hostClient>) => Effect.Effect<A, E2>
    ) =>
      Effect.gen(function*() {
        const hosts = (yield* liveNow).map((r) => r.host)
        const answers = yield* Effect.forEach(
          hosts,
          (host) => host === me ? Effect.option(here) : Effect.option(remote(host, host, there(hostClient(host)))),
          { concurrency: "unbounded" }
        )
        return answers.flatMap((a) => (Option.isSome(a) ? [a.value] : []))
      })

    // Every host's whole list, filtered here: the query never has to cross the wire.
    const list = (query: ListQuery = {}) =>
      everyHost(
        Effect.map(local.list(), (infos) => infos.map(withHost(me))),
        (c) => c.list({ input: {}, callId: callId() })
      ).pipe(
        Effect.map((lists) =>
          lists.flat().filter((i) => hasLabels(i.labels, query.labels)).sort((a, b) => a.name.localeCompare(b.name))
        )
      )

    const broadcast = (text: string, options: AskOptions = {}) =>
      everyHost(
        local.broadcast(text, options),
        (c) => c.broadcast({ input: Operations.operations.broadcast.encode(text, options), callId: callId() })
      ).pipe(Effect.map((lists) => lists.flat()))

    const approvals = (query: ApprovalQuery = {}) =>
      everyHost(local.approvals(query), (c) => c.approvals({ input: { query }, callId: callId() })).pipe(
        Effect.map((lists) => lists.flat())
      )

    const decide = (id: string, decision: ApprovalDecision) =>
      local.decide(id, decision).pipe(
        Effect.catchTag("ApprovalNotFound", (notHere) =>
          Effect.gen(function*() {
            for (const { host } of yield* liveNow) {
              if (host === me) continue
              const answer = yield* Effect.either(
                remote(host, host, hostClient(host).decide({ input: { id, decision }, callId: callId() }))
              )
              if (Either.isRight(answer)) return answer.right
            }
            return yield* notHere
          }))
      )

    // Async runs live on the host that started them: the list spans every live host, and a run this host does
    // not know is looked for on the others.
    const runs = (query: RunQuery = {}) =>
      everyHost(
        Effect.map(local.runs(query), (views) => views.map((view) => ({ ...view, host: me }))),
        (c) => c.runs({ input: { query }, callId: callId() })
      ).pipe(Effect.map((lists) => selectRuns(lists.flat(), query)))

    /** A run's outcome from whichever live host knows it (RunNotFound when none does). */
    const onRunHost = <A, E, E2>(
      name: string,
      here: Effect.Effect<A, E>,
      there: (client: ReturnType<typeof hostClient>) => Effect.Effect<A, E2>
    ) =>
      here.pipe(
        Effect.catchIf(isRunNotFound, (notHere) =>
          Effect.gen(function*() {
            for (const { host } of yield* liveNow) {
              if (host === me) continue
              const answer = yield* Effect.either(remote(host, name, there(hostClient(host))))
              if (Either.isRight(answer)) return answer.right
              if (!isRunNotFound(answer.left)) return yield* Effect.fail(answer.left)
            }
            return yield* Effect.fail(notHere)
          }))
      )

    /** A config's sessions start on the node that boots them; its run templates stay there too. */
    const bootFleet = Effect.fn("Cluster.bootFleet")(
      function*(config: Spec.Fleet) {
        const templates = yield* local.bootFleet({ ...config, sessions: [] })
        // Every node may boot the same config: a session the cluster runs already (anywhere) is left as it is.
        const placed = new Set((yield* Effect.orElseSucceed(store.placements, () => [])).map((p) => p.name))
        const sessions = config.sessions.filter((spec) => !placed.has(spec.name))
        const outcomes = yield* Effect.forEach(
          sessions,
          (spec) => Effect.either(spawn(spec.name, { ...Flottas.specOptions(spec), host: me })),
          { concurrency: "unbounded" }
        )
        const started: Array<string> = []
        const failed: Array<BootReport["failed"][number]> = []
        outcomes.forEach((outcome, i) => {
          const name = sessions[i]!.name
          if (outcome._tag === "Right") started.push(name)
          else failed.push({ name, error: errorView(outcome.left) })
        })
        return { ...templates, started, failed } satisfies BootReport
      }
    )

    const log = FleetLog.make(store)

    const byName = (name: string) => ({ input: { name }, callId: callId() })
    // Every answer has the engine's own type (a remote one is decoded by its Schema), and every failure is one the
    // interface names: a remote call's own (its host unreachable, or gone) becomes HostLost in `remote`.
    const fleetWide: FlottaShape = {
      ...local,
      ...forwarded,
      spawn,
      fork,
      // A closed agent is read from the store of the host that closed it.
      transcript: (name: string) =>
        forwarded.transcript(name).pipe(
          Effect.catchTag("AgentNotFound", (missing) => closed.transcript(name, missing))
        ),
      info: (name: string) =>
        onAgent(
          name,
          Effect.map(local.info(name), withHost(me)),
          (c) => Protocol.callAgent(c, "info", { name }, callId())
        )
          .pipe(Effect.catchTag("AgentNotFound", (missing) => closed.info(name, missing))),
      close: (name: string) =>
        onAgent(name, h.closeHere(name), (c) => Protocol.callAgent(c, "close", { name }, callId())),
      list,
      broadcast,
      approvals,
      decide,
      runs,
      runResult: (name: string) => onRunHost(name, local.runResult(name), (c) => c.runResult(byName(name))),
      awaitRun: (name: string) => onRunHost(name, local.awaitRun(name), (c) => c.awaitRun(byName(name))),
      // A run's diff is kept by the host that ran it, like its outcome.
      diff: (name: string) => onRunHost(name, local.diff(name), (c) => c.diff(byName(name))),
      // Each host's store keeps its own agents' turns: the fleet's spend is every live host's, summed by key.
      costs: (query: Costs.CostQuery = {}) =>
        Effect.flatMap(Costs.windowOf(query), (window) =>
          everyHost(local.costs(Costs.queryOf(window)), (c) =>
            c.costs(window)).pipe(
              Effect.map((reports) => Costs.merge(reports, window))
            )),
      bootFleet,
      boot: (config: unknown) =>
        Effect.suspend(() => bootFleet(Spec.readFleet(config))),
      ...log,
      // An agent on any host, followed through the fleet-wide log (a streaming agent's words stay on its host).
      follow: (name: string, options: Omit<SubscribeOptions, "agent"> = {}) =>
        Effect.zipRight(forwarded.status(name), log.subscribe({ ...options, agent: name }))
    }

    yield* Effect.forkScoped(Housekeeping.run.pipe(Effect.provideService(Hosting, h)))

    const cluster = Cluster.of({
      host: me,
      store: store.location,
      hosts: Effect.gen(function*() {
        const rows = yield* store.hosts
        const placed = yield* store.placements
        return rows.map((row) => ({
          host: row.host,
          live: row.age <= settings.leaseMs,
          age: row.age,
          agents: placed.filter((p) => p.host === row.host).length
        }))
      })
    })
    return Context.make(Flotta, Flotta.make(fleetWide)).pipe(Context.add(Cluster, cluster))
  })

/**
 * The Promise facade (`createFleet` of `@flotta/core/Client`) for a node of a cluster: this node's engine, joined
 * to the cluster its `cluster` section names, driving the whole fleet.
 */
export const createFleet = <X extends Client.Extensions = Record<never, never>>(
  options: Client.CreateFleetOptions<X> & { readonly cluster: ClusterConfigInput; readonly baseDir?: string }
) => {
  const { baseDir, cluster, extensions, ...fleetOptions } = options
  const engine = layer(cluster, { env: fleetOptions.env ?? {}, ...(baseDir === undefined ? {} : { baseDir }) }).pipe(
    Layer.provideMerge(Flottas.layer(fleetOptions)),
    // The Promise API is an edge of its own: it provides the platform, as the cli does (and core's createFleet).
    Layer.provide(NodeContext.layer)
  )
  return Client.fromLayer(engine, extensions)
}
