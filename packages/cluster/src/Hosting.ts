/**
 * What a host does for the agents placed on it: it answers their entities from its own engine, starts and claims
 * them, and keeps house every quarter lease (renew the lease, stop copies that are no longer its own, move a dead
 * host's agents, take over what was moved here), copying its report entries and its agents' conversations into
 * the cluster store as they grow.
 */
import type { AgentInfo, AgentOptions } from "@flotta/core/Agent"
import type { ApprovalDecision, ApprovalQuery } from "@flotta/core/Approvals"
import { AgentClosed } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import type { AskOptions } from "@flotta/core/Flotta"
import { Registry } from "@flotta/core/Registry"
import { ReportLog } from "@flotta/core/ReportLog"
import type { RunQuery } from "@flotta/core/RunList"
import {
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  FiberId,
  FiberSet,
  Layer,
  Option,
  Ref,
  Schedule,
  Stream,
  SubscriptionRef
} from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { ClusterStore } from "./ClusterStore.js"
import type { Placement } from "./ClusterStore.js"
import { Membership, tickOf } from "./Membership.js"
import * as Protocol from "./Protocol.js"
import { HostLost } from "./Protocol.js"
import * as SessionMirror from "./SessionMirror.js"

export interface HostingShape {
  /** The engine below the cluster: this host's own agents. */
  readonly local: Flotta
  readonly registry: Registry
  readonly localLog: ReportLog
  readonly store: ClusterStore["Type"]
  readonly membership: Membership["Type"]
  /** Starting or taking over, not claimed yet: the fencing check leaves them alone. */
  readonly starting: Set<string>
  /** Being stopped here (moved away, or closed elsewhere). */
  readonly stopping: Set<string>
  /** Each local agent's own environment (where its CLI keeps its session files), and how much is mirrored. */
  readonly agents: Map<
    string,
    { readonly env: Readonly<Record<string, string>>; mirrored: { id: string; bytes: number } }
  >
  /** The children's environment the engine adds for every agent. */
  readonly childEnv: Readonly<Record<string, string>>
  /** Recent calls by id, and how each ended: a call delivered twice runs once. */
  readonly calls: Map<string, Deferred.Deferred<unknown, unknown>>
}

export class Hosting extends Context.Tag("@flotta/cluster/Hosting")<Hosting, HostingShape>() {
  static layer(childEnv: Readonly<Record<string, string>>) {
    return Layer.effect(
      Hosting,
      Effect.gen(function*() {
        return {
          local: yield* Flotta,
          registry: yield* Registry,
          localLog: yield* ReportLog,
          store: yield* ClusterStore,
          membership: yield* Membership,
          starting: new Set(),
          stopping: new Set(),
          agents: new Map(),
          childEnv,
          calls: new Map()
        } satisfies HostingShape
      })
    )
  }
}

export const withHost = (host: string) => (info: AgentInfo): AgentInfo => ({ ...info, host })

const timeoutOf = (ms: number | undefined): AskOptions => (ms === undefined ? {} : { timeout: Duration.millis(ms) })

/** Starts an agent placed on this host at `epoch`, then claims it; a lost claim (it moved meanwhile) stops it. */
export const startHere = (h: HostingShape, name: string, options: AgentOptions, epoch: number) =>
  Effect.gen(function*() {
    const me = h.membership.settings.host
    h.starting.add(name)
    const info = yield* h.local.spawn(name, options)
    h.agents.set(name, { env: options.env ?? {}, mirrored: { id: info.sessionId, bytes: 0 } })
    const incarnation = yield* Ref.get(h.membership.incarnation)
    if (!(yield* h.store.claim(name, me, epoch, incarnation, info.sessionId, info.cwd))) {
      yield* Effect.ignore(h.local.close(name))
      return yield* new AgentClosed({ name, reason: "it was moved to another host while it started" })
    }
    return withHost(me)(info)
  }).pipe(Effect.ensuring(Effect.sync(() => h.starting.delete(name))))

