/**
 * A host's housekeeping, every quarter lease for the life of the node: renew the lease and read who is live;
 * then, while the lease is surely held, stop copies no longer placed here (fence), move a dead host's agents
 * to the live host with the fewest (failover, by the one host that claims the loss, which reports `host_lost`),
 * and start what was moved here (take over). A host that could not renew for a whole lease stops its agents and
 * rejoins as a new incarnation. Beside it runs the copying of reports and conversations (Replication).
 */
import { FileSystem } from "@effect/platform/FileSystem"
import { Clock, Effect, FiberSet, Option, Ref, Schedule, SubscriptionRef } from "effect"
import { randomUUID } from "node:crypto"
import * as ClusterEvents from "./ClusterEvents.js"
import type { HostRow, Placement } from "./ClusterStore.js"
import { Hosting } from "./Hosting.js"
import type { HostingShape } from "./Hosting.js"
import { tickOf } from "./Membership.js"
import { copyReports, restoreSession, resumedFrom } from "./Replication.js"

/** Runs for the life of the node: the lease and what depends on it, and the copying of reports. */
export const run = Effect.flatMap(Hosting, (h) =>
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
    yield* failover(h, placements, live, hosts)
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
    const ours = (p: Placement | undefined) => p !== undefined && p.host === me && p.incarnation === incarnation
    for (const agent of yield* h.registry.agents) {
      if (agent.lifecycle !== "session" || h.starting.has(agent.name)) continue
      if (ours(byName.get(agent.name)) || h.stopping.has(agent.name)) continue
      // The snapshot may predate a start that finished since: only the placement as it is now decides.
      const p = Option.getOrUndefined(yield* h.store.placement(agent.name))
      if (ours(p)) continue
      h.agents.delete(agent.name)
      h.stopping.add(agent.name)
      yield* FiberSet.run(
        background,
        Effect.ignore(h.registry.close(agent.name, p === undefined ? "closed on another host" : `moved to ${p.host}`))
          .pipe(Effect.ensuring(Effect.sync(() => h.stopping.delete(agent.name))))
      )
    }
  })

/**
 * Gives each agent of a dead host to the live host with the fewest agents. One live host claims each loss (of a
 * host's incarnation) and moves its agents, reporting `host_lost` once; should the claimant die too, any live host
 * moves what is left. The epoch decides between movers.
 */
const failover = (
  h: HostingShape,
  placements: ReadonlyArray<Placement>,
  live: ReadonlySet<string>,
  hosts: ReadonlyArray<HostRow>
) =>
  Effect.gen(function*() {
    const orphans = placements.filter((p) => !live.has(p.host))
    if (orphans.length === 0) return
    const me = h.membership.settings.host
    const counts = new Map([...live].map((host) => [host, 0]))
    for (const p of placements) if (counts.has(p.host)) counts.set(p.host, counts.get(p.host)! + 1)
    for (const lost of new Set(orphans.map((p) => p.host))) {
      const incarnation = hosts.find((r) => r.host === lost)?.incarnation ?? ""
      const token = `${randomUUID()} ${me}`
      const claimed = yield* h.store.settle(`host_lost ${lost} ${incarnation}`, token)
      const claimant = claimed.slice(claimed.indexOf(" ") + 1)
      if (claimant !== me && live.has(claimant)) continue
      const moved: Array<string> = []
      for (const p of orphans) {
        if (p.host !== lost) continue
        const [to] = [...counts.entries()].sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]))[0]!
        if (yield* h.store.move(p.name, p.host, to, p.epoch)) {
          counts.set(to, counts.get(to)! + 1)
          moved.push(p.name)
          yield* Effect.logInfo(`cluster: ${p.name} moves from ${p.host}, whose lease lapsed, to ${to}`)
        }
      }
      // Reported by the host whose claim was taken just now: once per loss, not again on a later tick.
      if (claimed === token) yield* h.localLog.post("cluster", "host_lost", { host: lost, agents: moved, by: me })
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
    const fs = yield* FileSystem
    if (p.cwd !== "" && !(yield* fs.exists(p.cwd).pipe(Effect.orElseSucceed(() => false)))) {
      // A worktree or a checkout on the dead host's disk: the agent is not moved silently without it.
      const reason = `its working directory ${p.cwd} does not exist on host ${me}`
      if (yield* h.store.remove(p.name, p.epoch)) yield* h.localLog.post(p.name, "closed", { reason })
      return
    }
    const options = p.options
    const resume = yield* restoreSession(h, p.name, p.cwd, p.sessionId, options.env)
    const info = yield* h.startHere(p.name, { ...options, ...(resume === undefined ? {} : { resume }) }, p.epoch)
    if (resume !== undefined) yield* resumedFrom(h, p.name, resume, info.sessionId)
    yield* h.localLog.post(p.name, ClusterEvents.moved, {
      from: p.movedFrom ?? me,
      to: me,
      sessionId: info.sessionId,
      resumed: resume !== undefined
    })
  })
