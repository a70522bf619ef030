/**
 * What a host holds for the agents placed on it: its engine below the cluster, the agents it is starting or
 * stopping, how much of each one's conversation is mirrored, and the calls it answered recently. Its methods
 * start and claim an agent, close one, wait while one is still starting, and run a call delivered twice once.
 * The entities (Entities), the lease's housekeeping (Housekeeping) and the copying into the cluster store
 * (Replication) all work on it.
 */
import type { AgentInfo } from "@flotta/core/Agent"
import { AgentOptions, dataOf } from "@flotta/core/AgentOptions"
import { AgentAlreadyExists, AgentClosed, InvalidSpec } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import { Registry } from "@flotta/core/Registry"
import { ReportLog } from "@flotta/core/ReportLog"
import { Context, Deferred, Effect, FiberId, Layer, Ref, Schema } from "effect"
import { ClusterStore } from "./ClusterStore.js"
import { Membership } from "./Membership.js"

/** How much of an agent's session file is in the cluster store. */
export interface Mirrored {
  readonly id: string
  readonly bytes: number
}

export const withHost = (host: string) => (info: AgentInfo): AgentInfo => ({ ...info, host })

const RECENT_CALLS = 10_000

const closeHere = (local: Flotta, store: ClusterStore["Type"], name: string) =>
  local.close(name).pipe(
    // Placed here but not running: a reservation whose spawn never finished (its caller died). Freeing it is the close.
    Effect.catchTag("AgentNotFound", (notHere) =>
      Effect.flatMap(store.remove(name), (freed) => (freed ? Effect.void : Effect.fail(notHere)))),
    Effect.zipRight(Effect.asVoid(store.remove(name)))
  )

const make = (childEnv: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const local = yield* Flotta
    const store = yield* ClusterStore
    const membership = yield* Membership
    const me = membership.settings.host
    const starting = new Set<string>()
    /** Each local agent's own environment (where its CLI keeps its session files), and how much is mirrored. */
    const agents = new Map<string, { readonly env: Readonly<Record<string, string>>; mirrored: Mirrored }>()
    /** Recent calls by id, and how each ended: a call delivered twice runs once. */
    const calls = new Map<string, Deferred.Deferred<unknown, unknown>>()

    const registry = yield* Registry

    /** Keeps a started agent's facts, then claims it at `epoch`; a lost claim (it moved) stops it. */
    const claimStarted = (name: string, options: AgentOptions, epoch: number, info: AgentInfo) =>
      Effect.gen(function*() {
        agents.set(name, { env: options.env ?? {}, mirrored: { id: info.sessionId, bytes: 0 } })
        const incarnation = yield* Ref.get(membership.incarnation)
        if (!(yield* store.claim(name, me, epoch, incarnation, info.sessionId, info.cwd))) {
          yield* Effect.ignore(local.close(name))
          return yield* new AgentClosed({ name, reason: "it was moved to another host while it started" })
        }
        return withHost(me)(info)
      })

    const startHere = Effect.fn("Hosting.startHere")(
      function*(name: string, options: AgentOptions, epoch: number) {
        starting.add(name)
        return yield* claimStarted(name, options, epoch, yield* local.spawn(name, options))
      },
      (effect, name) => Effect.ensuring(effect, Effect.sync(() => starting.delete(name)))
    )

    /**
     * Forks a local agent into a new one here, where the source's session file is: placed in the cluster with
     * the options it runs with (the source's, and those given), then claimed like any start.
     */
    const forkHere = Effect.fn("Hosting.forkHere")(
      function*(source: string, name: string, given: AgentOptions, at: string | undefined) {
        const point = yield* (yield* registry.get(source)).forkPoint(at)
        const merged: AgentOptions = { ...point.options, ...given }
        const wire = yield* Schema.validate(AgentOptions)(dataOf(merged)).pipe(
          Effect.mapError((error) => new InvalidSpec({ path: "options", reason: error.message }))
        )
        if (typeof merged.permission === "function") {
          return yield* new InvalidSpec({
            path: "permission",
            reason: `${source}'s permission is a function, which a placement cannot keep: give the fork one as data`
          })
        }
        if (!(yield* store.place(name, me, wire.cwd ?? "", wire))) return yield* new AgentAlreadyExists({ name })
        starting.add(name)
        const started = registry.spawn(name, merged, undefined, point.origin).pipe(
          Effect.flatMap((agent) => agent.info),
          Effect.flatMap((info) => claimStarted(name, merged, 1, info))
        )
        return yield* started.pipe(Effect.tapError(() => Effect.ignore(store.remove(name, 1))))
      },
      (effect, _source, name) => Effect.ensuring(effect, Effect.sync(() => starting.delete(name)))
    )

    // Not Effect.fn: every call to an agent passes through here, and most find it ready at once.
    const whenReady = <A, E, R>(name: string, call: Effect.Effect<A, E, R>) =>
      Effect.suspend(() =>
        starting.has(name)
          ? Effect.zipRight(
            Effect.sleep("50 millis").pipe(Effect.repeat({ while: () => starting.has(name) })),
            call
          )
          : call
      )

    const once = <A, E>(callId: string, call: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        const earlier = calls.get(callId)
        // Stored under the same callId by the same RPC, so with the same types.
        if (earlier !== undefined) return Deferred.await(earlier as Deferred.Deferred<A, E>)
        const done = Deferred.unsafeMake<A, E>(FiberId.none)
        calls.set(callId, done as Deferred.Deferred<unknown, unknown>)
        if (calls.size > RECENT_CALLS) calls.delete(calls.keys().next().value!)
        return Effect.onExit(call, (exit) => Deferred.done(done, exit))
      })

    return {
      /** The engine below the cluster: this host's own agents. */
      local,
      registry,
      localLog: yield* ReportLog,
      store,
      membership,
      /** Starting or taking over, not claimed yet: the fencing check leaves them alone. */
      starting,
      /** Being stopped here (moved away, or closed elsewhere). */
      stopping: new Set<string>(),
      agents,
      /** The children's environment the engine adds for every agent. */
      childEnv,
      /** Starts an agent placed on this host at `epoch`, then claims it; a lost claim (it moved) stops it. */
      startHere,
      /** Forks a local agent into a new one placed on this host. */
      forkHere,
      /** Closes a local agent and frees its name in the cluster. */
      closeHere: Effect.fn("Hosting.closeHere")((name: string) => closeHere(local, store, name)),
      /**
       * Waits while an agent placed here is still starting (taken over after a move, say), so that a call in
       * that moment finds it rather than `AgentNotFound`.
       */
      whenReady,
      /** Runs a call once: a second delivery of the same `callId` gets the first one's outcome. */
      once
    } as const
  })

export type HostingShape = Effect.Effect.Success<ReturnType<typeof make>>

export class Hosting extends Context.Tag("@flotta/cluster/Hosting")<Hosting, HostingShape>() {
  static layer(childEnv: Readonly<Record<string, string>>) {
    return Layer.effect(Hosting, make(childEnv))
  }
}