/**
 * Waits while an agent placed here is still starting (taken over after a move, say), so that a call in that
 * moment finds it rather than `AgentNotFound`.
 */
export const whenReady = <A, E, R>(h: HostingShape, name: string, call: Effect.Effect<A, E, R>) =>
  Effect.suspend(() =>
    h.starting.has(name)
      ? Effect.zipRight(
        Effect.sleep("50 millis").pipe(Effect.repeat({ while: () => h.starting.has(name) })),
        call
      )
      : call
  )

/** Closes a local agent and frees its name in the cluster. */
export const closeHere = (h: HostingShape, name: string) =>
  h.local.close(name).pipe(
    // Placed here but not running: a reservation whose spawn never finished (its caller died). Freeing it is the close.
    Effect.catchTag("AgentNotFound", (notHere) =>
      Effect.flatMap(h.store.remove(name), (freed) => (freed ? Effect.void : Effect.fail(notHere)))),
    Effect.zipRight(Effect.asVoid(h.store.remove(name)))
  )

const RECENT_CALLS = 10_000

/** Runs a call once: a second delivery of the same `callId` gets the first one's outcome. */
const once = <A, E>(h: HostingShape, callId: string, call: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.suspend(() => {
    const earlier = h.calls.get(callId)
    if (earlier !== undefined) return Deferred.await(earlier as Deferred.Deferred<A, E>)
    const done = Deferred.unsafeMake<A, E>(FiberId.none)
    h.calls.set(callId, done as Deferred.Deferred<unknown, unknown>)
    if (h.calls.size > RECENT_CALLS) h.calls.delete(h.calls.keys().next().value!)
    return Effect.onExit(call, (exit) => Deferred.done(done, exit))
  })

/** The `Agent` and `Host` entities, answered from this host's engine. */
export const entities = Layer.mergeAll(
  Protocol.AgentEntity.toLayer(
    Effect.map(Hosting, (h) => {
      const me = h.membership.settings.host
      // A host that may have been thought dead starts nothing until its lease is renewed.
      const guard = <A, E>(name: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E | HostLost> =>
        Effect.flatMap(
          h.membership.fresh,
          (fresh): Effect.Effect<A, E | HostLost> => (fresh ? effect : Effect.fail(new HostLost({ name, host: me })))
        )
      return Protocol.AgentEntity.of({
        spawn: ({ payload: p }) =>
          once(
            h,
            p.callId,
            guard(p.name, startHere(h, p.name, Protocol.fromWire(p.options as Protocol.WireOptions), p.epoch))
          ),
        ask: ({ payload: p }) =>
          once(
            h,
            p.callId,
            guard(p.name, whenReady(h, p.name, h.local.askResult(p.name, p.text, timeoutOf(p.timeoutMs))))
          ),
        prompt: ({ payload: p }) =>
          once(
            h,
            p.callId,
            guard(p.name, whenReady(h, p.name, h.local.prompt(p.name, p.text, timeoutOf(p.timeoutMs))))
          ),
        wait: ({ payload: p }) => whenReady(h, p.name, h.local.wait(p.name, p.turnId)),
        watch: ({ payload: p }) => whenReady(h, p.name, h.local.watch(p.name, p.turnId)),
        status: ({ payload: p }) => whenReady(h, p.name, h.local.status(p.name)),
        result: ({ payload: p }) => whenReady(h, p.name, h.local.result(p.name, p.turnId)),
        transcript: ({ payload: p }) => whenReady(h, p.name, h.local.transcript(p.name)),
        info: ({ payload: p }) => whenReady(h, p.name, Effect.map(h.local.info(p.name), withHost(me))),
        interrupt: ({ payload: p }) => whenReady(h, p.name, h.local.interrupt(p.name)),
        close: ({ payload: p }) => whenReady(h, p.name, closeHere(h, p.name)),
        unpark: ({ payload: p }) => whenReady(h, p.name, h.local.unpark({ agent: p.name }))
      })
    }),
    { concurrency: "unbounded" }
  ),
  Protocol.HostEntity.toLayer(
    Effect.map(Hosting, (h) =>
      Protocol.HostEntity.of({
        list: () => Effect.map(h.local.list, (infos) => infos.map(withHost(h.membership.settings.host))),
        broadcast: ({ payload: p }) => h.local.broadcast(p.text, timeoutOf(p.timeoutMs)),
        approvals: ({ payload: p }) => h.local.approvals(p.query as ApprovalQuery),
        decide: ({ payload: p }) => h.local.decide(p.id, p.decision as ApprovalDecision),
        runs: ({ payload: p }) =>
          Effect.map(h.local.runs(p.query as RunQuery), (views) =>
            views.map((view) => ({ ...view, host: h.membership.settings.host }))),
        runResult: ({ payload: p }) =>
          h.local.runResult(p.name),
        awaitRun: ({ payload: p }) => h.local.awaitRun(p.name)
      })),
    { concurrency: "unbounded" }
  )
)

// --- housekeeping ---

/** Runs for the life of the node: the lease and what depends on it, and the copying of reports. */
export const housekeeping = Effect.flatMap(Hosting, (h) =>
  Effect.gen(function*() {
    // Starting and stopping agents takes seconds: it runs beside the ticks, so the lease is always renewed on time.
    const background = yield* FiberSet.make()
    const every = Schedule.spaced(tickOf(h.membership.settings))
    yield* Effect.all([
      renew(h).pipe(Effect.repeat(every)),
      tend(h, background).pipe(Effect.repeat(every)),
      copyReports(h)
    ], { concurrency: "unbounded", discard: true })
  }))

/** Renews this process's lease, and reads which hosts are live. */
const renew = (h: HostingShape) =>
  Effect.gen(function*() {
    const { settings } = h.membership
    const me = settings.host
    const incarnation = yield* Ref.get(h.membership.incarnation)
    const renewed = yield* h.store.renew(me, incarnation).pipe(Effect.orElseSucceed(() => false))
    const now = yield* Clock.currentTimeMillis
    if (!renewed) {
      if (now - (yield* Ref.get(h.membership.renewedAt)) >= settings.leaseMs) yield* rejoin(h)
      return
    }
    yield* Ref.set(h.membership.renewedAt, now)
    const live = new Map(
      (yield* h.store.hosts).filter((r) => r.age <= settings.leaseMs).map((r) => [r.host, r.incarnation] as const)
    )
    live.set(me, incarnation)
    yield* SubscriptionRef.set(h.membership.live, { at: now, hosts: live })
  }).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("cluster: renewing the lease failed; it runs again", cause))
  )

/** One tick, while this node surely holds its lease: stop what is not ours, move the dead's agents, take ours. */
const tend = (h: HostingShape, background: FiberSet.FiberSet) =>
  Effect.gen(function*() {
    if (!(yield* h.membership.fresh)) return
    const me = h.membership.settings.host
    const incarnation = yield* Ref.get(h.membership.incarnation)
    // Read now, not from the last renewal: a host that joined since must never look dead.
    const hosts = yield* h.store.hosts
    const live = new Set(hosts.filter((r) => r.age <= h.membership.settings.leaseMs).map((r) => r.host))
    live.add(me)
    const placements = yield* h.store.placements
    yield* fence(h, placements, incarnation, background)
    yield* failover(h, placements, live)
    // Epoch 1 and no incarnation: a spawn in progress, which its caller's call finishes (or undoes).
    yield* takeOver(
      h,
      placements.filter((p) => p.host === me && p.incarnation !== incarnation && p.epoch > 1),
      background
    )
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("cluster: housekeeping failed; it runs again", cause)))

/**
 * The lease lapsed without a renewal (a pause, a partition): the other hosts may have moved our agents already.
 * Stop every one, and come back as a new incarnation, which takes over only what is still placed here.
 */
const rejoin = (h: HostingShape) =>
  Effect.gen(function*() {
    const me = h.membership.settings.host
    const agents = (yield* h.registry.agents).filter((a) => a.lifecycle === "session")
    // Their placements are not freed: whatever is still placed here is taken back by the new incarnation.
    h.agents.clear()
    yield* Effect.forEach(agents, (a) => Effect.ignore(h.registry.close(a.name, `host ${me} lost its lease`)), {
      concurrency: "unbounded",
      discard: true
    })
    const next = randomUUID()
    yield* h.store.join(me, h.membership.address, next)
    yield* Ref.set(h.membership.incarnation, next)
    yield* Ref.set(h.membership.renewedAt, yield* Clock.currentTimeMillis)
    yield* Effect.logWarning(`cluster: host ${me} lost its lease and stopped its agents; it rejoined`)
  })

/** Stops the local copy of every agent whose placement is no longer this process's (moved, or closed elsewhere). */
const fence = (
  h: HostingShape,
  placements: ReadonlyArray<Placement>,
  incarnation: string,
  background: FiberSet.FiberSet
) =>
  Effect.gen(function*() {
    const byName = new Map(placements.map((p) => [p.name, p]))
    const me = h.membership.settings.host
    for (const agent of yield* h.registry.agents) {
      if (agent.lifecycle !== "session" || h.starting.has(agent.name)) continue
      const read = byName.get(agent.name)
      if (read !== undefined && read.host === me && read.incarnation === incarnation) continue
      if (h.stopping.has(agent.name)) continue
      // The snapshot may predate a start that finished since: only the placement as it is now decides.
      const p = Option.getOrUndefined(yield* h.store.placement(agent.name))
      if (p !== undefined && p.host === me && p.incarnation === incarnation) continue
      h.agents.delete(agent.name)
      h.stopping.add(agent.name)
      yield* FiberSet.run(
        background,
        Effect.ignore(h.registry.close(agent.name, p === undefined ? "closed on another host" : `moved to ${p.host}`))
          .pipe(Effect.ensuring(Effect.sync(() => h.stopping.delete(agent.name))))
      )
    }
  })

/** Gives each agent of a dead host to the live host with the fewest agents; the epoch decides between movers. */
const failover = (h: HostingShape, placements: ReadonlyArray<Placement>, live: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const orphans = placements.filter((p) => !live.has(p.host))
    if (orphans.length === 0) return
    const counts = new Map([...live].map((host) => [host, 0]))
    for (const p of placements) if (counts.has(p.host)) counts.set(p.host, counts.get(p.host)! + 1)
    for (const p of orphans) {
      const [to] = [...counts.entries()].sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]))[0]!
      if (yield* h.store.move(p.name, p.host, to, p.epoch)) {
        counts.set(to, counts.get(to)! + 1)
        yield* Effect.logInfo(`cluster: ${p.name} moves from ${p.host}, whose lease lapsed, to ${to}`)
      }
    }
  })

/** Starts here the agents placed on this host that no process of it runs: moved here, or left by an earlier one. */
const takeOver = (h: HostingShape, mine: ReadonlyArray<Placement>, background: FiberSet.FiberSet) =>
  Effect.forEach(mine, (p) => {
    if (h.starting.has(p.name) || h.stopping.has(p.name)) return Effect.void
    h.starting.add(p.name)
    // In the background; the engine admits starts a few at a time.
    return FiberSet.run(
      background,
      takeOne(h, p).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning(`cluster: could not take over ${p.name}`, cause)),
        Effect.ensuring(Effect.sync(() => h.starting.delete(p.name)))
      )
    )
  }, { discard: true })

const takeOne = (h: HostingShape, p: Placement) =>
  Effect.gen(function*() {
    const me = h.membership.settings.host
    if (Option.isSome(yield* Effect.option(h.registry.get(p.name)))) return
    if (p.cwd !== "" && !fs.existsSync(p.cwd)) {
      // A worktree or a checkout on the dead host's disk: the agent is not moved silently without it.
      const reason = `its working directory ${p.cwd} does not exist on host ${me}`
      if (yield* h.store.remove(p.name, p.epoch)) yield* h.localLog.post(p.name, "closed", { reason })
      return
    }
    const options = Protocol.fromWire(p.options as Protocol.WireOptions)
    let resume: string | undefined
    if (p.sessionId !== null) {
      const mirrored = yield* h.store.session(p.name, p.sessionId)
      if (mirrored.text.length > 0) {
        // The conversation goes where this host's CLI looks for it, under the key of the agent's cwd here.
        const dir = SessionMirror.configDir({ ...process.env, ...h.childEnv, ...options.env })
        yield* SessionMirror.writeBack(dir, p.cwd, p.sessionId, mirrored.text).pipe(Effect.orDie)
        resume = p.sessionId
      }
    }
    const info = yield* startHere(h, p.name, { ...options, ...(resume === undefined ? {} : { resume }) }, p.epoch)
    if (resume !== undefined) {
      const mirrored = yield* h.store.session(p.name, resume)
      const entry = h.agents.get(p.name)
      if (entry !== undefined) entry.mirrored = { id: info.sessionId, bytes: mirrored.bytes }
    }
    yield* h.localLog.post(p.name, "moved", {
      from: p.movedFrom ?? me,
      to: me,
      sessionId: info.sessionId,
      resumed: resume !== undefined
    })
  })

/** Copies this host's report entries into the cluster's log, and each finished turn's conversation growth. */
const copyReports = (h: HostingShape) =>
  Effect.gen(function*() {
    const me = h.membership.settings.host
    const wake = yield* h.localLog.subscribe({ capacity: 1 })
    let cursor = 0
    const pass = Effect.gen(function*() {
      while (true) {
        const page = yield* h.localLog.reports({ since: cursor, limit: 1000 })
        if (page.entries.length > 0) {
          yield* h.store.appendReports(me, page.entries)
          for (const entry of page.entries) {
            if (entry.kind === "result" || entry.kind === "error") yield* mirror(h, entry.agent)
            if (entry.kind === "closed") yield* forget(h, entry.agent)
          }
        }
        cursor = page.next
        if (page.entries.length < 1000) return
      }
    })
    yield* pass.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("cluster: copying reports failed; it runs again", cause)),
      Effect.zipRight(Effect.race(Stream.runHead(wake), Effect.sleep(Duration.seconds(1)))),
      Effect.forever
    )
  }).pipe(Effect.scoped)

/** An agent closed here (by request, or for good after crashes): its name is free in the cluster. */
const forget = (h: HostingShape, name: string) =>
  Effect.gen(function*() {
    if (!h.agents.has(name)) return
    h.agents.delete(name)
    const p = yield* h.store.placement(name)
    const incarnation = yield* Ref.get(h.membership.incarnation)
    if (Option.isSome(p) && p.value.host === h.membership.settings.host && p.value.incarnation === incarnation) {
      yield* h.store.remove(name, p.value.epoch)
    }
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`cluster: could not free ${name}`, cause)))

/** Appends what the agent's session file grew by since the last copy. */
const mirror = (h: HostingShape, name: string) =>
  Effect.gen(function*() {
    const entry = h.agents.get(name)
    if (entry === undefined) return
    const agent = yield* Effect.option(h.registry.get(name))
    if (Option.isNone(agent)) return
    const info = yield* agent.value.info
    if (entry.mirrored.id !== info.sessionId) entry.mirrored = { id: info.sessionId, bytes: 0 }
    const dir = SessionMirror.configDir({ ...process.env, ...h.childEnv, ...entry.env })
    const file = yield* SessionMirror.findSessionFile(dir, info.cwd, info.sessionId)
    if (file === undefined) return
    const from = entry.mirrored.bytes
    const growth = yield* SessionMirror.readGrowth(file, from)
    if (growth.text.length === 0) return
    yield* h.store.appendSession(name, info.sessionId, from, growth.text)
    entry.mirrored = { id: info.sessionId, bytes: growth.next }
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`cluster: could not mirror ${name}`, cause)))
